// The execution-target seam: every process baton starts for a task (the agent and its helpers) is started through the
// target its agent entry names, and stopped through it, so the engine and the adapters never decide where or how
// fenced a task runs. `local` is today's process model plus the secrets fence where bubblewrap runs; `sandbox` adds a
// read-only host (docs/targets.md says what each fences and what it does not). (rules: execution-targets,
// secrets-fence)
import { readdirSync, readFileSync } from 'node:fs';
import { isWithin } from '../../lib/paths.ts';
import {
  type ChildGroup,
  DEFAULT_STOP_GRACE_MS,
  type GroupExit,
  isGroupAlive,
  signalGroup,
  spawnGroup,
  stopGroup,
} from '../../lib/process-group.ts';
import { LOCAL_TARGET_NAME, type TargetConfig, type TargetKind } from './config.ts';
import { TargetError } from './errors.ts';
import { bwrapArgs, type FenceAvailability, fenceAvailability, tmpInstalls } from './fence.ts';
import { SshTarget } from './ssh.ts';
import type { ExecutionTarget, TargetSpawnOptions, TargetStatus } from './types.ts';

export type { ExecutionTarget, RemoteHost, TargetStatus } from './types.ts';

export interface TargetContext {
  /** baton's own dirs (config, connections, state): empty in a fenced agent's view. */
  privateDirs: readonly string[];
  /** The authorised roots as they are now: a sandbox hides every one its task does not work in. */
  roots: () => readonly string[];
  /** baton's state dir (an ssh target's control socket dir is made in it). */
  stateDir?: string;
}

/** Processes started as they always were: no fence (a user's explicit `fence: false`, and the library default). */
export const UNFENCED: ExecutionTarget = {
  name: LOCAL_TARGET_NAME,
  kind: 'local',
  spawn: (command, args, opts) => spawnGroup(command, args, { cwd: opts.cwd, env: opts.env, stdio: opts.stdio }),
  stopGroup: (pgid, graceMs) => stopGroup(pgid, graceMs),
  status: () => ({ name: LOCAL_TARGET_NAME, kind: 'local', fence: 'off' }),
};

export { TargetError };

export function createTarget(name: string, config: TargetConfig, ctx: TargetContext): ExecutionTarget {
  if (config.kind === 'ssh') return new SshTarget(name, config, { stateDir: ctx.stateDir });
  if (config.kind === 'local' && config.fence === false) {
    return { ...UNFENCED, name, status: () => ({ name, kind: 'local', fence: 'off' }) };
  }
  return new FencedTarget(name, config, ctx);
}

class FencedTarget implements ExecutionTarget {
  readonly name: string;
  readonly kind: TargetKind;
  private readonly config: Exclude<TargetConfig, { kind: 'ssh' }>;
  private readonly ctx: TargetContext;

  constructor(name: string, config: Exclude<TargetConfig, { kind: 'ssh' }>, ctx: TargetContext) {
    this.name = name;
    this.kind = config.kind;
    this.config = config;
    this.ctx = ctx;
  }

  private availability(): FenceAvailability {
    return fenceAvailability(this.config.bwrap);
  }

  status(): TargetStatus {
    const a = this.availability();
    if (a.ok) return { name: this.name, kind: this.kind, fence: this.kind === 'sandbox' ? 'sandbox' : 'secrets' };
    if (this.kind === 'sandbox')
      return {
        name: this.name,
        kind: this.kind,
        fence: 'off',
        error: `target "${this.name}" (sandbox) cannot run: ${a.reason}; ${a.fix}`,
      };
    return {
      name: this.name,
      kind: this.kind,
      fence: 'off',
      warning: `target "${this.name}": agents run without the secrets fence (${a.reason}) and can read baton's tokens; ${a.fix}`,
    };
  }

