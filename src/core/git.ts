// Git snapshots around each round (rule: git-snapshots) and worktree isolation (rule: workspace-locks). baton only
// reads repositories and adds worktrees; it never commits, merges, resets, reverts or cleans.
import { execFile } from 'node:child_process';
import { closeSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  filterOffArgs,
  GIT_TIMEOUT_MS,
  gitEnv,
  MAX_OUTPUT_BYTES,
  type RawSnapshot,
  repoFilterDrivers,
  SAFE_GIT_ARGS,
  type SnapshotRunners,
  statusAndNumstat,
} from './snapshot-runners.ts';

const run = promisify(execFile);
/** At most this many dirty files are listed in a snapshot; the count is always exact. */
export const SNAPSHOT_MAX_FILES = 500;

/** A git with the safe settings and environment (rule: repo-code-off). */
async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('git', [...SAFE_GIT_ARGS, '-C', cwd, ...args], {
    timeout: GIT_TIMEOUT_MS,
    maxBuffer: MAX_OUTPUT_BYTES,
    env: gitEnv(),
  });
  return stdout;
}

export type GitSnapshot =
  | { git: false; reason: string }
  | {
      git: true;
      head: string | null;
      branch: string | null;
      dirty: { path: string; status: string }[];
      dirtyCount: number;
      diffstat: { files: number; insertions: number; deletions: number };
    };

/**
 * The work tree containing `dir`, found the way git finds it but without starting git (a fork per admission costs
 * the daemon more than a few stats): the nearest dir, `dir` itself or an ancestor, whose `.git` is a repository dir
 * (it holds HEAD) or a gitfile (`gitdir: …`, a linked worktree or a submodule). Inside a `.git` dir or a bare
 * repository git names no work tree while this may name an enclosing one: a wider lock, never a narrower one.
 * Synchronous on purpose: a handful of stats cost microseconds, a trip through the thread pool each costs more.
 */
export function findWorkTree(dir: string): string | null {
  for (let d = resolve(dir); ; d = dirname(d)) {
    const dotGit = join(d, '.git');
    const st = statSync(dotGit, { throwIfNoEntry: false });
    if (
      st &&
      (st.isDirectory() ? statSync(join(dotGit, 'HEAD'), { throwIfNoEntry: false })?.isFile() : isGitFile(dotGit))
    )
      return d;
    if (dirname(d) === d) return null;
  }
}

