// Workspace locks (rule: workspace-locks): tasks whose directories are the same (after realpath), share a git work
// tree, or nest inside one another run one at a time, in admission order. A lock is released only after the task's
// process group exited. The same queue applies the run caps (rule: run-caps, caps.ts): a round whose workspace is free
// still waits while a cap is reached, and keeps its place ahead of later rounds in its workspace.
import { sep } from 'node:path';
import type { CapWait, RunGate } from './caps.ts';

export interface LockScope {
  /** Realpath of the directory the agent runs in. */
  dir: string;
  /** Realpath of the git work tree containing it, when there is one. */
  worktree: string | null;
}

function within(a: string, b: string): boolean {
  return a === b || a.startsWith(b.endsWith(sep) ? b : b + sep);
}

export function scopesConflict(a: LockScope, b: LockScope): boolean {
  if (within(a.dir, b.dir) || within(b.dir, a.dir)) return true;
  if (a.worktree && b.worktree && a.worktree === b.worktree) return true;
  return false;
}

/** Why a queued round waits, and its place: 1 is the next round the queue looks at. */
export type QueueWait = { position: number } & ({ waitingFor: 'workspace'; why: string } | CapWait);

const WORKSPACE_WAIT = {
  waitingFor: 'workspace',
  why: 'an earlier round in the same directory or git work tree runs or waits (workspace lock)',
} as const;

interface Waiting {
  id: string;
  /** null: the round needs no workspace lock (its own worktree), only a run slot. */
  scope: LockScope | null;
  agent: string;
  grant: () => void;
}

/** FIFO admission: a waiter starts when it conflicts with no holder and no earlier waiter, and no run cap holds it. */
export class WorkspaceLocks {
  private readonly held = new Map<string, { scope: LockScope | null; agent: string }>();
  private readonly queue: Waiting[] = [];
  private readonly gate: RunGate | undefined;
  /** Why each waiter did not start at the last pass over the queue. */
  private readonly reasons = new Map<string, QueueWait>();

  constructor(gate?: RunGate) {
    this.gate = gate;
  }

  /** Resolves true when the lock for `scope` (and a run slot) is granted to `id`, false if `signal` aborts first. */
  acquire(id: string, scope: LockScope | null, signal?: AbortSignal, agent = ''): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => {
        this.withdraw(id);
        resolve(false);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push({
        id,
        scope,
        agent,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        },
      });
      this.pump();
    });
  }

  /** Withdraws a waiter that was never granted (e.g. a queued task was cancelled). */
  withdraw(id: string): boolean {
    const i = this.queue.findIndex((w) => w.id === id);
    if (i === -1) return false;
    this.queue.splice(i, 1);
    this.pump();
    return true;
  }

  release(id: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    this.gate?.give(h.agent);
    this.pump();
  }

  /** Where a waiting round stands and why it waits; undefined when it is not waiting here. */
  waiting(id: string): QueueWait | undefined {
    return this.reasons.get(id);
  }

  /** Rounds waiting here, and how many of them only a run cap holds back. */
  counts(): { queued: number; capped: number } {
    let capped = 0;
    for (const r of this.reasons.values()) if (r.waitingFor !== 'workspace') capped++;
    return { queued: this.queue.length, capped };
  }

  private pump(): void {
    this.reasons.clear();
    const blockers: LockScope[] = [];
    for (const h of this.held.values()) if (h.scope) blockers.push(h.scope);
    for (let i = 0; i < this.queue.length; ) {
      const w = this.queue[i]!;
      const scope = w.scope;
      const conflict = scope !== null && blockers.some((b) => scopesConflict(b, scope));
      const capped = conflict ? undefined : this.gate?.blocked(w.agent);
      if (conflict || capped) {
        // A held-back waiter keeps its place: later rounds in its workspace stay behind it.
        if (scope) blockers.push(scope);
        this.reasons.set(w.id, { position: i + 1, ...(capped ?? WORKSPACE_WAIT) });
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      this.held.set(w.id, { scope, agent: w.agent });
      this.gate?.take(w.agent);
      if (scope) blockers.push(scope);
      w.grant();
    }
  }
}
