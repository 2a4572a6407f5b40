// The task engine: what the faces call to run, continue, cancel and read tasks (rules: task-lifecycle, event-cursor,
// idempotent-runs, paged-results, commentary-only, fail-closed-status, two-deadlines, cancel-then-stop,
// workspace-locks, git-snapshots, deny-and-report, hub-tools, roots-only, crash-durability). Admission is here: a run
// or continue passes the checks of admission.ts, is recorded with its idempotency key, and is handed to the scheduler
// (scheduler.ts), which runs its round (round.ts) and writes its progress through TaskLog (task-log.ts). Reads are
// reads.ts, who sees which task access.ts, crash recovery recovery.ts, the shapes callers read views.ts, and the
// names callers use engine-types.ts.
import type { PermissionDecision } from '../agents/agent.ts';
import { TaskAccess } from './access.ts';
import { Admission, changedDir, newTaskId, payloadHash, queuedEvent } from './admission.ts';
import { Approvals, type WaitingView } from './approvals.ts';
import { defaultMaxRunning, RunCaps } from './caps.ts';
import {
  type AdmittedView,
  cancelOrigin,
  EngineError,
  type EngineOptions,
  InvalidArgumentError,
  now,
  type OverviewView,
  type Reader,
  type RunInput,
} from './engine-types.ts';
import { WorkspaceLocks } from './locks.ts';
import { TaskReads } from './reads.ts';
import { recoverAfterCrash } from './recovery.ts';
import { isRemote } from './remote.ts';
import { Scheduler } from './scheduler.ts';
import type { Store } from './store.ts';
import { assertTransition, isTerminal, type TaskRow } from './task.ts';
import { TaskLog } from './task-log.ts';
import { type UsageTotals, usagePeriod, utcDay } from './usage.ts';
import type { AgentsView, FanInView, ListView, ResultView, StatusView, TaskView, WaitView } from './views.ts';
import { Waiters } from './waiters.ts';

export { newTaskId } from './admission.ts';
export {
  type AdmittedView,
  DEFAULT_EVENT_PAGE,
  EngineError,
  type EngineOptions,
  EVENT_PAGE_TEXT_CODE_POINTS,
  InvalidArgumentError,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  MAX_WAIT_TASKS,
  OPERATOR,
  type OverviewView,
  type Reader,
  type RunInput,
} from './engine-types.ts';
export type { AgentsView, FanInView, ListView, ResultView, StatusView, TaskView, WaitView } from './views.ts';

export class Engine {
  private readonly opts: EngineOptions;
  private readonly store: Store;
  private readonly caps: RunCaps;
  private readonly approvals: Approvals;
  private readonly locks: WorkspaceLocks;
  private readonly waiters: Waiters;
  private readonly log: TaskLog;
  private readonly admission: Admission;
  private readonly access: TaskAccess;
  private readonly scheduler: Scheduler;
  private readonly reads: TaskReads;

  constructor(opts: EngineOptions) {
    this.opts = opts;
    this.store = opts.store;
    this.caps = new RunCaps({
      maxRunning: opts.maxRunning ?? defaultMaxRunning(),
      ...(opts.agentMaxRunning ? { agentMaxRunning: opts.agentMaxRunning } : {}),
    });
    this.locks = new WorkspaceLocks(this.caps);
    this.approvals = new Approvals((taskId, event) => {
      // After the events already received, so the log keeps their order.
      this.log.flushForRead();
      this.store.durableTx(() => this.store.appendEvent(taskId, event));
      this.waiters.wake(taskId);
    });
    this.waiters = new Waiters(opts.newsLingerMs);
    this.log = new TaskLog(opts.store, this.waiters, opts.logger);
    this.admission = new Admission(opts, this.store);
    const { store, locks, approvals, waiters, log, admission } = this;
    const access = new TaskAccess({ store, log, locks, approvals, targetOf: opts.targetOf });
    this.access = access;
    this.scheduler = new Scheduler({ opts, store, locks, approvals, waiters, log, access, admission });
    this.reads = new TaskReads({ opts, store, log, waiters, access, scheduler: this.scheduler });
  }

  // ---------------------------------------------------------------- recovery (rule: crash-durability)

  /** Stops or waits out worker groups left by a crashed daemon and marks unfinished work interrupted. */
  recover(): Promise<{ stoppedGroups: number; interrupted: number }> {
    return recoverAfterCrash(this.store, this.opts);
  }

  // ---------------------------------------------------------------- admission

