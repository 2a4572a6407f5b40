// The curated calls the legacy bridge has in flight on `codex mcp-server`, the client's own and the private ones of
// background jobs: registration for codex-peek, the client call's round (deadlines), progress heartbeats, cancel
// graces, terminal result recovery, and the late native responses still to be dropped once a call was closed locally.
// Each call ends exactly once: `close` removes it, and every path that ends one goes through it.
import type { AgentEvent } from '../../../agents/agent.ts';
import { EventQueue } from '../../../agents/event-queue.ts';
import { runRound } from '../../../core/round.ts';
import type { Logger } from '../../../lib/log.ts';
import { redact } from '../../../lib/redact.ts';
import { progressSender } from '../stdio-server.ts';
import { type JsonRpcId, keyOf } from './legacy-frames.ts';
import type { CallLimits, InFlightEntry, InFlightTurns } from './turns.ts';

/** Set for a job's private call: its events and its end go to the job's turn instead of the client. */
export interface JobSide {
  queue: EventQueue<AgentEvent>;
  /** The job's round asked Codex to stop (a cancel or an expired deadline). */
  cancelRequested: boolean;
  jobIds: { jobId?: string };
  /** Correlated activity of the call, for the job round's idle deadline. */
  onActivity?: () => void;
}

/** One curated call in flight. */
export interface LegacyCall {
  id: JsonRpcId;
  key: string;
  entry: InFlightEntry;
  /** Correlated activity: refreshes the idle deadline of the round the call belongs to. */
  touch: () => void;
  /** Ends the client call's own round (its deadlines); a job's round belongs to the job table. */
  endRound: () => void;
  threadId?: string;
  lastAgentMessage?: string;
  terminalTimer?: NodeJS.Timeout;
  cancelTimer?: NodeJS.Timeout;
  heartbeat?: NodeJS.Timeout;
  lastActivityAt: number;
  lastProgressAt: number;
  progress: { send: (message: string) => void; stop: () => void };
  job?: JobSide;
  /** The thread's commands running when the call started (an earlier turn's): spared when the call's are stopped. */
  commandsBefore?: ReadonlySet<number>;
}

export interface CallMeta {
  cwd?: string;
  cwdInferred: boolean;
  sandbox: string;
  threadId?: string;
}

export interface LegacyCallsDeps {
  inflight: InFlightTurns;
  limits: CallLimits;
  heartbeatMs: number;
  terminalGraceMs: number;
  maxSuppressed: number;
  logger: Logger;
  /** A frame to the client. */
  send(msg: Record<string, unknown>): void;
  /** A line to Codex. */
  toCodex(line: string): void;
  /** Ends the bridge. */
  teardown(reason: string): void;
  /** After a call was given up on: ends the bridge if Codex is stuck inside a frame. */
  watchMidFrame(): void;
  /** Process groups of the commands Codex runs for a thread. */
  threadCommands(threadId: string): Set<number>;
  /** Stops the commands a call Codex was asked to stop left running (never rejects). */
  stopCommands(threadId: string | undefined, spare: ReadonlySet<number> | undefined): Promise<void>;
}

interface Late {
  abandoned: boolean;
  /** Codex was asked to stop the call: when its turn ends, the commands it left running are stopped. */
  stopAsked: boolean;
  threadId?: string;
  jobId?: string;
  commandsBefore?: ReadonlySet<number>;
}

/** Ends a job's turn with `events` (the last one its `end`). */
export function endJob(job: JobSide, ...events: AgentEvent[]): void {
  job.queue.push(...events);
  job.queue.end();
}

export class LegacyCalls {
  private readonly calls = new Map<string, LegacyCall>();
  /** Calls closed locally whose late native response is still to be dropped. */
  private readonly suppressed = new Map<string, Late>();
  private readonly deps: LegacyCallsDeps;

  constructor(deps: LegacyCallsDeps) {
    this.deps = deps;
  }

  get(key: string): LegacyCall | undefined {
    return this.calls.get(key);
  }

  has(call: LegacyCall): boolean {
    return this.calls.get(call.key) === call;
  }

  /** Every call in flight (a snapshot). */
  all(): LegacyCall[] {
    return [...this.calls.values()];
  }

