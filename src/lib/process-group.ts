// Every child baton starts leads its own process group, so the whole tree can be stopped at once (rule:
// own-process-group).
import { AsyncLocalStorage } from 'node:async_hooks';
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Grace between SIGTERM and SIGKILL when stopping a group. */
export const DEFAULT_STOP_GRACE_MS = 5_000;

export interface GroupExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ChildGroup {
  readonly child: ChildProcess;
  /** Process-group id (equal to the leader's pid). */
  readonly pgid: number;
  /** Resolves once the leader has exited (its stdio may still be draining). */
  readonly exited: Promise<GroupExit>;
  /** SIGTERM the group, then SIGKILL after `graceMs`; resolves when the leader has exited and the group is gone. */
  stop(graceMs?: number): Promise<GroupExit>;
  /** Sends a signal to the whole group; false when it is already gone. */
  signal(sig: NodeJS.Signals): boolean;
}

export interface SpawnGroupOptions extends Omit<SpawnOptions, 'detached'> {}

/** Told of every group spawned inside `withGroupScope` (however deep in an adapter the spawn happens). */
export interface GroupScope {
  onSpawn(group: ChildGroup): void;
}

const groupScope = new AsyncLocalStorage<GroupScope>();

/**
 * Runs `fn` so that every process group it spawns, directly or through an agent adapter, is reported to `scope`: the
 * hub uses it to put a deadline on probes and to record their groups for the next start to reap.
 */
export function withGroupScope<T>(scope: GroupScope, fn: () => Promise<T>): Promise<T> {
  return groupScope.run(scope, fn);
}

export function spawnGroup(command: string, args: readonly string[], opts: SpawnGroupOptions = {}): ChildGroup {
  const child = spawn(command, args, { ...opts, detached: true });
  const exited = new Promise<GroupExit>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
      return;
    }
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: child.exitCode, signal: child.signalCode }));
  });
  if (child.pid === undefined) {
    // spawn failed (ENOENT...): the 'error' event carries the reason; the group never existed.
    return {
      child,
      pgid: -1,
      exited,
      stop: () => exited,
      signal: () => false,
    };
  }
  const pgid = child.pid;
  const scope = groupScope.getStore();
  let stopping: Promise<GroupExit> | undefined;
  const group: ChildGroup = {
    child,
    pgid,
    exited,
    signal: (sig) => signalGroup(pgid, sig),
    stop(graceMs = DEFAULT_STOP_GRACE_MS) {
      stopping ??= (async () => {
        signalGroup(pgid, 'SIGTERM');
        const timer = setTimeout(() => signalGroup(pgid, 'SIGKILL'), graceMs);
        const exit = await exited;
        clearTimeout(timer);
        // The leader is gone; make sure nothing it left in its group survives.
        if (isGroupAlive(pgid)) await waitGroupGone(pgid, graceMs);
        return exit;
      })();
      return stopping;
    },
  };
  scope?.onSpawn(group);
  return group;
}

export function signalGroup(pgid: number, sig: NodeJS.Signals | 0): boolean {
  if (!(pgid > 1)) return false;
  // A group already gone (ESRCH) is the usual answer once a round has ended. The error is dropped here, so it is made
  // without a stack trace, which Node would capture in full (10.7 µs a call on a 40-frame stack, 3.1 µs without).
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export function isGroupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0);
}

/**
 * Stops a group that may belong to a previous baton process (crash recovery, rule `crash-durability`): TERM, wait up to
 * `graceMs`, then KILL and wait for it to disappear. Resolves true when the group is gone.
 */
export async function stopGroup(pgid: number, graceMs = DEFAULT_STOP_GRACE_MS): Promise<boolean> {
  if (!isGroupAlive(pgid)) return true;
  signalGroup(pgid, 'SIGTERM');
  if (await waitGroupGone(pgid, graceMs)) return true;
  signalGroup(pgid, 'SIGKILL');
  return waitGroupGone(pgid, graceMs);
}

/**
 * The process groups of the live processes whose environment holds every `env` pair: for the descendants of a child
 * that left its group (a sandbox wrapper starting a session of its own), known only by what their environment says.
 * Linux only (read from /proc); elsewhere nothing is found.
 */
export function groupsWithEnvironment(env: Record<string, string>): Set<number> {
  const wanted = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const groups = new Set<number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return groups;
  }
  for (const pid of pids) {
    try {
      const vars = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (!wanted.every((w) => vars.includes(w))) continue;
      // Fields after the command name (which may hold spaces or parentheses): state, ppid, pgrp.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const pgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (pgid > 1) groups.add(pgid);
    } catch {
      // Gone meanwhile, or another user's process.
    }
  }
  return groups;
}

// A group that is not our child gives no exit event, so its disappearance can only be observed by probing.
async function waitGroupGone(pgid: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  let delay = 5;
  while (isGroupAlive(pgid)) {
    if (Date.now() >= until) {
      signalGroup(pgid, 'SIGKILL');
      if (Date.now() >= until + 1_000) return !isGroupAlive(pgid);
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 100);
  }
  return true;
}
