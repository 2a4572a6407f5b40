// The task engine: admission, idempotency, scheduling under workspace locks, cancellation, and reads with cursors and
// long-poll (rules: task-lifecycle, event-cursor, idempotent-runs, paged-results, commentary-only, fail-closed-status,
// two-deadlines, cancel-then-stop, workspace-locks, git-snapshots, deny-and-report, hub-tools, roots-only,
// crash-durability). A round runs through runRound (round.ts); its progress is written by TaskLog (task-log.ts); crash
// recovery is recovery.ts; the shapes callers read are views.ts.
import { createHash, randomBytes } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import type { Agent, AgentProbe, AgentSession, PermissionDecision, Sandbox } from '../agents/agent.ts';
import { probeAgent } from '../agents/probe.ts';
import type { ExecutionTarget } from '../agents/targets/target.ts';
import { cutCodePoints } from '../lib/chars.ts';
import { BatonError, type ErrorCode } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import { isWithin, realish } from '../lib/paths.ts';
import { stopGroup } from '../lib/process-group.ts';
import { redact, redactDeep, redactError } from '../lib/redact.ts';
import { Approvals, DEFAULT_APPROVAL_TIMEOUT_MS } from './approvals.ts';
import { defaultMaxRunning, RunCaps } from './caps.ts';
import { findWorkTree, type GitSnapshot, snapshot } from './git.ts';
import { type LockScope, WorkspaceLocks } from './locks.ts';
import { pageText, RESULT_PAGE_CODE_POINTS } from './paging.ts';
import { leaderStartTime, probeGroupRecorder, recoverAfterCrash } from './recovery.ts';
import { type EndEvent, runRound } from './round.ts';
import { SnapshotRunners } from './snapshot-runners.ts';
import { isDiskFull, type Store } from './store.ts';
import { assertTransition, type Isolation, isTerminal, type NewTaskEvent, type TaskRow } from './task.ts';
import { MESSAGE_EVENT_CODE_POINTS, type RoundEnd, settledLength, TaskLog } from './task-log.ts';
import {
  addUsage,
  type Budget,
  dailyRefusal,
  RoundUsage,
  roundOverBudget,
  type Usage,
  type UsageTotals,
  usagePeriod,
  utcDay,
} from './usage.ts';
import {
  type AgentsView,
  type FanInView,
  type ListView,
  type ResultView,
  roundViews,
  type StatusView,
  type TaskView,
  taskView,
  type WaitView,
} from './views.ts';
import { Waiters } from './waiters.ts';
import { createWorktree, defaultWorktreesDir, moveOldWorktree } from './worktrees.ts';

export type { AgentsView, FanInView, ListView, ResultView, StatusView, TaskView, WaitView } from './views.ts';

/** agent_wait never blocks longer than this (rule: hub-tools). */
export const MAX_WAIT_MS = 25_000;
export const DEFAULT_EVENT_PAGE = 100;
export const MAX_EVENT_PAGE = 500;
export const DEFAULT_LIST_PAGE = 20;
export const MAX_LIST_PAGE = 100;
/** agent_wait watches at most this many tasks at once (rule: hub-tools). */
export const MAX_WAIT_TASKS = 16;
/**
 * Event text one page carries at most, in code points (rule: event-pages): one full `message` event
 * (MESSAGE_EVENT_CODE_POINTS), so reading from cursor 0 on a task that streamed 10 MiB costs about what a page of a
 * short task's events does, and the round's 131,072 streamed code points take 16 pages. A page ends before the event
 * that would pass it (hasMore: true); an event longer than the budget still comes alone, so a cursor always advances.
 */
export const EVENT_PAGE_TEXT_CODE_POINTS = MESSAGE_EVENT_CODE_POINTS;
/** Events per ready task in one agent_wait over several tasks: 16 full pages of message text would be megabytes. */
const FAN_IN_EVENT_PAGE = 25;
/** What agent_agents reports of an agent is probed at most this often (probes spawn the agent's binary). */
const AGENT_PROBE_TTL_MS = 60_000;
/** How often the end of a round that could not be written (a full disk) is retried. */
const FINISH_RETRY_MS = 1_000;
/** How much of each task's first prompt the dashboard's list shows and filters on. */
const OVERVIEW_PROMPT_CHARS = 200;
/** Shown prompts are read this much longer than shown, so a credential at the cut is still recognised whole. */
const PROMPT_REDACT_MARGIN = 512;

/**
 * A prompt as the operator is shown it (rule: no-secrets-out): the store keeps the caller's words whole (the agent
 * needs them), but a page never shows a credential quoted in them.
 */
function shownPrompt(text: string, maxChars: number): string {
  return cutCodePoints(redact(text), maxChars);
}

/** The dashboard's list: the operator's task views, each with the start of its first prompt. */
export interface OverviewView {
  tasks: (TaskView & { promptStart: string })[];
  nextCursor: string | null;
}
/**
 * Who reads or cancels a task: a caller name (MCP, sees only its own tasks) or `OPERATOR` (the control endpoint and
 * the dashboard, authenticated by the control token, see every caller's tasks with a `caller` field).
 */
export const OPERATOR = null;
export type Reader = string | typeof OPERATOR;
/** Recorded on `cancel_requested` events (`by`) and in the round's error, so an operator's cancel reads as one. */
export type CancelOrigin = 'operator' | 'caller';
const cancelOrigin = (reader: Reader): CancelOrigin => (reader === OPERATOR ? 'operator' : 'caller');

export type EngineErrorCode = Extract<ErrorCode, 'not_found' | 'invalid' | 'invalid_params' | 'conflict' | 'forbidden'>;

/** What agent_run and agent_continue answer: the task, and the cursor of its last event (pass it to agent_wait). */
export type AdmittedView = TaskView & { nextCursor: number };

