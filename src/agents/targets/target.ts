// The execution-target seam: every process baton starts for a task (the agent and its helpers) is started through the
// target its agent entry names, and stopped through it, so the engine and the adapters never decide where or how
// fenced a task runs. `local` is today's process model plus the secrets fence where bubblewrap runs; `sandbox` adds a
// read-only host (docs/targets.md says what each fences and what it does not). (rules: execution-targets,
// secrets-fence)
import type { StdioOptions } from 'node:child_process';
import { isWithin } from '../../lib/paths.ts';
import { type ChildGroup, type GroupExit, isGroupAlive, spawnGroup, stopGroup } from '../../lib/process-group.ts';
import { LOCAL_TARGET_NAME, type TargetConfig, type TargetKind } from './config.ts';
import { bwrapArgs, type FenceAvailability, fenceAvailability } from './fence.ts';

export interface TargetSpawnOptions {
  cwd?: string;
  env: NodeJS.ProcessEnv;
  stdio: StdioOptions;
  /**
   * Paths the process must be able to write even where the target hides or protects them: the agent's private home
   * (it lies in baton's state dir) and, for a task, its work dir.
   */
  keep?: readonly string[];
}

export interface TargetStatus {
  name: string;
  kind: TargetKind;
  /** `secrets`: baton's dirs fenced off; `sandbox`: that and a read-only host; `off`: nothing fenced. */
  fence: 'secrets' | 'sandbox' | 'off';
  /** One line, with the fix, when the target cannot fence as configured. */
  warning?: string;
  /** Set when the target cannot run anything at all (a sandbox without bubblewrap). */
  error?: string;
}

export interface ExecutionTarget {
  readonly name: string;
  readonly kind: TargetKind;
  /** Starts a process group on the target; it throws (before starting anything) when the target cannot run it. */
  spawn(command: string, args: readonly string[], opts: TargetSpawnOptions): ChildGroup;
  /** Stops a group this target started, here or left by a previous hub (TERM, grace, KILL). True once it is gone. */
  stopGroup(pgid: number, graceMs?: number): Promise<boolean>;
  status(): TargetStatus;
}

export interface TargetContext {
  /** baton's own dirs (config, connections, state): empty in a fenced agent's view. */
  privateDirs: readonly string[];
  /** The authorised roots as they are now: a sandbox hides every one its task does not work in. */
  roots: () => readonly string[];
}

/** Processes started as they always were: no fence (a user's explicit `fence: false`, and the library default). */
export const UNFENCED: ExecutionTarget = {
  name: LOCAL_TARGET_NAME,
  kind: 'local',
  spawn: (command, args, opts) => spawnGroup(command, args, { cwd: opts.cwd, env: opts.env, stdio: opts.stdio }),
  stopGroup: (pgid, graceMs) => stopGroup(pgid, graceMs),
  status: () => ({ name: LOCAL_TARGET_NAME, kind: 'local', fence: 'off' }),
};

export class TargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetError';
  }
}

export function createTarget(name: string, config: TargetConfig, ctx: TargetContext): ExecutionTarget {
  if (config.kind === 'local' && config.fence === false) {
    return { ...UNFENCED, name, status: () => ({ name, kind: 'local', fence: 'off' }) };
  }
  return new FencedTarget(name, config, ctx);
}

class FencedTarget implements ExecutionTarget {
  readonly name: string;
  readonly kind: TargetKind;
  private readonly config: TargetConfig;
  private readonly ctx: TargetContext;

  constructor(name: string, config: TargetConfig, ctx: TargetContext) {
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
    const fence = bwrapArgs({ hidden, writable, readOnlyHost: sandbox, privateTmp: sandbox, cwd });
    const group = spawnGroup(a.bwrap, [...fence, command, ...args], { cwd, env: opts.env, stdio: opts.stdio });
    return agentExit(group);
  }

  stopGroup(pgid: number, graceMs?: number): Promise<boolean> {
    return stopGroup(pgid, graceMs);
  }
}

/**
 * The group with `exited` meaning the agent's exit, not bubblewrap's: the outer bwrap that leads the group dies at
 * once of an interrupt or TERM sent to the group, while the agent it runs handles the same signal and stops in its
 * own time. Only then is the group gone; its exit is observed by probing (no exit event reaches baton from inside).
 */
function agentExit(group: ChildGroup): ChildGroup {
  if (group.pgid <= 0) return group;
  const exited = group.exited.then(async (exit: GroupExit) => {
    if (exit.signal) await groupGone(group.pgid);
    return exit;
  });
  return {
    child: group.child,
    pgid: group.pgid,
    exited,
    signal: (sig) => group.signal(sig),
    stop: (graceMs) => group.stop(graceMs),
  };
}

async function groupGone(pgid: number): Promise<void> {
  let delay = 5;
  while (isGroupAlive(pgid)) {
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 100);
  }
}
