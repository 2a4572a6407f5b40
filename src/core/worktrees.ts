// Worktree isolation (rules: workspace-locks, worktrees-outside): each such task gets a fresh git worktree on a branch
// `baton/<id>`, in a dir outside the state dir, every root and every baton dir, so no path of the agent's workspace is
// a relative step from baton's store, config or tokens.
import { realpathSync, statfsSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { isWithin, realish } from '../lib/paths.ts';
import { ensurePrivateDir } from '../lib/private-fs.ts';
import { addWorktree, gitToplevel, moveWorktree, removeWorktree } from './git.ts';
import { isDiskFull } from './store.ts';

/** Below this much free space right after a failed checkout, the failure is the full disk's (git does not say so). */
const FULL_DISK_BYTES = 1024 * 1024;

/**
 * Where worktrees go unless configured: beside the outermost of baton's own dirs that holds the state dir, named
 * `<that dir>-worktrees` (`~/.local/state/baton-worktrees`; with BATON_HOME, `<BATON_HOME>-worktrees`).
 */
export function defaultWorktreesDir(stateDir: string, privateDirs: readonly string[]): string {
  let base = realish(stateDir);
  for (;;) {
    const outer = privateDirs.find((p) => p !== base && isWithin(p, base));
    if (!outer) break;
    base = outer;
  }
  return join(dirname(base), `${basename(base)}-worktrees`);
}

/** The old place of a task's worktree, inside the state dir. */
export const oldWorktreesDir = (stateDir: string) => join(stateDir, 'worktrees');

/**
 * Adds task `id`'s worktree of the repository holding `cwd` under `base`, and returns the task's workdir in it (the
 * same subdir `cwd` is of its repository). `forbidden` are the dirs the worktree must lie outside of (roots, baton's
 * dirs). A failed add leaves no dir, worktree record or branch behind; one for want of space says disk full.
 */
export async function createWorktree(cwd: string, id: string, base: string, forbidden: readonly string[]) {
  const top = await gitToplevel(cwd);
  if (!top) throw new Error(`isolation "worktree" needs a git repository, and ${cwd} is not in one`);
  const inside = forbidden.find((dir) => isWithin(dir, base));
  if (inside) throw new Error(`the worktrees dir ${base} lies inside ${inside}; worktrees must be outside it`);
  ensurePrivateDir(base);
  const path = join(base, id);
  const branch = `baton/${id}`;
  try {
    await addWorktree(cwd, path, branch);
  } catch (err) {
    const full = isDiskFull(err) || freeBytes(base) < FULL_DISK_BYTES;
    await removeWorktree(cwd, path, branch);
    if (full)
      throw new Error(`disk full: no space left to add this task's worktree in ${base}; free some and run it again`);
    throw err;
  }
  const sub = relative(realpathSync(top), cwd);
  return sub ? join(path, sub) : path;
}

/**
 * A worktree made at the old place (inside the state dir) moved out to `base`: the new workdir, or undefined when
 * `workdir` is not at the old place. A move git refuses (a worktree with submodules) leaves it where it is.
 */
export async function moveOldWorktree(workdir: string, id: string, stateDir: string, base: string) {
  const old = join(oldWorktreesDir(stateDir), id);
  if (!isWithin(old, workdir)) return undefined;
  ensurePrivateDir(base);
  const path = join(base, id);
  await moveWorktree(old, path);
  const sub = relative(old, workdir);
  return sub ? join(path, sub) : path;
}

function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