  spawn(command: string, args: readonly string[], opts: TargetSpawnOptions): ChildGroup {
    const a = this.availability();
    if (!a.ok) {
      // A sandbox never degrades to an unfenced run; the secrets fence does, with the warning doctor and start print.
      if (this.kind === 'sandbox') throw new TargetError(this.status().error!);
      return UNFENCED.spawn(command, args, opts);
    }
    const sandbox = this.config.kind === 'sandbox';
    const cwd = opts.cwd ?? process.cwd();
    // The work dir stays writable (it may lie in baton's state dir: a worktree); baton's own dirs never are.
    const keep = [cwd, ...(opts.keep ?? [])].filter((k) => !this.ctx.privateDirs.some((d) => isWithin(k, d)));
    const hidden = [...this.ctx.privateDirs];
    if (sandbox) {
      // Every other root is hidden: an agent working in one project reads nothing of another.
      for (const root of this.ctx.roots())
        if (!keep.some((k) => isWithin(root, k) || isWithin(k, root))) hidden.push(root);
    }
    const writable = [...keep, ...(sandbox ? (this.config.writable ?? []) : [])];
    const fence = bwrapArgs({
      hidden,
      writable,
      readOnlyHost: sandbox,
      privateTmp: sandbox,
      tmpInstalls: sandbox ? tmpInstalls(command, opts.env?.PATH) : [],
      cwd,
    });
    const [file, ...argv] = a.argv(fence, command, args);
    return fencedGroup(spawnGroup(file!, argv, { cwd, env: opts.env, stdio: opts.stdio }));
  }

  stopGroup(pgid: number, graceMs = DEFAULT_STOP_GRACE_MS): Promise<boolean> {
    return stopLiveGroup(pgid, graceMs);
  }
}

/**
 * A fenced group as the adapters use it. Its liveness ignores zombies: bubblewrap's namespace init outlives the outer
 * bwrap by a moment and is then reparented to the machine's init, which may take seconds to reap it (a container's or
 * a VM's init often does), while nothing of the agent runs any more. `exited` waits for the group only when bwrap
 * itself died of a signal (no signal shield): then the agent may still be stopping.
 */
function fencedGroup(group: ChildGroup): ChildGroup {
  if (group.pgid <= 0) return group;
  const pgid = group.pgid;
  const exited = group.exited.then(async (exit: GroupExit) => {
    if (exit.signal) await waitLiveGone(pgid);
    return exit;
  });
  let stopping: Promise<GroupExit> | undefined;
  return {
    child: group.child,
    pgid,
    exited,
    signal: (sig) => group.signal(sig),
    stop(graceMs = DEFAULT_STOP_GRACE_MS) {
      stopping ??= (async () => {
        signalGroup(pgid, 'SIGTERM');
        const timer = setTimeout(() => signalGroup(pgid, 'SIGKILL'), graceMs);
        const exit = await group.exited;
        clearTimeout(timer);
        await stopLiveGroup(pgid, graceMs);
        return exit;
      })();
      return stopping;
    },
  };
}

/** Whether any process of the group is still running (zombies excluded; Linux, read from /proc). */
function liveMembers(pgid: number): boolean {
  if (!isGroupAlive(pgid)) return false;
  for (const entry of readdirSync('/proc')) {
    if (entry.charCodeAt(0) > 57) continue;
    try {
      // After the command name (which may hold spaces or parentheses): state, ppid, pgrp.
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

async function waitLiveGone(pgid: number, timeoutMs = Number.POSITIVE_INFINITY): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  let delay = 5;
  while (liveMembers(pgid)) {
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 100);
  }
  return true;
}

/** TERM, up to `graceMs` for the group to go, then KILL and as long again. True once nothing of it runs. */
async function stopLiveGroup(pgid: number, graceMs: number): Promise<boolean> {
  if (!liveMembers(pgid)) return true;
  signalGroup(pgid, 'SIGTERM');
  if (await waitLiveGone(pgid, graceMs)) return true;
  signalGroup(pgid, 'SIGKILL');
  return waitLiveGone(pgid, graceMs);
}
