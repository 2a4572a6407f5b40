// The checks a request passes before anything is recorded, and again before a round starts in its dir: the cwd lies
// inside an authorised root and outside baton's own files, the caller reaches the agent, the agent's target can run,
// the caller's deadline is within the operator's, its daily budget is not spent (rules: roots-only, hub-tools,
// two-deadlines, usage-budgets). Also what a task's admission records: its id, its payload hash and its queued event.
import { createHash, randomBytes } from 'node:crypto';
import { realpathSync, statSync } from 'node:fs';
import { isWithin, realish } from '../lib/paths.ts';
import { EngineError, type EngineOptions, InvalidArgumentError, now } from './engine-types.ts';
import { isRemote, type RemoteTarget, remoteCwd, remoteStartRefusal } from './remote.ts';
import type { Store } from './store.ts';
import type { NewTaskEvent, TaskRow } from './task.ts';
import { addUsage, dailyRefusal, type Usage, utcDay } from './usage.ts';

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

export class Admission {
  /** Dirs no cwd may lie in: the state dir and baton's other private dirs, as real paths. */
  readonly privateDirs: string[];
  private readonly opts: EngineOptions;
  private readonly store: Store;

  constructor(opts: EngineOptions, store: Store) {
    this.opts = opts;
    this.store = store;
    this.privateDirs = [opts.stateDir, ...(opts.privateDirs ?? [])].map(realish);
  }

  /** The configured roots, as they are now (the hub's config can change while it runs). */
  configuredRoots(): readonly string[] {
    return typeof this.opts.roots === 'function' ? this.opts.roots() : this.opts.roots;
  }

  /** Refuses a new round while the caller's usage today has reached a daily budget (rule: usage-budgets). */
  checkDailyBudget(caller: string): void {
    const budget = this.opts.budgetOf?.(caller);
    if (budget?.maxTokensPerDay === undefined && budget?.maxCostUsdPerDay === undefined) return;
    const at = now();
    const today = this.store
      .usageTotals(utcDay(at), utcDay(at), caller)
      .reduce((sum, x) => addUsage(sum, x.usage), { reports: 0 } as Usage);
    const refusal = dailyRefusal(caller, today, budget, at);
    if (refusal) throw new EngineError('forbidden', refusal);
  }

  /** The real path of a new task's cwd on another machine, inside that target's roots there (rule: roots-only). */
  async remoteCwd(target: RemoteTarget, cwd: string): Promise<string> {
    return (await remoteCwd(target, cwd)).real;
  }

  /**
   * A new round of a task on another machine (rule: roots-only): refused when a root of its target was removed since
   * the task began, or its dir now leads elsewhere there.
   */
  async assertRemoteDirsStill(task: TaskRow): Promise<void> {
    const target = this.opts.targetOf?.(task.agent);
    if (!isRemote(target)) return;
    const changed = await remoteStartRefusal(
      target,
      task.isolation === 'worktree' ? { ...task, workdir: task.cwd } : task,
    );
    if (changed) throw new EngineError('forbidden', changed);
  }

  /** Why a round of `task` must not start in its dir now, or undefined (rule: roots-only). */
  async startRefusal(task: TaskRow): Promise<string | undefined> {
    const target = this.opts.targetOf?.(task.agent);
    if (isRemote(target)) return remoteStartRefusal(target, task);
    try {
      this.authorisedCwd(task.cwd);
    } catch (err) {
      return `${(err as Error).message}; nothing was run`;
    }
    return changedDir(task);
  }

  /**
   * The caller's hard deadline in ms, or undefined to keep the operator's. Above the operator's hard limit it is refused,
   * not clamped (rule: two-deadlines): a caller that asked for more than it can get should hear so before the work starts.
   */
  callerHardMs(timeoutSeconds: number | undefined): number | undefined {
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
  targetReady(agent: string): void {
    const error = this.opts.targetOf?.(agent)?.status().error;
    if (error) throw new EngineError('invalid', error);
  }

  assertReachable(caller: string, agent: string): void {
    const reachable = this.opts.reachable(caller);
    if (!reachable.includes(agent)) {
      throw new EngineError(
        'forbidden',
        `agent "${agent}" is not reachable for caller "${caller}" (reachable: ${reachable.join(', ') || 'none'})`,
      );
    }
  }

  pickAgent(caller: string, requested: string | undefined): string {
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
  authorisedCwd(cwd: string): string {
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
}

/** The `queued` lifecycle event of round `n`, naming the caller's own timeout when it chose one. */
export function queuedEvent(n: number, timeoutSeconds: number | undefined, by?: 'operator'): NewTaskEvent {
  return {
    time: now(),
    round: n,
    kind: 'lifecycle',
    state: 'queued',
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    ...(by ? { by } : {}),
  };
}

export function payloadHash(payload: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(payload)).digest('hex');
}

/**
 * Why the task's dirs are no longer the ones admitted, or undefined: each was stored as a real path, so a path that
 * now resolves elsewhere (a part swapped for a link) or not at all is refused.
 */
export function changedDir(task: Pick<TaskRow, 'cwd' | 'workdir'>): string | undefined {
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