/** What the engine refuses a request with (lib/errors.ts: the faces translate it). */
export class EngineError extends BatonError<EngineErrorCode> {
  constructor(code: EngineErrorCode, message: string) {
    super(code, message);
    this.name = 'EngineError';
  }
}

/**
 * A bad argument the schema could not see (a cursor that is not one of this reader's): faces answer -32602. The message
 * starts with the argument's name.
 */
export class InvalidArgumentError extends EngineError {
  constructor(message: string) {
    super('invalid_params', message);
    this.name = 'InvalidArgumentError';
  }
}

export interface EngineOptions {
  store: Store;
  agents: ReadonlyMap<string, Agent>;
  /** Which agents each caller may reach; a caller not listed reaches none. */
  reachable: (caller: string) => readonly string[];
  /** Authorised roots; a function when they can change while the engine runs (the hub reloads its config). */
  roots: readonly string[] | (() => readonly string[]);
  stateDir: string;
  /** Dirs no cwd may lie in whatever the roots say: baton's config, snippets and state (the state dir always is). */
  privateDirs?: readonly string[];
  logger: Logger;
  /** Idle deadline per round (0 = none) and hard deadline (0 = none), set by the operator (rule: two-deadlines). */
  idleTimeoutMs: number;
  hardTimeoutMs: number;
  /** How long a cancelled agent gets to stop by itself before its process group is stopped (rule: cancel-then-stop). */
  cancelGraceMs: number;
  /** Deadline of one agent probe for agent_agents (the operator's `limits.probeTimeoutMs`). */
  probeTimeoutMs?: number;
  sandbox?: Sandbox;
  /** How long a waiting reader lingers after non-lifecycle news (rule: event-cursor); NEWS_LINGER_MS unless set. */
  newsLingerMs?: number;
  /** The execution target each agent runs on (docs/targets.md); none: every agent runs unfenced on this machine. */
  targetOf?: (agent: string) => ExecutionTarget | undefined;
  /** Rounds running at once hub-wide (rule: run-caps); defaultMaxRunning() unless set. */
  maxRunning?: number;
  /** Rounds running at once per agent, for the agents that set a cap. */
  agentMaxRunning?: Readonly<Record<string, number>>;
  /** The budgets of a caller (rule: usage-budgets); none unless set. */
  budgetOf?: (caller: string) => Budget;
  /** Where worktree-isolated tasks get their worktrees (rule: worktrees-outside); beside baton's dirs unless set. */
  worktreesDir?: string;
  /** The approval policy for a caller and agent (rule: approvals); `deny` unless set. */
  approvalPolicy?: (caller: string, agent: string) => 'ask' | 'deny';
  /** How long a parked permission request waits before it is denied as timed out; DEFAULT_APPROVAL_TIMEOUT_MS unless set. */
  approvalTimeoutMs?: number;
}

export interface RunInput {
  agent?: string;
  prompt: string;
  cwd: string;
  idempotencyKey: string;
  isolation?: Isolation;
  model?: string;
  effort?: string;
  /** The caller's own hard deadline for the round, at most the operator's (rule: two-deadlines). */
  timeoutSeconds?: number;
}

interface ActiveRound {
  round: number;
  controller: AbortController;
  cancelRequested: boolean;
  /** Who asked for the cancel: the task's own caller over MCP, or the operator (CLI, dashboard). */
  cancelledBy?: CancelOrigin;
  /** The per-round budget the round passed, in words, when that is what stopped it (rule: usage-budgets). */
  overBudget?: string;
  session?: AgentSession;
  done: Promise<void>;
  /** The caller's hard deadline (ms) when it chose one shorter than the operator's. */
  hardMs?: number;
  /** The answer text streamed so far, for a partial agent_result (unredacted, like the round's own copy). */
  text: string;
  /** The round's prompt as admitted (and stored), sent to the agent when the round starts. */
  prompt: string;
  /** What the agent reported of tokens and cost this round, once it runs (rule: usage-budgets). */
  usage?: RoundUsage;
}

const now = () => new Date().toISOString();

/** A task id carries this many random bytes; they are drawn for this many ids at a time (one call into the RNG). */
const TASK_ID_BYTES = 9;
const TASK_IDS_PER_DRAW = 64;
let taskIdBytes = Buffer.alloc(0);
let taskIdAt = 0;

export function newTaskId(): string {
  if (taskIdAt + TASK_ID_BYTES > taskIdBytes.length) {
    taskIdBytes = randomBytes(TASK_ID_BYTES * TASK_IDS_PER_DRAW);
    taskIdAt = 0;
  }
  const id = `t-${taskIdBytes.toString('base64url', taskIdAt, taskIdAt + TASK_ID_BYTES)}`;
  taskIdAt += TASK_ID_BYTES;
  return id;
}

