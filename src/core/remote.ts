// A task on another machine (an ssh target, docs/targets.md): its dir is checked against that target's roots on that
// host, never against this machine's filesystem; its git snapshots and its worktree are made there, with the same
// no-repository-code settings as here (rules: roots-only, git-snapshots, repo-code-off, ssh-target).
import { relative } from 'node:path';
import type { ExecutionTarget, RemoteHost } from '../agents/targets/target.ts';
import { BatonError } from '../lib/errors.ts';
import { isWithin } from '../lib/paths.ts';
import { type GitSnapshot, snapshotOf } from './git.ts';
import type { LockScope } from './locks.ts';
import { REMOTE_SNAPSHOT_SCRIPT, REMOTE_WORKTREE_SCRIPT } from './snapshot-runners.ts';

export type RemoteTarget = ExecutionTarget & { remote: RemoteHost };

export const isRemote = (t: ExecutionTarget | undefined): t is RemoteTarget => t?.remote !== undefined;

/**
 * The real path of `cwd` on the host, its real roots, and the work tree holding it (found like findWorkTree here: the
 * nearest dir with a `.git` that is a repository dir or a gitfile). One shell, no git.
 */
const RESOLVE =
  'c=$(cd -P -- "$1" 2>/dev/null && pwd -P) || { echo nodir; exit 0; }; shift; ' +
  'printf "cwd %s\\n" "$c"; ' +
  'for r; do x=$(cd -P -- "$r" 2>/dev/null && pwd -P) && printf "root %s\\n" "$x"; done; ' +
  'd=$c; while :; do ' +
  'if [ -f "$d/.git/HEAD" ] || { [ -f "$d/.git" ] && [ "$(head -c 8 "$d/.git")" = "gitdir: " ]; }; then printf "tree %s\\n" "$d"; break; fi; ' +
  '[ "$d" = / ] && break; d=$(dirname -- "$d"); done';

const refusal = (code: 'invalid' | 'forbidden', message: string) => new BatonError(code, message);

/** Runs on the host; a connection that fails becomes a refusal naming the target. */
async function exec(target: RemoteTarget, script: string, args: readonly string[]) {
  try {
    return await target.remote.exec(script, args);
  } catch (err) {
    throw refusal('invalid', (err as Error).message);
  }
}

/**
 * Rule `roots-only` on the host: `cwd` resolved there must lie in one of the target's roots (resolved there too). The
 * real path and its work tree, or a refusal naming the target.
 */
export async function remoteCwd(target: RemoteTarget, cwd: string): Promise<{ real: string; tree: string | null }> {
  const where = `on target "${target.name}"`;
  if (!cwd.startsWith('/')) throw refusal('invalid', `cwd must be an absolute path, got "${cwd}"`);
  if (cwd.includes('\n')) throw refusal('invalid', `cwd must not contain a newline ${where}`);
  const r = await exec(target, RESOLVE, [cwd, ...target.remote.roots]);
  const lines = r.stdout.toString('utf8').split('\n');
  if (r.code !== 0 || lines[0] === 'nodir' || !lines[0]?.startsWith('cwd '))
    throw refusal('invalid', `cwd ${cwd} does not exist or is not a directory ${where}`);
  const real = lines[0].slice(4);
  const roots = lines.filter((l) => l.startsWith('root ')).map((l) => l.slice(5));
  const tree = lines.find((l) => l.startsWith('tree '))?.slice(5) ?? null;
  if (!roots.some((root) => isWithin(root, real)))
    throw refusal(
      'forbidden',
      `cwd ${cwd} is outside the roots of target "${target.name}" (${roots.join(', ') || target.remote.roots.join(', ')})`,
    );
  return { real, tree };
}

/** Why the task's dirs on the host are no longer the ones admitted (or no longer in a root), or undefined. */
export async function remoteStartRefusal(
  target: RemoteTarget,
  task: { cwd: string; workdir: string },
): Promise<string | undefined> {
  for (const dir of new Set([task.cwd, task.workdir])) {
    let real: string;
    try {
      // The worktree lies outside the roots by design: only its path is checked.
      real = dir === task.cwd ? (await remoteCwd(target, dir)).real : await remoteReal(target, dir);
    } catch (err) {
      return `${(err as Error).message}; nothing was run`;
    }
    if (real !== dir)
      return `the task's dir ${dir} on target "${target.name}" changed since the task was admitted (it now leads to ${real}); nothing was run`;
  }
  return undefined;
}

async function remoteReal(target: RemoteTarget, dir: string): Promise<string> {
  const r = await exec(target, 'cd -P -- "$1" 2>/dev/null && pwd -P', [dir]);
  const real = r.stdout.toString('utf8').replace(/\n$/, '');
  if (r.code !== 0 || !real) throw refusal('invalid', `the task's dir ${dir} is gone on target "${target.name}"`);
  return real;
}

/** The lock scope of a dir on the host: its paths prefixed with the target, so no local path ever conflicts with it. */
export async function remoteLockScope(target: RemoteTarget, dir: string): Promise<LockScope> {
  const { real, tree } = await remoteCwdUnchecked(target, dir);
  const at = (p: string) => `ssh:${target.name}:${p}`;
  return { dir: at(real), worktree: tree ? at(tree) : null };
}

async function remoteCwdUnchecked(target: RemoteTarget, dir: string) {
  const r = await exec(target, RESOLVE, [dir]);
  const lines = r.stdout.toString('utf8').split('\n');
  if (!lines[0]?.startsWith('cwd '))
    throw refusal('invalid', `the task's dir ${dir} is gone on target "${target.name}"`);
  return { real: lines[0].slice(4), tree: lines.find((l) => l.startsWith('tree '))?.slice(5) ?? null };
}

/** A git snapshot of `dir` on the host (rule: git-snapshots); a host that cannot be reached gives no snapshot. */
export async function remoteSnapshot(target: RemoteTarget, dir: string): Promise<GitSnapshot> {
  let r: { code: number; stdout: Buffer };
  try {
    r = await target.remote.exec(REMOTE_SNAPSHOT_SCRIPT, [dir]);
  } catch (err) {
    return { git: false, reason: (err as Error).message };
  }
  const nul = r.stdout.indexOf(0);
  if (nul === -1) return { git: false, reason: 'not a git work tree' };
  return snapshotOf({
    ok: r.code === 0,
    numstat: r.stdout.subarray(0, nul).toString('utf8'),
    status: r.stdout.subarray(nul + 1).toString('utf8'),
  });
}

/**
 * Task `id`'s worktree of the repository holding `cwd`, added on the host (rule: worktrees-outside), outside the
 * target's roots: the task's workdir in it.
 */
export async function remoteWorktree(target: RemoteTarget, cwd: string, id: string): Promise<string> {
  const r = await exec(target, REMOTE_WORKTREE_SCRIPT, [
    cwd,
    id,
    target.remote.worktreesDir ?? '',
    ...target.remote.roots,
  ]);
  const [first = '', top = '', path = ''] = r.stdout.toString('utf8').split('\n');
  const where = `on target "${target.name}"`;
  if (first === 'nogit')
    throw new Error(`isolation "worktree" needs a git repository, and ${cwd} is not in one ${where}`);
  if (first.startsWith('inroot '))
    throw new Error(`the worktrees dir ${where} lies inside the root ${first.slice(7)}; worktrees must be outside it`);
  if (first !== 'ok' || !path) throw new Error(`adding the worktree ${where} failed: ${first.replace(/^failed /, '')}`);
  const sub = relative(top, cwd);
  return sub ? `${path}/${sub}` : path;
}
