// The in-memory dispatch registry for send_message_async (rule: dispatch-registry): at most 100 records; settled
// records expire after two hours and may be evicted earlier to admit new work; when all 100 are still working, a new
// send is refused before anything is delivered. Summaries never carry the message, reply, error text or chat id.
import { randomUUID } from 'node:crypto';
import { RetentionTable } from '../../core/retention.ts';
import { Waiters } from '../../core/waiters.ts';
import { redactedError } from '../../lib/redact.ts';
import type { HarnessName } from './allowlist.ts';
import { AttachError } from './errors.ts';
import type { SendReply } from './harness.ts';

export const MAX_DISPATCH_RECORDS = 100;
export const SETTLED_DISPATCH_TTL_MS = 2 * 60 * 60 * 1000;

export type DispatchStatus = 'working' | 'completed' | 'failed';

export interface IDispatchSummary {
  dispatchId: string;
  connectionId: string;
  harness: HarnessName;
  status: DispatchStatus;
  startedAt: string;
  completedAt?: string;
  expiresAt?: string;
}

/** What check_reply shows: the summary plus, once settled, the reply or the (redacted) error. */
export interface DispatchView extends IDispatchSummary {
  chatId: string;
  reply?: SendReply;
  error?: string;
}

export interface DispatchRegistryOptions {
  /** Clock for tests; defaults to Date.now. */
  now?: () => number;
}

interface DispatchRecord {
  dispatchId: string;
  connectionId: string;
  harness: HarnessName;
  chatId: string;
  status: DispatchStatus;
  startedAt: number;
  completedAt?: number;
  reply?: SendReply;
  error?: string;
}

export class DispatchRegistry {
  private readonly records: RetentionTable<DispatchRecord>;
  private readonly waiters = new Waiters();
  private readonly now: () => number;
  private disposed = false;

  constructor(opts: DispatchRegistryOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.records = new RetentionTable<DispatchRecord>({
      maxKept: MAX_DISPATCH_RECORDS,
      retentionMs: SETTLED_DISPATCH_TTL_MS,
      finishedAt: (r) => r.completedAt,
      clock: this.now,
    });
  }

  /**
   * Admits a new dispatch and starts `deliver` only once admitted. Throws, having started nothing, when the registry is
   * disposed or all 100 records are working.
   */
  start(
    target: { connectionId: string; harness: HarnessName; chatId: string },
    deliver: () => Promise<SendReply>,
  ): IDispatchSummary {
    if (this.disposed) throw new AttachError('the dispatch registry is closed');
    if (this.records.admit()) {
      throw new AttachError(
        `all ${MAX_DISPATCH_RECORDS} dispatch records are still working; nothing was sent. Wait for one with check_reply and try again`,
      );
    }
    const record: DispatchRecord = {
      dispatchId: `d-${randomUUID()}`,
      connectionId: target.connectionId,
      harness: target.harness,
      chatId: target.chatId,
      status: 'working',
      startedAt: this.now(),
    };
    this.records.add(record.dispatchId, record);
    let delivery: Promise<SendReply>;
    try {
      delivery = deliver();
    } catch (err) {
      delivery = Promise.reject(err);
    }
    delivery.then(
      (reply) => this.settle(record, 'completed', { reply }),
      (err) => this.settle(record, 'failed', { error: redactedError(err).message }),
    );
    return summarize(record);
  }

  /**
   * The current view of a dispatch, waiting up to `waitMs` for it to settle. Aborting `signal` ends only this wait.
   * When `connectionId` is given it must match the dispatch's.
   */
  async check(dispatchId: string, opts: { connectionId?: string; waitMs?: number; signal?: AbortSignal } = {}) {
    let record = this.find(dispatchId, opts.connectionId);
    if (record.status === 'working' && (opts.waitMs ?? 0) > 0) {
      await this.waiters.wait(dispatchId, opts.waitMs ?? 0, opts.signal);
      record = this.find(dispatchId, opts.connectionId);
    }
    return view(record);
  }

  /** One summary per record, oldest first; expired records are pruned first. Snapshots the caller may keep. */
  list(): IDispatchSummary[] {
    return this.records
      .values()
      .sort((a, b) => a.startedAt - b.startedAt)
      .map(summarize);
  }

  /** Forgets every record and wakes every waiter; the registry then admits nothing and lists nothing. */
  dispose(): void {
    this.disposed = true;
    const ids = this.records.clear();
    for (const id of ids) this.waiters.wake(id);
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  private find(dispatchId: string, connectionId: string | undefined): DispatchRecord {
    const record = this.records.get(dispatchId);
    if (!record || (connectionId !== undefined && record.connectionId !== connectionId))
      throw new AttachError(
        `unknown dispatchId "${String(dispatchId).slice(0, 80)}"${connectionId !== undefined ? ' for this connection' : ''}; it may have expired (settled replies are kept for 2 hours)`,
      );
    return record;
  }

  private settle(
    record: DispatchRecord,
    status: 'completed' | 'failed',
    outcome: { reply?: SendReply; error?: string },
  ) {
    record.status = status;
    record.completedAt = this.now();
    record.reply = outcome.reply;
    record.error = outcome.error;
    this.waiters.wake(record.dispatchId);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function summarize(r: DispatchRecord): IDispatchSummary {
  const s: IDispatchSummary = {
    dispatchId: r.dispatchId,
    connectionId: r.connectionId,
    harness: r.harness,
    status: r.status,
    startedAt: iso(r.startedAt),
  };
  if (r.completedAt !== undefined) {
    s.completedAt = iso(r.completedAt);
    s.expiresAt = iso(r.completedAt + SETTLED_DISPATCH_TTL_MS);
  }
  return s;
}

function view(r: DispatchRecord): DispatchView {
  const v: DispatchView = { ...summarize(r), chatId: r.chatId };
  if (r.reply) v.reply = { ...r.reply };
  if (r.error !== undefined) v.error = r.error;
  return v;
}