  async run(caller: string, input: RunInput): Promise<AdmittedView> {
    const agent = this.admission.pickAgent(caller, input.agent);
    this.admission.targetReady(agent);
    // A local cwd is checked in this tick (no await: the task is recorded in the same one); a remote one on its host.
    const target = this.opts.targetOf?.(agent);
    const cwd = isRemote(target)
      ? await this.admission.remoteCwd(target, input.cwd)
      : this.admission.authorisedCwd(input.cwd);
    const isolation = input.isolation ?? 'none';
    const hardMs = this.admission.callerHardMs(input.timeoutSeconds);
    const hash = payloadHash({
      op: 'run',
      agent,
      prompt: input.prompt,
      cwd,
      isolation,
      model: input.model,
      effort: input.effort,
      timeoutSeconds: input.timeoutSeconds,
    });
    const replay = this.replay(caller, input.idempotencyKey, hash);
    if (replay) return this.admitted(replay.id, this.store.synced());
    this.admission.checkDailyBudget(caller);
    const id = newTaskId();
    const synced = this.store.commitThenSync(() => {
      this.store.insertTask({
        id,
        caller,
        agent,
        cwd,
        workdir: cwd,
        isolation,
        model: input.model,
        effort: input.effort,
        now: now(),
      });
      const n = this.store.insertRound(id, input.prompt);
      this.store.putIdempotency(caller, input.idempotencyKey, { payloadHash: hash, taskId: id, round: n });
      this.store.appendEvent(id, queuedEvent(n, input.timeoutSeconds));
    });
    this.scheduler.schedule(id, 1, input.prompt, { workdir: cwd, isolation, agent }, hardMs);
    return this.admitted(id, synced);
  }

  async continue(
    caller: string,
    input: {
      taskId: string;
      prompt: string;
      idempotencyKey: string;
      timeoutSeconds?: number;
      /** The operator continued the task for its caller (the dashboard): its queued event says so. */
      by?: 'operator';
    },
  ): Promise<AdmittedView> {
    // A task on another machine has its dirs checked there first (a round trip): the checks below see the task after.
    const first = this.access.owned(caller, input.taskId);
    if (isRemote(this.opts.targetOf?.(first.agent)) && isTerminal(first.state))
      await this.admission.assertRemoteDirsStill(first);
    const task = this.access.owned(caller, input.taskId);
    const hardMs = this.admission.callerHardMs(input.timeoutSeconds);
    const hash = payloadHash({
      op: 'continue',
      taskId: task.id,
      prompt: input.prompt,
      timeoutSeconds: input.timeoutSeconds,
    });
    const replay = this.replay(caller, input.idempotencyKey, hash);
    if (replay) return this.admitted(replay.id, this.store.synced());
    this.admission.checkDailyBudget(caller);
    if (!isTerminal(task.state) || this.scheduler.activeOf(task.id) !== undefined) {
      throw new EngineError(
        'conflict',
        `task ${task.id} is ${task.state}; wait for the round to finish or cancel it first`,
      );
    }
    if (!this.opts.agents.has(task.agent)) {
      throw new EngineError('invalid', `agent "${task.agent}" is no longer configured`);
    }
    this.admission.targetReady(task.agent);
    // Authorisation is the config's now, not the one the task began under (rule: hub-tools).
    this.admission.assertReachable(caller, task.agent);
    // A root removed since the task began no longer authorises new rounds in it, and a dir that now leads elsewhere
    // is not the task's (rule: roots-only).
    if (!isRemote(this.opts.targetOf?.(task.agent))) {
      this.admission.authorisedCwd(task.cwd);
      const changed = changedDir(task.isolation === 'worktree' ? { ...task, workdir: task.cwd } : task);
      if (changed) throw new EngineError('forbidden', changed);
    }
    let n = 0;
    const synced = this.store.commitThenSync(() => {
      assertTransition(task.state, 'queued');
      n = this.store.insertRound(task.id, input.prompt);
      this.store.setTaskState(task.id, 'queued', now());
      this.store.putIdempotency(caller, input.idempotencyKey, { payloadHash: hash, taskId: task.id, round: n });
      this.store.appendEvent(task.id, queuedEvent(n, input.timeoutSeconds, input.by));
    });
    this.waiters.wake(task.id);
    this.scheduler.schedule(task.id, n, input.prompt, task, hardMs);
    return this.admitted(task.id, synced);
  }

  /**
   * The answer to an admission (rule: crash-durability): once the store has synced the commit (a group commit in the
   * thread pool, shared by admissions in the same moment), the task as it is then, with the cursor of its last event.
   * The round was scheduled at the commit, so a task nothing holds back is usually running by now; a caller that
   * passes nextCursor to agent_wait is answered at the next news, not with the queued and running events it has
   * already seen in this view.
   */
  private async admitted(taskId: string, synced: Promise<void>): Promise<AdmittedView> {
    await synced;
    const task = this.access.mustGet(taskId);
    return { ...this.access.view(task), nextCursor: task.lastSeq };
  }

