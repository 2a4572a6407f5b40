// Runs the rounds the engine admitted: each waits for its workspace lock and a run slot in admission order, checks its
// dir again, runs its agent through runRound under both deadlines, records what the agent reports (redacted), and is
// recorded however it ends; a cancel aborts it and its process group is stopped after the grace period; a stop of the
// daemon interrupts every round (rules: task-lifecycle, workspace-locks, run-caps, two-deadlines, cancel-then-stop,
// git-snapshots, usage-budgets, approvals, worktrees-outside, crash-durability).
import { realpathSync } from 'node:fs';
import type { AgentSession } from '../agents/agent.ts';
import { realish } from '../lib/paths.ts';
import { stopGroup } from '../lib/process-group.ts';
import { redact, redactDeep, redactError } from '../lib/redact.ts';
import type { TaskAccess } from './access.ts';
import type { Admission } from './admission.ts';
import { type Approvals, DEFAULT_APPROVAL_TIMEOUT_MS } from './approvals.ts';
import { type CancelOrigin, type EngineOptions, now } from './engine-types.ts';
import { findWorkTree, type GitSnapshot, snapshot } from './git.ts';
import type { LockScope, WorkspaceLocks } from './locks.ts';
import { connectionLost, recordWorker } from './recovery.ts';
import { isRemote, remoteLockScope, remoteSnapshot, remoteWorktree } from './remote.ts';
import { type EndEvent, runRound } from './round.ts';
import { SnapshotRunners } from './snapshot-runners.ts';
import { isDiskFull, type Store } from './store.ts';
import { assertTransition, isTerminal, type TaskRow } from './task.ts';
import type { RoundEnd, TaskLog } from './task-log.ts';
import { RoundUsage, roundOverBudget, utcDay } from './usage.ts';
import type { Waiters } from './waiters.ts';
import { createWorktree, defaultWorktreesDir, moveOldWorktree } from './worktrees.ts';

/** How often the end of a round that could not be written (a full disk) is retried. */
const FINISH_RETRY_MS = 1_000;

/** A round scheduled in this process and not yet ended: running, or waiting for its lock and a slot. */
export interface ActiveRound {
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

/** What the scheduler works with: the engine's options and the parts it shares with the engine. */
export interface SchedulerParts {
  opts: EngineOptions;
  store: Store;
  locks: WorkspaceLocks;
  approvals: Approvals;
  waiters: Waiters;
  log: TaskLog;
  access: TaskAccess;
  admission: Admission;
}

export class Scheduler {
  private readonly opts: EngineOptions;
  private readonly store: Store;
  private readonly locks: WorkspaceLocks;
  private readonly approvals: Approvals;
  private readonly waiters: Waiters;
  private readonly log: TaskLog;
  private readonly access: TaskAccess;
  private readonly admission: Admission;
  private readonly active = new Map<string, ActiveRound>();
  /** Admissions take their lock queue positions one after another through this chain (see schedule). */
  private admissions: Promise<unknown> = Promise.resolve();
  private shuttingDown = false;
  /**
   * A round's after-snapshot, kept by its workdir only until the macrotask that released its lock is over: a round in
   * the same dir granted the lock in that moment (it was queued behind) takes it as its before-snapshot instead of
   * running git again. Nothing ran in that dir in between (the lock), and no time passed for anyone to edit it.
   */
  private readonly handoff = new Map<string, GitSnapshot>();
  /** The shells that run snapshot gits for this engine, so the daemon does not fork per snapshot. */
  private readonly snapshots: SnapshotRunners;
  private readonly worktreesDir: string;

  constructor(parts: SchedulerParts) {
    this.opts = parts.opts;
    this.store = parts.store;
    this.locks = parts.locks;
    this.approvals = parts.approvals;
    this.waiters = parts.waiters;
    this.log = parts.log;
    this.access = parts.access;
    this.admission = parts.admission;
    this.snapshots = new SnapshotRunners({ parentDir: this.opts.stateDir });
    this.worktreesDir = realish(
      this.opts.worktreesDir ?? defaultWorktreesDir(this.opts.stateDir, this.admission.privateDirs),
    );
  }

  /** The round of `taskId` scheduled in this process and not yet ended, if any. */
  activeOf(taskId: string): ActiveRound | undefined {
    return this.active.get(taskId);
  }

  /** Rounds scheduled in this process and not yet ended (running, or waiting for their lock); no store read. */
  inFlight(): number {
    return this.active.size;
  }

