// Git snapshots around each round (TE-10) and worktree isolation (TE-9). baton only reads repositories and adds
// worktrees; it never commits, merges, resets, reverts or cleans.
import { execFile, execFileSync } from 'node:child_process';
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

/** Synchronous variant for admission, where the lock queue position must be taken in the same tick. */
export function gitToplevelSync(dir: string): string | null {
  try {
    const out = execFileSync('git', ['-C', dir, 'rev-parse', '--show-toplevel'], {
      timeout: GIT_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' },
    });
    return out.toString('utf8').trim() || null;
  } catch {
    return null;
  }
}

export async function snapshot(dir: string): Promise<GitSnapshot> {
  const top = await gitToplevel(dir);
  if (!top) return { git: false, reason: 'not a git work tree' };
  const head = await git(dir, ['rev-parse', '--verify', '-q', 'HEAD']).then(
    (s) => s.trim() || null,
    () => null,
  );
  const branch = await git(dir, ['symbolic-ref', '--short', '-q', 'HEAD']).then(
    (s) => s.trim() || null,
    () => null,
  );
  const porcelain = await git(dir, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  const entries = porcelain.split('\0').filter(Boolean);
  const dirty: { path: string; status: string }[] = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const status = e.slice(0, 2);
    // A rename/copy entry is followed by its source path.
    if (status[0] === 'R' || status[0] === 'C') i++;
    dirty.push({ path: e.slice(3), status: status.trim() || status });
  }
  let files = 0;
  let insertions = 0;
  let deletions = 0;
  if (head) {
    for (const line of (await git(dir, ['diff', '--numstat', 'HEAD'])).split('\n')) {
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

/** Adds a new worktree at `path` on a new branch starting at HEAD of the repository containing `repoDir`. */
export async function addWorktree(repoDir: string, path: string, branch: string): Promise<void> {
  await git(repoDir, ['worktree', 'add', '-q', '-b', branch, path, 'HEAD']);
}