export class Engine {
  private readonly opts: EngineOptions;
  private readonly store: Store;
  private readonly caps: RunCaps;
  private readonly approvals: Approvals;
  private readonly locks: WorkspaceLocks;
  private readonly waiters: Waiters;
  private readonly log: TaskLog;
  private readonly active = new Map<string, ActiveRound>();
  private readonly privateDirs: string[];
  /** Admissions take their lock queue positions one after another through this chain (see schedule). */
  private admissions: Promise<unknown> = Promise.resolve();
  private shuttingDown = false;
  /** Recent agent probes for agent_agents, by agent name. */
  private readonly probes = new Map<string, { at: number; probe: Promise<AgentProbe> }>();
  /**
   * A round's after-snapshot, kept by its workdir only until the macrotask that released its lock is over: a round in
   * the same dir granted the lock in that moment (it was queued behind) takes it as its before-snapshot instead of
   * running git again. Nothing ran in that dir in between (the lock), and no time passed for anyone to edit it.
   */
  private readonly handoff = new Map<string, GitSnapshot>();
  /** The shells that run snapshot gits for this engine, so the daemon does not fork per snapshot. */
  private readonly snapshots: SnapshotRunners;
  private readonly worktreesDir: string;

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
    this.privateDirs = [opts.stateDir, ...(opts.privateDirs ?? [])].map(realish);
    this.snapshots = new SnapshotRunners({ parentDir: opts.stateDir });
    this.worktreesDir = realish(opts.worktreesDir ?? defaultWorktreesDir(opts.stateDir, this.privateDirs));
  }

  /** The configured roots, as they are now (the hub's config can change while it runs). */
  private configuredRoots(): readonly string[] {
    return typeof this.opts.roots === 'function' ? this.opts.roots() : this.opts.roots;
  }

  // ---------------------------------------------------------------- recovery (rule: crash-durability)

  /** Stops or waits out worker groups left by a crashed daemon and marks unfinished work interrupted. */
  recover(): Promise<{ stoppedGroups: number; interrupted: number }> {
    return recoverAfterCrash(this.store, this.opts);
  }

  // ---------------------------------------------------------------- admission

  async run(caller: string, input: RunInput): Promise<AdmittedView> {
    const agent = this.pickAgent(caller, input.agent);
    this.targetReady(agent);
    const cwd = this.authorisedCwd(input.cwd);
    const isolation = input.isolation ?? 'none';
    const hardMs = this.callerHardMs(input.timeoutSeconds);
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
    this.checkDailyBudget(caller);
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
    this.schedule(id, 1, input.prompt, { workdir: cwd, isolation, agent }, hardMs);
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
    const task = this.owned(caller, input.taskId);
    const hardMs = this.callerHardMs(input.timeoutSeconds);
    const hash = payloadHash({
      op: 'continue',
      taskId: task.id,
      prompt: input.prompt,
      timeoutSeconds: input.timeoutSeconds,
    });
    const replay = this.replay(caller, input.idempotencyKey, hash);
    if (replay) return this.admitted(replay.id, this.store.synced());
    this.checkDailyBudget(caller);
    if (!isTerminal(task.state) || this.active.has(task.id)) {
      throw new EngineError(
        'conflict',
        `task ${task.id} is ${task.state}; wait for the round to finish or cancel it first`,
      );
    }
    if (!this.opts.agents.has(task.agent)) {
      throw new EngineError('invalid', `agent "${task.agent}" is no longer configured`);
    }
    this.targetReady(task.agent);
    // Authorisation is the config's now, not the one the task began under (rule: hub-tools).
    this.assertReachable(caller, task.agent);
    // A root removed since the task began no longer authorises new rounds in it, and a dir that now leads elsewhere
    // is not the task's (rule: roots-only).
    this.authorisedCwd(task.cwd);
    const changed = changedDir(task.isolation === 'worktree' ? { ...task, workdir: task.cwd } : task);
    if (changed) throw new EngineError('forbidden', changed);
    let n = 0;
    const synced = this.store.commitThenSync(() => {
      assertTransition(task.state, 'queued');
      n = this.store.insertRound(task.id, input.prompt);
      this.store.setTaskState(task.id, 'queued', now());
      this.store.putIdempotency(caller, input.idempotencyKey, { payloadHash: hash, taskId: task.id, round: n });
      this.store.appendEvent(task.id, queuedEvent(n, input.timeoutSeconds, input.by));
    });
    this.waiters.wake(task.id);
    this.schedule(task.id, n, input.prompt, task, hardMs);
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
    const task = this.mustGet(taskId);
    return { ...this.view(task), nextCursor: task.lastSeq };
  }

  cancel(caller: Reader, taskId: string): TaskView {
    const task = this.owned(caller, taskId);
    const active = this.active.get(task.id);
    if (isTerminal(task.state) || !active) return this.view(task);
    if (active.cancelRequested) return this.view(task);
    active.cancelRequested = true;
    active.cancelledBy = cancelOrigin(caller);
    if (task.state === 'queued') {
      // Never started: nothing to stop; aborting withdraws it from the lock queue.
      this.log.finishRound(
        task.id,
        active.round,
        { state: 'cancelled', error: `cancelled by the ${active.cancelledBy} before it started` },
        undefined,
        { durable: true },
      );
      active.controller.abort(new Error('cancelled'));
      return this.view(this.mustGet(task.id));
    }
    this.store.durableTx(() =>
      this.store.appendEvent(task.id, {
        time: now(),
        round: active.round,
        kind: 'cancel_requested',
        by: active.cancelledBy,
      }),
    );
    this.waiters.wake(task.id);
    active.controller.abort(new Error('cancelled'));
    return this.view(this.mustGet(task.id));
  }

  // ---------------------------------------------------------------- reads

  /**
   * A glance at a task (rule: event-pages): its rounds and a page of events whose `message` events come without their
   * text (`chars` instead; agent_wait carries the text, agent_result the answer). `messageText` is for the operator's
   * dashboard, which shows the text like a live stream would.
   */
  status(
    caller: Reader,
    taskId: string,
    after = 0,
    limit = DEFAULT_EVENT_PAGE,
    opts: { messageText?: boolean } = {},
  ): StatusView {
    const task = this.owned(caller, taskId);
    const { events, hasMore } = this.store.eventPage(
      task.id,
      after,
      limit,
      EVENT_PAGE_TEXT_CODE_POINTS,
      opts.messageText ?? false,
    );
    return {
      ...this.readerView(caller, task),
      rounds: roundViews(this.store, task.id),
      events,
      nextCursor: events.length ? events[events.length - 1]!.seq : after,
      hasMore,
    };
  }

  /**
   * Long-poll (rule: event-cursor): returns at once when events exist past `after` or the task is terminal, else waits.
   */
  async wait(
    caller: Reader,
    taskId: string,
    after = 0,
    timeoutMs = MAX_WAIT_MS,
    signal?: AbortSignal,
  ): Promise<WaitView> {
    const bound = Math.min(Math.max(0, timeoutMs), MAX_WAIT_MS);
    let task = this.owned(caller, taskId);
    let timedOut = false;
    if (task.lastSeq <= after && !isTerminal(task.state)) {
      timedOut = !(await this.waiters.wait(task.id, bound, signal));
      task = this.mustGet(task.id);
    }
    const { events, hasMore } = this.store.eventPage(
      task.id,
      after,
      DEFAULT_EVENT_PAGE,
      EVENT_PAGE_TEXT_CODE_POINTS,
      true,
    );
    return {
      ...this.readerView(caller, task),
      events,
      nextCursor: events.length ? events[events.length - 1]!.seq : after,
      hasMore,
      timedOut: timedOut && events.length === 0,
    };
  }

  /**
   * Fan-in long-poll (rule: hub-tools): waits until any of `items` has events after its own cursor, or every one of them is
   * terminal, and says which are ready. Each task is checked like agent_wait's single form checks one (a task that is
   * not the reader's is not found); one page of events is returned for each ready task.
   */
  async waitAny(
    caller: Reader,
    items: readonly { taskId: string; after?: number }[],
    timeoutMs = MAX_WAIT_MS,
    signal?: AbortSignal,
  ): Promise<FanInView> {
    if (items.length < 1 || items.length > MAX_WAIT_TASKS)
      throw new InvalidArgumentError(`tasks: give between 1 and ${MAX_WAIT_TASKS} tasks`);
    const seen = new Set<string>();
    for (const { taskId } of items) {
      if (seen.has(taskId)) throw new InvalidArgumentError(`tasks: task ${taskId} is listed twice`);
      seen.add(taskId);
    }
    const bound = Math.min(Math.max(0, timeoutMs), MAX_WAIT_MS);
    let tasks = items.map((i) => this.owned(caller, i.taskId));
    const ready = () => tasks.filter((t, i) => t.lastSeq > (items[i]!.after ?? 0));
    if (!ready().length && !tasks.every((t) => isTerminal(t.state))) {
      await this.waiters.waitAny(
        tasks.map((t) => t.id),
        bound,
        signal,
      );
      this.log.flushForRead();
      tasks = tasks.map((t) => this.mustGet(t.id));
    }
    const readyIds = new Set(ready().map((t) => t.id));
    return {
      ready: [...readyIds],
      timedOut: readyIds.size === 0 && !tasks.every((t) => isTerminal(t.state)),
      tasks: tasks.map((task, i) => {
        const after = items[i]!.after ?? 0;
        const { events, hasMore } = readyIds.has(task.id)
          ? this.store.eventPage(task.id, after, FAN_IN_EVENT_PAGE, EVENT_PAGE_TEXT_CODE_POINTS, true)
          : { events: [], hasMore: false };
        return {
          ...this.readerView(caller, task),
          ready: readyIds.has(task.id),
          events,
          nextCursor: events.length ? events[events.length - 1]!.seq : after,
          hasMore,
        };
      }),
    };
  }

  /**
   * What this caller may reach (rules: hub-tools, free-probes): each agent's kind, and — from a probe that spends no
   * inference, reused for AGENT_PROBE_TTL_MS — whether it is installed, its version, login state, and the models and
   * efforts it offers where it says so. A missing binary is an entry with `available: false`, not an error.
   */
  async agentsOf(caller: string): Promise<AgentsView> {
    const names = this.opts.reachable(caller);
    const agents = await Promise.all(
      names.map(async (name) => {
        const agent = this.opts.agents.get(name);
        if (!agent) return { name, kind: 'unknown', available: false, detail: 'not configured on this hub' };
        const { binary: _binary, ...probe } = await this.probeOf(agent);
        return { ...probe, target: this.opts.targetOf?.(name)?.name ?? 'local' };
      }),
    );
    return { agents };
  }

  private probeOf(agent: Agent): Promise<AgentProbe> {
    const cached = this.probes.get(agent.name);
    if (cached && Date.now() - cached.at < AGENT_PROBE_TTL_MS) return cached.probe;
    const probe = probeAgent(agent, {
      catalog: true,
      ...(this.opts.probeTimeoutMs ? { timeoutMs: this.opts.probeTimeoutMs } : {}),
      ...probeGroupRecorder(this.store, this.opts.logger),
      // What an agent prints about itself is agent text: redacted once, here.
    }).then((p) => redactDeep(p) as AgentProbe);
    this.probes.set(agent.name, { at: Date.now(), probe });
    return probe;
  }

  /** A page of a round's answer: the latest round's unless `n` names an earlier one (an MCP task per round). */
  result(caller: Reader, taskId: string, offset = 0, n?: number): ResultView {
    const task = this.owned(caller, taskId);
    const latest = n === undefined || n === task.rounds;
    const round = this.store.roundSummary(task.id, n ?? task.rounds);
    const active = this.active.get(task.id);
    if (latest && task.state === 'running' && active?.round === task.rounds) {
      // The answer so far (rule: live-text), settled the way live `message` events are, so a credential still being
      // streamed never shows in part; redacted at read, like the final result is once at the end.
      const settled = active.text.slice(0, settledLength(active.text));
      return {
        taskId: task.id,
        state: task.state,
        round: task.rounds,
        available: true,
        partial: true,
        ...pageText(redact(settled), offset, RESULT_PAGE_CODE_POINTS),
      };
    }
    if ((latest && !isTerminal(task.state)) || !round) {
      return { taskId: task.id, state: task.state, round: n ?? task.rounds, available: false };
    }
    const page = this.store.resultPage(task.id, round.n, offset, RESULT_PAGE_CODE_POINTS);
    return {
      taskId: task.id,
      state: latest ? task.state : round.state,
      round: round.n,
      available: true,
      ...(round.error ? { error: round.error } : {}),
      ...page,
    };
  }

  /**
   * A page of the reader's tasks. The cursor is the id of the last task of the previous page, resolved only among the
   * reader's own tasks: it carries no position in the hub-wide order, so it tells a caller nothing about other callers'
   * tasks, and another caller's task id is refused exactly like a made-up one. `order` 'newest' pages from the most
   * recently created task back (the operator's list).
   */
  list(
    caller: Reader,
    cursor: string | undefined,
    limit = DEFAULT_LIST_PAGE,
    order: 'oldest' | 'newest' = 'oldest',
  ): ListView {
    let afterOrder: number | null = null;
    if (cursor !== undefined) {
      const order = this.store.listOrderOf(caller, cursor);
      if (order === undefined) {
        throw new InvalidArgumentError(
          'cursor is not one this list returned (or its task was removed); list again without a cursor',
        );
      }
      afterOrder = order;
    }
    this.log.flushForRead();
    const { tasks } = this.store.listTasks(caller, afterOrder, limit + 1, order);
    const more = tasks.length > limit;
    const page = tasks.slice(0, limit);
    return {
      tasks: page.map((t) => this.readerView(caller, t)),
      nextCursor: more ? page[page.length - 1]!.id : null,
    };
  }

  /** Every task with a round queued or running, oldest first, as the operator sees it (what a stop would interrupt). */
  unfinished(): TaskView[] {
    return this.store.tasksInStates(['queued', 'running']).map((t) => this.readerView(OPERATOR, t));
  }

  /**
   * The dashboard's list (rule: dashboard): every caller's tasks, newest first, each with the start of its first prompt;
   * `filter` keeps those whose id, caller, agent, state, cwd or prompt start contains it (any case). The cursor is the id
   * of the last task of the previous page.
   */
  overview(filter: string, cursor: string | undefined, limit = DEFAULT_LIST_PAGE): OverviewView {
    let beforeOrder = Number.MAX_SAFE_INTEGER;
    if (cursor !== undefined) {
      const order = this.store.listOrderOf(OPERATOR, cursor);
      if (order === undefined) throw new InvalidArgumentError('cursor is not one this list returned; list again');
      beforeOrder = order;
    }
    this.log.flushForRead();
    const rows = this.store.overviewTasks(
      filter.toLowerCase(),
      beforeOrder,
      limit + 1,
      OVERVIEW_PROMPT_CHARS + PROMPT_REDACT_MARGIN,
    );
    const page = rows.slice(0, limit);
    return {
      tasks: page.map((r) => ({
        ...this.readerView(OPERATOR, r.task),
        promptStart: shownPrompt(r.promptStart, OVERVIEW_PROMPT_CHARS),
      })),
      nextCursor: rows.length > limit ? page[page.length - 1]!.task.id : null,
    };
  }

  /** Each round's prompt for the operator, cut to `maxChars` code points, with its full length. */
  prompts(taskId: string, maxChars: number): { n: number; text: string; chars: number }[] {
    return this.store
      .roundPrompts(this.owned(OPERATOR, taskId).id, maxChars + PROMPT_REDACT_MARGIN)
      .map((p) => ({ ...p, text: shownPrompt(p.text, maxChars) }));
  }

  /** Rounds scheduled in this process and not yet ended (running, or waiting for their lock); no store read. */
  roundsInFlight(): number {
    return this.active.size;
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
    this.shuttingDown = true;
    const pending = [...this.active.values()];
    for (const a of pending) a.controller.abort(new Error('daemon stopping'));
    await Promise.allSettled(pending.map((a) => a.done));
    await this.snapshots.close();
    this.log.close();
  }

  // ---------------------------------------------------------------- execution

  /**
   * Starts round `round` of a task just admitted with `prompt`; `task` is what the admission knows of its dir and
   * isolation.
   */
  private schedule(
    taskId: string,
    round: number,
    prompt: string,
    task: Pick<TaskRow, 'workdir' | 'isolation' | 'agent'>,
    hardMs?: number,
  ): void {
    const controller = new AbortController();
    const entry: ActiveRound = {
      round,
      controller,
      cancelRequested: false,
      done: Promise.resolve(),
      text: '',
      prompt,
      ...(hardMs ? { hardMs } : {}),
    };
    this.active.set(taskId, entry);
    // The lock queue position is taken in admission order (rules: workspace-locks, run-caps); worktree-isolated tasks
    // need no lock, only a run slot. The repository scope is resolved now (a few stats, no git process); a failure to
    // resolve it fails this round only, and the queue positions are taken one after another through the admission
    // chain.
    const scope = task.isolation === 'worktree' ? null : lockScope(task.workdir);
    // Wrapped so the chain moves on once the position is taken, not once the lock is granted.
    const queued = this.admissions
      .then(() => scope)
      .then((s) => ({ granted: this.locks.acquire(taskId, s, controller.signal, task.agent) }));
    this.admissions = queued.catch(() => {});
    const locked = queued.then((q) => q.granted);
    entry.done = this.execute(taskId, round, entry, locked)
      .catch((err) => {
        this.opts.logger.error('round failed unexpectedly', { taskId, round, error: redactError(err) });
        const t = this.store.getTask(taskId);
        if (t && !isTerminal(t.state)) this.finish(taskId, round, { state: 'failed', error: redactError(err) });
      })
      .finally(() => {
        this.locks.release(taskId);
        if (this.active.get(taskId) === entry) this.active.delete(taskId);
      });
  }

  private async execute(taskId: string, n: number, entry: ActiveRound, locked: Promise<boolean>): Promise<void> {
    let task = this.mustGet(taskId);
    const signal = entry.controller.signal;
    // The dir admitted is checked again, on real paths, before anything runs in it (rule: roots-only): while the
    // round waited, a root may have been withdrawn or a part of the path swapped for a link.
    // A worktree made at the old place is checked once it has moved.
    let refused = this.startRefusal(task.isolation === 'worktree' ? { ...task, workdir: task.cwd } : task);
    if (!refused && task.isolation === 'worktree') {
      task = await this.placeWorktree(task);
      refused = this.startRefusal(task);
    }
    await locked;
    if (signal.aborted) {
      if (!entry.cancelRequested) this.log.finishRound(taskId, n, this.abortOutcome(entry, undefined, undefined));
      return;
    }
    refused ??= this.startRefusal(task);
    if (refused) {
      this.finish(taskId, n, { state: 'failed', error: refused });
      return;
    }
    this.store.tx(() => {
      assertTransition(task.state, 'running');
      this.store.setTaskState(taskId, 'running', now());
      this.store.updateRound(taskId, n, { state: 'running', startedAt: now() });
      this.store.appendEvent(taskId, { time: now(), round: n, kind: 'lifecycle', state: 'running' });
    });
    this.waiters.wake(taskId);

    // The before-snapshot runs while the agent starts up; the turn is sent only once it is taken (see start below).
    const inherited = this.handoff.get(task.workdir);
    this.handoff.delete(task.workdir);
    const before = (inherited ? Promise.resolve(inherited) : snapshot(task.workdir, this.snapshots)).then((b) =>
      this.log.recordBefore(taskId, n, b),
    );
    before.catch(() => {}); // awaited below on every path; this only keeps a failure from counting as unhandled meanwhile
    const agent = this.opts.agents.get(task.agent);
    // If the agent does not stop by itself after an abort, its process group is stopped (rule: cancel-then-stop).
    let forceTimer: NodeJS.Timeout | undefined;
    const armForceStop = () => {
      forceTimer = setTimeout(() => void entry.session?.close(), this.opts.cancelGraceMs + 1_000);
    };
    const r = await runRound({
      idleMs: this.opts.idleTimeoutMs,
      hardMs: entry.hardMs ?? this.opts.hardTimeoutMs,
      signal,
      start: async (roundSignal, touch) => {
        if (roundSignal.aborted) armForceStop();
        else roundSignal.addEventListener('abort', armForceStop, { once: true });
        if (!agent) throw new Error(`agent "${task.agent}" is not configured on this hub`);
        if (roundSignal.aborted) throw new Error('stopped before the agent started');
        entry.session = await agent.openSession({
          cwd: task.workdir,
          sandbox: this.opts.sandbox ?? 'workspace-write',
          resume: task.sessionId ?? undefined,
          model: task.model ?? undefined,
          effort: task.effort ?? undefined,
          signal: roundSignal,
          onActivity: touch,
          onProcessGroup: (pgid) => this.store.addWorker({ pgid, taskId, leaderStart: leaderStartTime(pgid) }, now()),
          ...(this.opts.approvalPolicy?.(task.caller, task.agent) === 'ask'
            ? {
                ask: (request) =>
                  this.approvals.park(request, {
                    taskId,
                    round: n,
                    timeoutMs: this.opts.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
                    signal: roundSignal,
                    touch,
                  }),
              }
            : {}),
        });
        // Only rounds record a task's session id, one at a time: the row read as this round began still holds it.
        if (entry.session.id) this.log.recordSession(taskId, n, entry.session.id, task.sessionId);
        await before;
        // The before-snapshot is stored before the agent gets its turn: usually the session record's commit took it
        // already, and then this writes nothing.
        this.log.flushBefore(taskId);
        return entry.session.turn(entry.prompt, { signal: roundSignal });
      },
      // Agent-supplied text is redacted once, here, before it is stored: every reader then sees the same safe copy.
      onEvent: (ev) => {
        if (ev.kind === 'usage') this.recordUsage(task, n, entry, ev);
        this.log.recordEvent(taskId, n, redactDeep(ev) as typeof ev);
      },
      // Streamed answer text: live `message` events (redacted when written) and the partial result.
      onMessage: (text) => {
        entry.text += text;
        this.log.recordMessage(taskId, n, text);
      },
      close: async () => {
        await this.closeSession(taskId, entry.session);
        clearTimeout(forceTimer);
      },
    });
    await before;
    const after = await snapshot(task.workdir, this.snapshots);
    if (after.git) {
      // The lock is released once this round is recorded, a few microtasks from now; see handoff.
      this.handoff.set(task.workdir, after);
      setImmediate(() => {
        if (this.handoff.get(task.workdir) === after) this.handoff.delete(task.workdir);
      });
    }
    const text = redact(r.text);
    if (entry.overBudget) {
      this.finish(taskId, n, { state: 'failed', error: `budget exceeded: ${entry.overBudget}`, after }, text);
    } else if (entry.cancelRequested || this.shuttingDown) {
      this.finish(taskId, n, this.abortOutcome(entry, r.end, after), text);
    } else if (r.stop === 'too_large') {
      this.finish(taskId, n, { state: 'failed', error: r.error, after });
    } else {
      this.finish(taskId, n, { state: r.state, error: r.error ? redactError(r.error) : null, after }, text);
    }
  }

  /**
   * Records a round's end. On a full disk the outcome is kept and retried until the store writes again (the daemon
   * stays up meanwhile); a stop of the daemon leaves it to the next start's recovery (interrupted).
   */
  private finish(taskId: string, n: number, end: RoundEnd, text?: string): void {
    try {
      this.log.finishRound(taskId, n, end, text);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      this.opts.logger.error('recording the end of a round failed; retrying', {
        taskId,
        round: n,
        error: redactError(err),
      });
      if (this.shuttingDown) return;
      setTimeout(() => {
        const t = this.store.getTask(taskId);
        if (t && !isTerminal(t.state)) this.finish(taskId, n, end, text);
      }, FINISH_RETRY_MS).unref();
    }
  }

  private abortOutcome(entry: ActiveRound, outcome: EndEvent | undefined, after: unknown): RoundEnd {
    if (this.shuttingDown && !entry.cancelRequested) {
      return { state: 'interrupted', error: 'the daemon was stopped during this round', after };
    }
    const acknowledged = outcome?.outcome === 'cancelled' && outcome.acknowledged !== false;
    // A turn that never started cannot be abandoned; one that ended without the agent's acknowledgement is.
    const abandoned = entry.session ? !acknowledged : false;
    return { state: 'cancelled', error: `cancelled by the ${entry.cancelledBy ?? 'caller'}`, after, abandoned };
  }

  /** Adds a usage report to the round's, the task's and the caller's day's sums (rule: usage-budgets). */
  private recordUsage(task: TaskRow, n: number, entry: ActiveRound, report: Parameters<RoundUsage['add']>[0]): void {
    entry.usage ??= new RoundUsage(this.store.taskUsage(task.id)?.costUsd ?? 0);
    const added = entry.usage.add(report);
    if (!added) return;
    const at = { taskId: task.id, n, caller: task.caller, agent: task.agent, day: utcDay(now()) };
    this.store.tx(() => this.store.addUsage(at, { ...added, reports: 1 }));
    const over = roundOverBudget(entry.usage.total, this.opts.budgetOf?.(task.caller) ?? {});
    if (!over || entry.cancelRequested) return;
    // Stopped through the cancel path (rule: cancel-then-stop); the round then ends failed naming the budget.
    entry.cancelRequested = true;
    entry.overBudget = over;
    this.store.durableTx(() =>
      this.store.appendEvent(task.id, { time: now(), round: n, kind: 'cancel_requested', by: 'budget', budget: over }),
    );
    this.waiters.wake(task.id);
    entry.controller.abort(new Error(`budget exceeded: ${over}`));
  }

  /**
   * Answers a permission request the task's round waits for (rule: approvals): by the task's own caller (another
   * caller's task is not found) or the operator. A request not pending or a decision not offered changes nothing.
   */
  respond(reader: Reader, taskId: string, requestId: string, decision: PermissionDecision): TaskView {
    const task = this.owned(reader, taskId);
    this.approvals.respond(task.id, requestId, decision, cancelOrigin(reader));
    return this.readerView(reader, this.mustGet(task.id));
  }

  /** Refuses a new round while the caller's usage today has reached a daily budget (rule: usage-budgets). */
  private checkDailyBudget(caller: string): void {
    const budget = this.opts.budgetOf?.(caller);
    if (budget?.maxTokensPerDay === undefined && budget?.maxCostUsdPerDay === undefined) return;
    const at = now();
    const today = this.store
      .usageTotals(utcDay(at), utcDay(at), caller)
      .reduce((sum, x) => addUsage(sum, x.usage), { reports: 0 } as Usage);
    const refusal = dailyRefusal(caller, today, budget, at);
    if (refusal) throw new EngineError('forbidden', refusal);
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

  private async closeSession(taskId: string, session: AgentSession | undefined): Promise<void> {
    if (session) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        session.close().catch(() => {}),
        new Promise<void>((r) => {
          timer = setTimeout(r, this.opts.cancelGraceMs + 5_000);
        }),
      ]);
      clearTimeout(timer);
    }
    // The workspace lock is released only once every process group of the task has exited (rule: workspace-locks).
    // Their records go with the round's end, in its commit (TaskLog.finishRound).
    const target = this.opts.targetOf?.(this.store.getTask(taskId)?.agent ?? '');
    for (const pgid of this.store.workersOfTask(taskId))
      await (target ? target.stopGroup(pgid, this.opts.cancelGraceMs) : stopGroup(pgid, this.opts.cancelGraceMs));
  }

  /**
   * A worktree-isolated task's worktree (rule: worktrees-outside): added at its first round, outside the state dir,
   * the roots and baton's dirs; one added at the old place inside the state dir is moved out first.
   */
  private async placeWorktree(task: TaskRow): Promise<TaskRow> {
    let workdir: string | undefined;
    if (task.workdir === task.cwd) {
      const forbidden = [...this.configuredRoots().map(realish), ...this.privateDirs];
      workdir = await createWorktree(task.cwd, task.id, this.worktreesDir, forbidden);
    } else {
      workdir = await moveOldWorktree(task.workdir, task.id, this.opts.stateDir, this.worktreesDir).catch((err) => {
        this.opts.logger.warn('the worktree stays inside the state dir', { taskId: task.id, error: redactError(err) });
        return undefined;
      });
    }
    if (!workdir) return task;
    this.store.setWorkdir(task.id, workdir);
    return this.mustGet(task.id);
  }

  /** Why a round of `task` must not start in its dir now, or undefined (rule: roots-only). */
  private startRefusal(task: TaskRow): string | undefined {
    try {
      this.authorisedCwd(task.cwd);
    } catch (err) {
      return `${(err as Error).message}; nothing was run`;
    }
    return changedDir(task);
  }

  // ---------------------------------------------------------------- helpers

  /**
   * The caller's hard deadline in ms, or undefined to keep the operator's. Above the operator's hard limit it is refused,
   * not clamped (rule: two-deadlines): a caller that asked for more than it can get should hear so before the work starts.
   */
  private callerHardMs(timeoutSeconds: number | undefined): number | undefined {
    if (timeoutSeconds === undefined) return undefined;
    const bound = this.opts.hardTimeoutMs;
    if (bound > 0 && timeoutSeconds * 1000 > bound) {
      throw new InvalidArgumentError(
        `timeoutSeconds: ${timeoutSeconds} is above this hub's limit of ${Math.floor(bound / 1000)} s (the operator's limits.hardTimeoutMs); ask for at most that`,
      );
    }
    return timeoutSeconds * 1000;
  }

  /** A target that cannot run anything (a sandbox without bubblewrap) refuses the task before it is recorded. */
  private targetReady(agent: string): void {
    const error = this.opts.targetOf?.(agent)?.status().error;
    if (error) throw new EngineError('invalid', error);
  }

  private assertReachable(caller: string, agent: string): void {
    const reachable = this.opts.reachable(caller);
    if (!reachable.includes(agent)) {
      throw new EngineError(
        'forbidden',
        `agent "${agent}" is not reachable for caller "${caller}" (reachable: ${reachable.join(', ') || 'none'})`,
      );
    }
  }

  private pickAgent(caller: string, requested: string | undefined): string {
    const reachable = this.opts.reachable(caller);
    if (requested !== undefined) {
      this.assertReachable(caller, requested);
      return requested;
    }
    if (reachable.length === 1) return reachable[0]!;
    throw new EngineError(
      'invalid',
      reachable.length
        ? `name the agent: caller "${caller}" may reach ${reachable.join(', ')}`
        : `caller "${caller}" may reach no agent; configure one in config.json`,
    );
  }

  /** Rule `roots-only`: the cwd must resolve (realpath) inside an authorised root. */
  private authorisedCwd(cwd: string): string {
    if (!cwd.startsWith('/')) throw new EngineError('invalid', `cwd must be an absolute path, got "${cwd}"`);
    let real: string;
    try {
      real = realpathSync.native(cwd);
    } catch {
      throw new EngineError('invalid', `cwd ${cwd} does not exist`);
    }
    if (!statSync(real).isDirectory()) throw new EngineError('invalid', `cwd ${cwd} is not a directory`);
    // baton's own files (tokens, store) are never a workspace, even under a root that somehow contains them.
    const own = this.privateDirs.find((dir) => isWithin(dir, real));
    if (own)
      throw new EngineError('forbidden', `cwd ${cwd} is inside baton's own files (${own}); choose a project dir`);
    // An absolute root that is a leading part of the cwd's real path needs no realpath of its own: that path has no
    // links, no `.` or `..`, so such a root is itself real and exists. Otherwise roots are resolved one by one until
    // one holds the cwd (a root may be reached through a link): a realpath per root looked at, not one per configured
    // root. A root that vanished since it was authorised authorises nothing.
    const configured = this.configuredRoots();
    if (configured.some((root) => root.startsWith('/') && isWithin(root, real))) return real;
    const roots: string[] = [];
    for (const root of configured) {
      const realRootDir = realRoot(root);
      if (realRootDir === undefined) continue;
      if (isWithin(realRootDir, real)) return real;
      roots.push(realRootDir);
    }
    if (!roots.length) {
      throw new EngineError(
        'forbidden',
        'no project roots are authorised yet: run `baton init` in a project (or `baton roots add DIR`); the running hub picks the change up without a restart',
      );
    }
    throw new EngineError('forbidden', `cwd ${cwd} is outside the authorised roots (${roots.join(', ')})`);
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
    return this.mustGet(rec.taskId);
  }

  private owned(caller: Reader, taskId: string): TaskRow {
    // What a caller reads includes every event received so far (they are written in batches).
    this.log.flushForRead();
    const task = this.store.getTask(taskId);
    // Another caller's task is indistinguishable from a missing one (rule: http-auth); the operator sees every task.
    if (!task || (caller !== OPERATOR && task.caller !== caller))
      throw new EngineError('not_found', `no task ${taskId}`);
    return task;
  }

  private mustGet(id: string): TaskRow {
    const t = this.store.getTask(id);
    if (!t) throw new EngineError('not_found', `no task ${id}`);
    return t;
  }

  /** A caller's view is unchanged; the operator's also names the task's caller. */
  private readerView(reader: Reader, task: TaskRow): TaskView {
    return reader === OPERATOR ? { ...this.view(task), caller: task.caller } : this.view(task);
  }

  /** A task's view; a queued round also says where it stands in the queue and why it waits (rule: run-caps). */
  private view(task: TaskRow): TaskView {
    const view = { ...taskView(this.store, task), target: this.opts.targetOf?.(task.agent)?.name ?? 'local' };
    if (task.state === 'queued') {
      const queue = this.locks.waiting(task.id);
      return queue ? { ...view, queue } : view;
    }
    const waiting = task.state === 'running' ? this.approvals.waitingOf(task.id) : undefined;
    return waiting ? { ...view, waiting } : view;
  }
}

