// The browser lease (rule: leased-browser): leased lazily on the first browser tool call through the operator's lease
// helper, browser calls queued FIFO behind one acquire attempt, every browser result checked against the lease
// generation it ran under (a replaced browser is reported, never passed off as the lease's), and the lease released
// when idle or at shutdown. The local chrome-devtools-mcp is pointed at the lease's local CDP port through Downstreams.

import { isObject } from '../../../lib/json-value.ts';
import type { Logger } from '../../../lib/log.ts';
import { pickFreeLoopbackPort } from '../../../lib/net.ts';
import { redact, redactError } from '../../../lib/redact.ts';
import { probeBrowserIdentity } from './downstream.ts';
import type { Downstreams } from './downstream-process.ts';
import {
  HELPER_EXIT_SOFTWARE,
  HELPER_EXIT_TEMPFAIL,
  HELPER_EXIT_UNAVAILABLE,
  type HelperRun,
  IDLE_RELEASE_BOUND_MS,
  LeaseRecordError,
  parseLeaseRecord,
  runHelper,
  SHUTDOWN_RELEASE_BOUND_MS,
  STATUS_TIMEOUT_MS,
} from './lease-helper.ts';
import type { BrowserCall, Lease, ProxyIo, RpcMessage } from './rpc.ts';

/** Exit 75 (loopback bind race): retries with a fresh port after the first attempt. */
const MAX_BIND_RACE_RETRIES = 3;
const HELPER_MESSAGE_MAX_CHARS = 8_000;

const GUI_NOT_VERIFIED = 'GUI not verified — no browser box available';
const LEASE_REPLACED_TEXT =
  'browser_lease_replaced: the leased browser was replaced; its state (pages, cookies, storage) is lost and the ' +
  'outcome of this call is unknown. Check the browser state (for example with list_pages) instead of blindly ' +
  'retrying; the next browser call leases a fresh browser.';

/** A browser call that cannot run, answered as one MCP tool error. */
class LeaseFailure extends Error {
  readonly code: string;
  readonly content: string[];
  readonly details: Record<string, unknown>;
  constructor(code: string, content: string[], details: Record<string, unknown> = {}) {
    super(content.join('\n'));
    this.code = code;
    this.content = content;
    this.details = details;
  }
}

export interface LeaseManagerOptions {
  /** Operator's lease helper argv; without it every browser call fails closed. */
  leaseCommand?: string[];
  viewport: string;
  appPort?: number;
  /** 0 disables idle release. */
  idleTimeoutMs: number;
  acquireTimeoutMs: number;
  sessionId: string;
  log: Logger;
  io: ProxyIo;
  downstreams: Downstreams;
  /** Aborted at shutdown: stops acquire and status helpers (releases are only bounded). */
  signal: AbortSignal;
}

export class LeaseManager {
  private readonly opts: LeaseManagerOptions;
  private lease?: Lease;
  private readonly queue: BrowserCall[] = [];
  private acquiring?: Promise<void>;
  private releasing?: Promise<void>;
  private inFlight = 0;
  private idleTimer?: NodeJS.Timeout;

  constructor(opts: LeaseManagerOptions) {
    this.opts = opts;
  }

  /** The held lease's local CDP port. */
  get port(): number | undefined {
    return this.lease?.port;
  }

  enqueue(call: BrowserCall): void {
    if (!this.opts.leaseCommand) {
      this.opts.io.replyToolError(
        call.id,
        [GUI_NOT_VERIFIED, 'No --browser_lease_command is configured for this server.'],
        { code: 'browser_unavailable' },
      );
      return;
    }
    this.queue.push(call);
    this.pump();
  }

  /** A cancelled browser call: dropped from the queue (true), or forwarded and no longer awaited (false). */
  cancel(key: string): boolean {
    const queued = this.queue.findIndex((c) => c.key === key);
    if (queued !== -1) {
      this.queue.splice(queued, 1);
      return true;
    }
    if (this.opts.downstreams.forgetBrowserCall(key)) this.settle();
    return false;
  }

  /**
   * Every browser result is checked against the lease it ran under: a result from a lease baton no longer holds, or
   * from a browser whose identity changed, is never passed off as the lease's; a failure asks the helper for status.
   * `msg` is undefined when the downstream died before answering.
   */
  async onBrowserResult(call: BrowserCall, msg: RpcMessage | undefined, raw: Buffer | undefined): Promise<void> {
    try {
      const lease = call.lease!;
      if (this.lease !== lease) {
        this.replyLeaseReplaced(call, msg);
        return;
      }
      const failed = !msg || msg.error !== undefined || (isObject(msg.result) && msg.result.isError === true);
      let browserChanged = false;
      if (!failed) {
        const identity = await probeBrowserIdentity(lease.browserUrl);
        if (identity && lease.browserId && identity !== lease.browserId) browserChanged = true;
        else {
          lease.browserId ??= identity;
          this.opts.io.writeClient(raw!);
          return;
        }
      }
      const status = await this.leaseStatus(lease);
      if (status === HELPER_EXIT_UNAVAILABLE || browserChanged) {
        if (this.lease === lease) this.dropLease();
        this.replyLeaseReplaced(call, msg);
        return;
      }
      // Status 0 (lease fine) or 70/other (unknown): the native error stands as it is.
      if (raw) this.opts.io.writeClient(raw);
      else
        this.opts.io.replyToolError(
          call.id,
          ['chrome-devtools-mcp stopped while this browser call ran; its outcome is unknown.'],
          { code: 'browser_call_interrupted' },
        );
    } finally {
      this.settle();
    }
  }

