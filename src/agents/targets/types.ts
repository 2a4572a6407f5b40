// The shapes of the execution-target seam (target.ts makes the targets): what the engine and the adapters call.
import type { StdioOptions } from 'node:child_process';
import type { ChildGroup } from '../../lib/process-group.ts';
import type { TargetKind } from './config.ts';

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
  /**
   * `secrets`: baton's dirs fenced off; `sandbox`: that and a read-only host; `remote`: another machine, nothing of
   * this one in reach; `off`: nothing fenced.
   */
  fence: 'secrets' | 'sandbox' | 'remote' | 'off';
  /** An ssh target's `user@host:port`. */
  host?: string;
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
  /** Set on a target on another machine: its roots and how baton reaches the host. */
  readonly remote?: RemoteHost;
}

/** A process group on another machine: its id there and its leader's start time (to tell a reused id). */
export interface RemoteGroup {
  pgid: number;
  start: string | null;
}

/** What the engine does on another machine through a target: checks, git, and the groups its spawns started. */
export interface RemoteHost {
  /** The project dirs on that host a task may run in (as configured; resolved there). */
  readonly roots: readonly string[];
  /** Where worktree-isolated tasks get their worktrees on that host (unset: `~/.local/state/baton-worktrees`). */
  readonly worktreesDir?: string;
  /**
   * Runs `script` under the host's /bin/sh with `args` as $1…; a connection that fails (an unreachable host, a host
   * key that does not match) throws a TargetError naming the target and the SSH error.
   */
  exec(
    script: string,
    args: readonly string[],
    opts?: { timeoutMs?: number },
  ): Promise<{ code: number; stdout: Buffer; stderr: string }>;
  /** The remote group a local group of this target (its ssh client) started, once known; undefined: not one of its. */
  remoteGroup(localPgid: number): Promise<RemoteGroup | undefined> | undefined;
  /** The SSH error, when the connection dropped under that local group (not when baton stopped it). */
  connectionLost(localPgid: number): string | undefined;
  /** Stops a remote group, one a previous hub left included; true once it is gone. */
  stopRemoteGroup(group: RemoteGroup, graceMs?: number): Promise<boolean>;
  /** Ends the shared connection. */
  close(): Promise<void>;
}