/** The `queued` lifecycle event of round `n`, naming the caller's own timeout when it chose one. */
function queuedEvent(n: number, timeoutSeconds: number | undefined, by?: 'operator'): NewTaskEvent {
  return {
    time: now(),
    round: n,
    kind: 'lifecycle',
    state: 'queued',
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    ...(by ? { by } : {}),
  };
}

function payloadHash(payload: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(payload)).digest('hex');
}

/**
 * Why the task's dirs are no longer the ones admitted, or undefined: each was stored as a real path, so a path that
 * now resolves elsewhere (a part swapped for a link) or not at all is refused.
 */
function changedDir(task: Pick<TaskRow, 'cwd' | 'workdir'>): string | undefined {
  for (const dir of new Set([task.cwd, task.workdir])) {
    let real: string | undefined;
    try {
      real = realpathSync.native(dir);
    } catch {}
    if (real !== dir) {
      const now = real ? `it now leads to ${real}` : 'it is gone';
      return `the task's dir ${dir} changed since the task was admitted (${now}); nothing was run`;
    }
  }
  return undefined;
}

/** A root as a real path, or undefined when it no longer exists. */
function realRoot(root: string): string | undefined {
  try {
    return realpathSync.native(root);
  } catch {
    return undefined;
  }
}

async function lockScope(dir: string): Promise<LockScope> {
  const real = realpathSync.native(dir);
  // Found among the ancestors of a resolved path, the work tree is resolved too: no part of that path is a link.
  return { dir: real, worktree: findWorkTree(real) };
}