  start(id: JsonRpcId, meta: CallMeta, progressToken?: string | number, job?: JobSide): LegacyCall {
    const { deps } = this;
    const key = keyOf(id);
    const entry = deps.inflight.add({
      ids: job ? job.jobIds : { requestId: key },
      cwd: meta.cwd,
      cwdInferred: meta.cwdInferred,
      sandbox: meta.sandbox,
      threadId: meta.threadId,
    });
    const call: LegacyCall = {
      id,
      key,
      entry,
      threadId: meta.threadId,
      lastActivityAt: Date.now(),
      lastProgressAt: Date.now(),
      progress: progressSender(progressToken, (params) => deps.send({ method: 'notifications/progress', params })),
      touch: job?.onActivity ?? (() => {}),
      endRound: () => {},
      job,
      ...(meta.threadId ? { commandsBefore: deps.threadCommands(meta.threadId) } : {}),
    };
    this.calls.set(key, call);
    if (job) return call;
    // A client call is a round of its own: its deadlines are runRound's; its answer is Codex's own frame, forwarded
    // as is, so the round carries no events and ends when the call closes.
    const closed = new EventQueue<AgentEvent>();
    call.endRound = () => closed.end();
    void runRound({
      idleMs: deps.limits.idleMs,
      hardMs: deps.limits.hardMs,
      start: (_signal, touch) => {
        call.touch = touch;
        return closed;
      },
      onDeadline: (err) => {
        // That one call fails; Codex is asked to stop; its late answer is dropped; the connection stays up.
        deps.toCodex(
          JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason: err.message },
          }),
        );
        deps.send({ id, error: { code: -32001, message: `Codex call timed out: ${err.message}` } });
        this.suppress(call, { abandoned: false, stopAsked: true });
        void deps.stopCommands(call.threadId, call.commandsBefore);
        deps.watchMidFrame();
      },
    });
    if (progressToken !== undefined) {
      call.lastProgressAt = Date.now();
      call.progress.send('Codex: started');
      call.heartbeat = setInterval(() => {
        if (Date.now() - call.lastProgressAt < deps.heartbeatMs) return;
        call.lastProgressAt = Date.now();
        call.progress.send(
          `Codex: still running (last event ${Math.round((Date.now() - call.lastActivityAt) / 1000)} s ago)`,
        );
      }, deps.heartbeatMs);
    }
    return call;
  }

  close(call: LegacyCall): void {
    call.endRound();
    clearTimeout(call.terminalTimer);
    clearTimeout(call.cancelTimer);
    clearInterval(call.heartbeat);
    call.progress.stop();
    this.deps.inflight.remove(call.entry);
    this.calls.delete(call.key);
  }

  /** Closes a call locally; its native response, if it ever comes, is dropped. */
  suppress(call: LegacyCall, how: { abandoned: boolean; stopAsked: boolean }): void {
    this.close(call);
    this.suppressed.set(call.key, {
      ...how,
      threadId: call.threadId,
      jobId: call.job?.jobIds.jobId,
      commandsBefore: call.commandsBefore,
    });
    if (this.suppressed.size >= this.deps.maxSuppressed) {
      this.deps.teardown(
        `${this.suppressed.size} late Codex responses are pending suppression (MAX_SUPPRESSED_CODEX_RESPONSES)`,
      );
    }
  }

  /**
   * A native frame that settles `key`: a response, or Codex's turn_aborted (after which no response follows). True
   * when it settled a call closed locally, whose frame is then dropped.
   */
  settleLate(key: string): boolean {
    const late = this.suppressed.get(key);
    if (!late) return false;
    this.suppressed.delete(key);
    if (late.abandoned) {
      this.deps.logger.warn('codex: an abandoned turn finished', {
        threadId: late.threadId,
        ...(late.jobId ? { jobId: late.jobId } : { requestId: key }),
      });
    }
    // Commands the turn started after the bridge gave up on it.
    if (late.stopAsked) void this.deps.stopCommands(late.threadId, late.commandsBefore);
    return true;
  }

  /** Codex has `cancelGraceMs` to confirm a cancel with turn_aborted; then the call is abandoned. */
  awaitCancel(call: LegacyCall): void {
    call.entry.state = 'canceling';
    call.cancelTimer = setTimeout(() => this.abandon(call), this.deps.limits.cancelGraceMs);
  }

  /** Codex finished the task: if its own response does not follow within the grace, the bridge answers for it. */
  expectResponse(call: LegacyCall, lastAgentMessage: string): void {
    call.lastAgentMessage = lastAgentMessage;
    call.terminalTimer = setTimeout(() => this.recover(call), this.deps.terminalGraceMs);
  }

  private abandon(call: LegacyCall): void {
    this.deps.inflight.abandoned++;
    this.deps.logger.warn('codex: cancel not acknowledged within the grace; turn abandoned', {
      threadId: call.threadId,
      ...(call.job ? { jobId: call.job.jobIds.jobId } : { requestId: call.key }),
    });
    this.suppress(call, { abandoned: true, stopAsked: true });
    this.deps.watchMidFrame();
    // The turn may still run in Codex; what it started is stopped here (rule: cancel-then-stop).
    const stopped = this.deps.stopCommands(call.threadId, call.commandsBefore);
    const job = call.job;
    if (job) void stopped.then(() => endJob(job, { kind: 'end', outcome: 'cancelled', acknowledged: false }));
  }

  private recover(call: LegacyCall): void {
    if (!this.has(call)) return;
    const content = redact(call.lastAgentMessage ?? '');
    this.deps.logger.info('codex: no tools/call response after task completion; answering for Codex', {
      requestId: call.key,
    });
    if (call.job) endJob(call.job, { kind: 'message', text: content }, { kind: 'end', outcome: 'succeeded' });
    else {
      this.deps.send({
        id: call.id,
        result: { content: [{ type: 'text', text: content }], structuredContent: { threadId: call.threadId, content } },
      });
    }
    this.suppress(call, { abandoned: false, stopAsked: false });
  }
}
