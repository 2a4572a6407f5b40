// Workspace locks (rule: workspace-locks): tasks whose directories are the same (after realpath), share a git work
// tree, or nest inside one another run one at a time, in admission order. A lock is released only after the task's
// process group exited.
import { sep } from 'node:path';

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

interface Waiting {
  id: string;
  scope: LockScope;
  grant: () => void;
}

/** FIFO admission: a waiter starts when it conflicts with no holder and no earlier waiter. */
export class WorkspaceLocks {
  private readonly held = new Map<string, LockScope>();
  private readonly queue: Waiting[] = [];

  /** Resolves true when the lock for `scope` is granted to `id`, false if `signal` aborts first. */
  acquire(id: string, scope: LockScope, signal?: AbortSignal): Promise<boolean> {
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
    if (this.held.delete(id)) this.pump();
  }

  private pump(): void {
    const blockers: LockScope[] = [...this.held.values()];
    for (let i = 0; i < this.queue.length; ) {
      const w = this.queue[i]!;
      if (blockers.some((b) => scopesConflict(b, w.scope))) {
        blockers.push(w.scope);
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      this.held.set(w.id, w.scope);
      blockers.push(w.scope);
      w.grant();
    }
  }
}