  /**
   * Asks the task's round to stop (rule: cancel-then-stop): one never started ends cancelled at once and leaves the
   * lock queue; a running one is aborted and its agent gets the grace period. False when there is nothing to cancel
   * (no round of this task in flight here, or a cancel already asked for).
   */
  cancel(task: TaskRow, by: CancelOrigin): boolean {
    const active = this.active.get(task.id);
    if (isTerminal(task.state) || !active) return false;
    if (active.cancelRequested) return false;
    active.cancelRequested = true;
    active.cancelledBy = by;
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
      return true;
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
    return true;
  }

  /** Graceful shutdown: running rounds are stopped and recorded as interrupted (never replayed). */
  async close(): Promise<void> {
    this.shuttingDown = true;
    const pending = [...this.active.values()];
    for (const a of pending) a.controller.abort(new Error('daemon stopping'));
    await Promise.allSettled(pending.map((a) => a.done));
    await this.snapshots.close();
  }

  /**
   * Starts round `round` of a task just admitted with `prompt`; `task` is what the admission knows of its dir and
   * isolation.
   */
  schedule(
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
    const target = this.opts.targetOf?.(task.agent);
    const scope =
      task.isolation === 'worktree'
        ? null
        : isRemote(target)
          ? remoteLockScope(target, task.workdir)
          : lockScope(task.workdir);
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
    let task = this.access.mustGet(taskId);
    const signal = entry.controller.signal;
    // The dir admitted is checked again, on real paths, before anything runs in it (rule: roots-only): while the
    // round waited, a root may have been withdrawn or a part of the path swapped for a link.
    // A worktree made at the old place is checked once it has moved.
    let refused = await this.admission.startRefusal(
      task.isolation === 'worktree' ? { ...task, workdir: task.cwd } : task,
    );
    if (!refused && task.isolation === 'worktree') {
      task = await this.placeWorktree(task);
      refused = await this.admission.startRefusal(task);
    }
    await locked;
    if (signal.aborted) {
      if (!entry.cancelRequested) this.log.finishRound(taskId, n, this.abortOutcome(entry, undefined, undefined));
      return;
    }
    refused ??= await this.admission.startRefusal(task);
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
    const target = this.opts.targetOf?.(task.agent);
    const roundGroups: number[] = [];
    const before = (inherited ? Promise.resolve(inherited) : this.snapshotAt(task)).then((b) =>
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
          onProcessGroup: (pgid) => {
            roundGroups.push(pgid);
            recordWorker(this.store, this.opts.logger, { pgid, taskId, target }, now());
          },
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
    const after = await this.snapshotAt(task);
    if (after.git) {
      // The lock is released once this round is recorded, a few microtasks from now; see handoff.
      this.handoff.set(task.workdir, after);
      setImmediate(() => {
        if (this.handoff.get(task.workdir) === after) this.handoff.delete(task.workdir);
      });
    }
    const text = redact(r.text);
    const lost = connectionLost(target, roundGroups);
    if (entry.overBudget) {
      this.finish(taskId, n, { state: 'failed', error: `budget exceeded: ${entry.overBudget}`, after }, text);
    } else if (entry.cancelRequested || this.shuttingDown) {
      this.finish(taskId, n, this.abortOutcome(entry, r.end, after), text);
    } else if (lost) {
      this.finish(taskId, n, { state: 'interrupted', error: lost, after }, text);
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

  /** Closes the round's session, then stops every process group of the task that is still there. */
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
  /** A git snapshot of the task's workdir, on the host of its target. */
  private snapshotAt(task: TaskRow): Promise<GitSnapshot> {
    const target = this.opts.targetOf?.(task.agent);
    return isRemote(target) ? remoteSnapshot(target, task.workdir) : snapshot(task.workdir, this.snapshots);
  }

  private async placeWorktree(task: TaskRow): Promise<TaskRow> {
    let workdir: string | undefined;
    const target = this.opts.targetOf?.(task.agent);
    if (isRemote(target)) {
      if (task.workdir === task.cwd) workdir = await remoteWorktree(target, task.cwd, task.id);
    } else if (task.workdir === task.cwd) {
      const forbidden = [...this.admission.configuredRoots().map(realish), ...this.admission.privateDirs];
      workdir = await createWorktree(task.cwd, task.id, this.worktreesDir, forbidden);
    } else {
      workdir = await moveOldWorktree(task.workdir, task.id, this.opts.stateDir, this.worktreesDir).catch((err) => {
        this.opts.logger.warn('the worktree stays inside the state dir', { taskId: task.id, error: redactError(err) });
        return undefined;
      });
    }
    if (!workdir) return task;
    this.store.setWorkdir(task.id, workdir);
    return this.access.mustGet(task.id);
  }
}

async function lockScope(dir: string): Promise<LockScope> {
  const real = realpathSync.native(dir);
  // Found among the ancestors of a resolved path, the work tree is resolved too: no part of that path is a link.
  return { dir: real, worktree: findWorkTree(real) };
}
