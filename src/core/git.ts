// Git snapshots around each round (rule: git-snapshots) and worktree isolation (rule: workspace-locks). baton only
// reads repositories and adds worktrees; it never commits, merges, resets, reverts or cleans.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const GIT_TIMEOUT_MS = 30_000;
/** At most this many dirty files are listed in a snapshot; the count is always exact. */
export const SNAPSHOT_MAX_FILES = 500;

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', cwd, ...args], {
    timeout: GIT_TIMEOUT_MS,
    maxBuffer: 32 * 1024 * 1024,
    env: { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0' },
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

export async function gitToplevel(dir: string): Promise<string | null> {
  try {
    return (await git(dir, ['rev-parse', '--show-toplevel'])).trim() || null;
  } catch {
    return null;
  }
}

export async function snapshot(dir: string): Promise<GitSnapshot> {
  // Two processes at once instead of five in a row: status carries HEAD, branch and the dirty files; the diffstat
  // against HEAD is only used when status says there is a HEAD (an unborn branch has none, and that diff fails).
  const [status, numstat] = await Promise.allSettled([
    git(dir, ['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all']),
    git(dir, ['diff', '--numstat', 'HEAD']),
  ]);
  if (status.status === 'rejected') return { git: false, reason: 'not a git work tree' };
  const { head, branch, dirty } = parseStatusV2(status.value);
  let files = 0;
  let insertions = 0;
  let deletions = 0;
  if (head && numstat.status === 'fulfilled') {
    for (const line of numstat.value.split('\n')) {
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
  await git(repoDir, ['worktree', 'add', '-q', '-b', branch, path, 'HEAD']);
}