  rearmIdleTimer(): void {
    this.disarmIdleTimer();
    if (!this.lease || this.opts.idleTimeoutMs <= 0 || this.inFlight > 0 || this.opts.io.shuttingDown()) return;
    this.idleTimer = setTimeout(() => this.releaseIdleLease(), this.opts.idleTimeoutMs);
  }

  /** First half of shutdown: no idle release, no queued call runs. */
  stopAccepting(): void {
    this.disarmIdleTimer();
    this.queue.splice(0);
  }

  /**
   * Second half, after the helpers were aborted: waits for an acquire in flight (a lease it still produced is
   * released too) and returns the releases under way, each bounded.
   */
  async releaseForShutdown(): Promise<Promise<unknown>[]> {
    await this.acquiring?.catch(() => {});
    const work: Promise<unknown>[] = [];
    if (this.releasing) work.push(this.releasing);
    const lease = this.lease;
    this.lease = undefined;
    if (lease) work.push(this.release(lease, 'shutdown', SHUTDOWN_RELEASE_BOUND_MS));
    return work;
  }

  /** FIFO: calls run in arrival order; while a lease is being prepared every call waits on that one attempt. */
  private pump(): void {
    while (!this.acquiring && !this.opts.io.shuttingDown() && this.queue.length) {
      const ds = this.opts.downstreams.live;
      if (this.lease && ds && !ds.dead && ds.ready && ds.port === this.lease.port) {
        const call = this.queue.shift()!;
        call.lease = this.lease;
        this.inFlight++;
        this.disarmIdleTimer();
        this.opts.downstreams.dispatchBrowserCall(ds, call);
        continue;
      }
      this.acquiring = this.prepareBrowser().then(
        () => {
          this.acquiring = undefined;
          this.pump();
        },
        (err: unknown) => {
          this.acquiring = undefined;
          const failure =
            err instanceof LeaseFailure
              ? err
              : new LeaseFailure('browser_lease_failed', [`Could not prepare the browser: ${redactError(err)}`]);
          // Every call that shared this attempt gets its outcome; later calls start a new attempt.
          for (const call of this.queue.splice(0)) {
            this.opts.io.replyToolError(call.id, failure.content, { code: failure.code, ...failure.details });
          }
        },
      );
    }
  }

  /** Ensures a lease and a ready downstream pointed at its port. */
  private async prepareBrowser(): Promise<void> {
    const downstreams = this.opts.downstreams;
    if (this.releasing) await this.releasing;
    if (this.lease) {
      const ds = downstreams.live;
      if (ds && !ds.dead && ds.port === this.lease.port) await ds.readyPromise;
      else await downstreams.restart(this.lease.port);
      return;
    }
    const command = this.opts.leaseCommand!;
    const current = downstreams.live;
    // A downstream that never ran a browser call is already pointed at a reserved port; one that did is replaced.
    let port = current && !current.dead && !current.dirty ? current.port : await pickFreeLoopbackPort();
    for (let attempt = 0; ; attempt++) {
      const ds = downstreams.live;
      if (!ds || ds.dead || ds.dirty || ds.port !== port) await downstreams.restart(port);
      else await ds.readyPromise;
      const args = ['acquire', '--session', this.opts.sessionId, '--local-cdp-port', String(port)];
      args.push('--viewport', this.opts.viewport);
      if (this.opts.appPort !== undefined) args.push('--app-port', String(this.opts.appPort));
      const run = await this.helper(command, args, this.opts.acquireTimeoutMs);
      if (run.code === 0 && !run.timedOut && !run.aborted) {
        if (run.truncated) throw invalidRecord(new LeaseRecordError('output too large'));
        let record: ReturnType<typeof parseLeaseRecord>;
        try {
          record = parseLeaseRecord(run.stdout, port);
        } catch (err) {
          throw invalidRecord(err as Error);
        }
        const lease: Lease = { generation: record.generation, port, browserUrl: record.browserUrl };
        this.lease = lease;
        if (this.opts.io.shuttingDown()) throw new LeaseFailure('browser_shutting_down', ['baton is shutting down']);
        lease.browserId = await probeBrowserIdentity(lease.browserUrl);
        this.opts.log.info('browser lease acquired', { port });
        this.rearmIdleTimer();
        return;
      }
      if (this.opts.io.shuttingDown()) throw new LeaseFailure('browser_shutting_down', ['baton is shutting down']);
      if (run.code === HELPER_EXIT_TEMPFAIL) {
        if (attempt >= MAX_BIND_RACE_RETRIES) {
          throw new LeaseFailure('browser_port_race', [
            `The lease helper reported a loopback port race (exit 75) ${attempt + 1} times in a row; no browser is ` +
              'leased. Free loopback ports on this machine or retry later.',
          ]);
        }
        this.opts.log.info('lease helper lost a loopback bind race; retrying on a new port', { port });
        port = await pickFreeLoopbackPort();
        continue;
      }
      if (run.code === HELPER_EXIT_UNAVAILABLE) {
        const preflight = helperMessage(run);
        throw new LeaseFailure(
          'browser_unavailable',
          preflight ? [GUI_NOT_VERIFIED, preflight] : [GUI_NOT_VERIFIED],
          preflight ? { helperMessage: preflight } : {},
        );
      }
      if (run.code === HELPER_EXIT_SOFTWARE) {
        throw new LeaseFailure('browser_lease_unknown', [
          'The lease helper failed internally (exit 70): whether a browser was leased is unknown. No browser call ' +
            'was made; retrying the call starts a new acquire.',
          ...optional(helperMessage(run)),
        ]);
      }
      throw new LeaseFailure('browser_lease_failed', [
        `The lease helper failed (${describeExit(run)}); no browser call was made.`,
        ...optional(helperMessage(run)),
      ]);
    }
  }