  cancel(caller: Reader, taskId: string): TaskView {
    const task = this.access.owned(caller, taskId);
    if (!this.scheduler.cancel(task, cancelOrigin(caller))) return this.access.view(task);
    return this.access.view(this.access.mustGet(task.id));
  }

  /**
   * Answers a permission request the task's round waits for (rule: approvals): by the task's own caller (another
   * caller's task is not found) or the operator. A request not pending or a decision not offered changes nothing.
   */
  respond(reader: Reader, taskId: string, requestId: string, decision: PermissionDecision): TaskView {
    const task = this.access.owned(reader, taskId);
    this.approvals.respond(task.id, requestId, decision, cancelOrigin(reader));
    return this.access.readerView(reader, this.access.mustGet(task.id));
  }

  /** The permission request the task's round waits for, if any (rule: approvals); another caller's task is not found. */
  waitingFor(reader: Reader, taskId: string): WaitingView | undefined {
    const task = this.access.owned(reader, taskId);
    return task.state === 'running' ? this.approvals.waitingOf(task.id) : undefined;
  }

  /**
   * Sums per caller and agent over the UTC days `from`..`to` (YYYY-MM-DD, each defaulting to today), every caller's
   * for the operator or one caller's (rule: usage-budgets).
   */
  usageTotals(reader: Reader, from?: string, to?: string): UsageTotals {
    const period = usagePeriod(from, to, utcDay(now()));
    if (typeof period === 'string') throw new InvalidArgumentError(period);
    return { ...period, totals: this.store.usageTotals(period.from, period.to, reader ?? undefined) };
  }

  private replay(caller: string, key: string, hash: string): TaskRow | undefined {
    const rec = this.store.getIdempotency(caller, key);
    if (!rec) return undefined;
    if (rec.payloadHash !== hash) {
      throw new EngineError(
        'conflict',
        `idempotencyKey "${key}" was already used with a different request; use a new key for a new request`,
      );
    }
    return this.access.mustGet(rec.taskId);
  }

  // ---------------------------------------------------------------- reads (reads.ts)

  status(caller: Reader, taskId: string, after?: number, limit?: number, opts?: { messageText?: boolean }): StatusView {
    return this.reads.status(caller, taskId, after, limit, opts);
  }

  wait(caller: Reader, taskId: string, after?: number, timeoutMs?: number, signal?: AbortSignal): Promise<WaitView> {
    return this.reads.wait(caller, taskId, after, timeoutMs, signal);
  }

  waitAny(
    caller: Reader,
    items: readonly { taskId: string; after?: number }[],
    timeoutMs?: number,
    signal?: AbortSignal,
  ): Promise<FanInView> {
    return this.reads.waitAny(caller, items, timeoutMs, signal);
  }

  agentsOf(caller: string): Promise<AgentsView> {
    return this.reads.agentsOf(caller);
  }

  result(caller: Reader, taskId: string, offset?: number, n?: number): ResultView {
    return this.reads.result(caller, taskId, offset, n);
  }

  list(caller: Reader, cursor: string | undefined, limit?: number, order?: 'oldest' | 'newest'): ListView {
    return this.reads.list(caller, cursor, limit, order);
  }

  unfinished(): TaskView[] {
    return this.reads.unfinished();
  }

  overview(filter: string, cursor: string | undefined, limit?: number): OverviewView {
    return this.reads.overview(filter, cursor, limit);
  }

  prompts(taskId: string, maxChars: number): { n: number; text: string; chars: number; by?: 'operator' }[] {
    return this.reads.prompts(taskId, maxChars);
  }

  // ---------------------------------------------------------------- the work as a whole

  /** Rounds scheduled in this process and not yet ended (running, or waiting for their lock); no store read. */
  roundsInFlight(): number {
    return this.scheduler.inFlight();
  }

  /**
   * What `baton health` shows of the work (rule: run-caps): tasks queued and running by the store, rounds waiting for a
   * lock or a slot in this process and how many of them only a cap holds back, and the caps with their counts.
   */
  health(): {
    queueDepth: number;
    running: number;
    queued: number;
    capped: number;
    caps: ReturnType<RunCaps['snapshot']>;
    states: Record<string, number>;
  } {
    const states = this.store.stats();
    const { queued, capped } = this.locks.counts();
    return { queueDepth: states.queued, running: states.running, queued, capped, caps: this.caps.snapshot(), states };
  }

  /** Graceful shutdown: running rounds are stopped and recorded as interrupted (never replayed). */
  async close(): Promise<void> {
    await this.scheduler.close();
    this.log.close();
  }
}