function isGitFile(path: string): boolean {
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(8);
      return buf.subarray(0, readSync(fd, buf, 0, 8, 0)).toString('latin1') === 'gitdir: ';
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

export async function gitToplevel(dir: string): Promise<string | null> {
  try {
    return (await git(dir, ['rev-parse', '--show-toplevel'])).trim() || null;
  } catch {
    return null;
  }
}

/** `runners`, when given, run the gits (rule: snapshot-runners); without them a shell is spawned for this snapshot. */
export async function snapshot(dir: string, runners?: SnapshotRunners): Promise<GitSnapshot> {
  // One process instead of five in a row: status carries HEAD, branch and the dirty files; the diffstat against HEAD
  // is only used when status says there is a HEAD (an unborn branch has none, and that diff fails).
  // A dir in no work tree is answered from a few stats, without a process (git would say the same, slower; the
  // daemon's GIT_DIR never reaches baton's gits).
  if (findWorkTree(dir) === null) return { git: false, reason: 'not a git work tree' };
  let out: RawSnapshot;
  try {
    out = await (runners ? runners.run(dir) : statusAndNumstat(dir));
  } catch {
    return { git: false, reason: 'not a git work tree' };
  }
  return snapshotOf(out);
}

/** A snapshot from the output of its two gits (status and the diffstat against HEAD), here or on another host. */
export function snapshotOf(out: RawSnapshot): GitSnapshot {
  if (!out.ok) return { git: false, reason: 'not a git work tree' };
  const { head, branch, dirty } = parseStatusV2(out.status);
  let files = 0;
  let insertions = 0;
  let deletions = 0;
  if (head) {
    for (const line of out.numstat.split('\n')) {
      const m = /^(\d+|-)\t(\d+|-)\t/.exec(line);
      if (!m) continue;
      files++;
      if (m[1] !== '-') insertions += Number(m[1]);
      if (m[2] !== '-') deletions += Number(m[2]);
    }
  }
  return {
    git: true,
    head,
    branch,
    dirty: dirty.slice(0, SNAPSHOT_MAX_FILES),
    dirtyCount: dirty.length,
    diffstat: { files, insertions, deletions },
  };
}

/** Fields before the path in each porcelain v2 record kind (the path itself may contain spaces). */
const V2_FIELDS_BEFORE_PATH: Record<string, number> = { '1': 8, '2': 9, u: 10 };

/**
 * Parses `git status --porcelain=v2 --branch -z`. Status codes keep the v1 spelling callers already see (`M`, `R`,
 * `MM`, `??`): v2 writes an unchanged side as `.` where v1 wrote a space.
 */
export function parseStatusV2(out: string): {
  head: string | null;
  branch: string | null;
  dirty: { path: string; status: string }[];
} {
  let head: string | null = null;
  let branch: string | null = null;
  const dirty: { path: string; status: string }[] = [];
  const records = out.split('\0');
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (!r) continue;
    if (r.startsWith('# ')) {
      const [key, value = ''] = splitOnce(r.slice(2), ' ');
      if (key === 'branch.oid') head = value === '(initial)' ? null : value;
      else if (key === 'branch.head') branch = value === '(detached)' ? null : value;
      continue;
    }
    const kind = r[0]!;
    if (kind === '?') {
      dirty.push({ path: r.slice(2), status: '??' });
      continue;
    }
    const before = V2_FIELDS_BEFORE_PATH[kind];
    if (before === undefined) continue; // `!` (ignored) is not asked for; anything newer is skipped, not guessed at
    let at = 0;
    for (let f = 0; f < before; f++) at = r.indexOf(' ', at) + 1;
    const xy = r.slice(2, 4).replaceAll('.', ' ');
    dirty.push({ path: r.slice(at), status: xy.trim() || xy });
    // A rename or copy record is followed by its source path as a record of its own.
    if (kind === '2') i++;
  }
  return { head, branch, dirty };
}

function splitOnce(s: string, sep: string): [string, string?] {
  const i = s.indexOf(sep);
  return i === -1 ? [s] : [s.slice(0, i), s.slice(i + 1)];
}

/** Adds a new worktree at `path` on a new branch starting at HEAD of the repository containing `repoDir`. */
export async function addWorktree(repoDir: string, path: string, branch: string): Promise<void> {
  // The checkout runs no smudge filter the repository's config defines (rule: repo-code-off).
  const listing = await git(repoDir, ['config', '--show-scope', '--name-only', '--get-regexp', '^filter[.]']).catch(
    () => '',
  );
  const off = repoFilterDrivers(listing).flatMap(filterOffArgs);
  await git(repoDir, [...off, 'worktree', 'add', '-q', '-b', branch, path, 'HEAD']);
}

/** Moves the worktree at `from` (a linked worktree) to `to`, whose parent exists. */
export async function moveWorktree(from: string, to: string): Promise<void> {
  await git(from, ['worktree', 'move', from, to]);
}

/**
 * Undoes a worktree add that failed part way: its dir, its record in the repository and its branch go; each step
 * that finds nothing to undo is skipped.
 */
export async function removeWorktree(repoDir: string, path: string, branch: string): Promise<void> {
  await git(repoDir, ['worktree', 'remove', '--force', path]).catch(() => {});
  rmSync(path, { recursive: true, force: true });
  await git(repoDir, ['worktree', 'prune']).catch(() => {});
  await git(repoDir, ['branch', '-D', branch]).catch(() => {});
}