  private replyLeaseReplaced(call: BrowserCall, native: RpcMessage | undefined): void {
    const nativeError = native ? nativeErrorText(native) : [];
    this.opts.io.replyToolError(call.id, [LEASE_REPLACED_TEXT, ...nativeError], {
      code: 'browser_lease_replaced',
      browserReplaced: true,
      stateLost: true,
      outcome: 'unknown',
    });
  }

  private settle(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.rearmIdleTimer();
  }

  /** One status check per lease at a time; concurrent failures share it. */
  private leaseStatus(lease: Lease): Promise<number | null> {
    lease.statusCheck ??= this.helper(
      this.opts.leaseCommand!,
      ['status', '--session', this.opts.sessionId, '--generation', lease.generation],
      STATUS_TIMEOUT_MS,
    )
      .then((run) => (run.timedOut || run.aborted ? null : run.code))
      .finally(() => {
        lease.statusCheck = undefined;
      });
    return lease.statusCheck;
  }

  /** The helper said this generation is gone: forget it without a release (there is nothing left to release). */
  private dropLease(): void {
    this.lease = undefined;
    this.disarmIdleTimer();
    this.opts.log.info('browser lease replaced; the next browser call leases a fresh browser');
  }

  private disarmIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private releaseIdleLease(): void {
    const lease = this.lease;
    if (!lease || this.inFlight > 0 || this.acquiring || this.opts.io.shuttingDown()) return;
    this.lease = undefined;
    this.opts.log.info('browser idle; releasing the lease');
    this.releasing = this.release(lease, 'idle', IDLE_RELEASE_BOUND_MS).finally(() => {
      this.releasing = undefined;
    });
  }

  private async release(lease: Lease, reason: 'idle' | 'shutdown', boundMs: number): Promise<void> {
    const args = ['release', '--session', this.opts.sessionId, '--generation', lease.generation, '--reason', reason];
    // Release is best-effort cost control; it is not aborted by shutdown, only bounded.
    const run = await this.helper(this.opts.leaseCommand!, args, boundMs, false);
    if (run.code !== 0) this.opts.log.warn('lease release did not succeed', { reason, exit: describeExit(run) });
  }

  private helper(command: string[], args: string[], timeoutMs: number, abortable = true): Promise<HelperRun> {
    return runHelper(command, args, {
      timeoutMs,
      signal: abortable ? this.opts.signal : undefined,
      track: (group, running) => this.opts.io.track(group, running),
    });
  }
}

function optional(text: string | undefined): string[] {
  return text ? [text] : [];
}

/** The helper's own explanation (its dev-server preflight error, say), passed on verbatim apart from redaction. */
function helperMessage(run: HelperRun): string | undefined {
  const text = run.stderr.trim() || (run.code !== 0 ? run.stdout.toString('utf8').trim() : '');
  if (!text) return undefined;
  return redact(text.length > HELPER_MESSAGE_MAX_CHARS ? `${text.slice(0, HELPER_MESSAGE_MAX_CHARS)}…` : text);
}

function describeExit(run: HelperRun): string {
  if (run.timedOut) return 'timed out';
  if (run.aborted) return 'stopped by shutdown';
  if (run.signal) return `killed by ${run.signal}`;
  return `exit ${run.code}`;
}

function invalidRecord(err: Error): LeaseFailure {
  return new LeaseFailure('browser_lease_invalid', [`${err.message}. No browser call was made.`]);
}

/** The text of a native error result or JSON-RPC error, kept alongside the enrichment. */
function nativeErrorText(msg: RpcMessage): string[] {
  if (isObject(msg.error)) return [`native error: ${String(msg.error.message ?? 'unknown error')}`];
  if (isObject(msg.result) && msg.result.isError === true && Array.isArray(msg.result.content)) {
    return msg.result.content
      .filter(
        (c): c is { type: 'text'; text: string } => isObject(c) && c.type === 'text' && typeof c.text === 'string',
      )
      .map((c) => `native error: ${c.text}`);
  }
  return [];
}
