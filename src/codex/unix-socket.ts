// Codex's Unix socket alias (rule: unix-socket-alias). Since 0.156.0 `codex app-server --listen unix://PATH` binds its
// socket in a private per-user directory, <realpath /tmp>/codex-daemon-<euid>, named by the SHA-256 of PATH (parent
// canonicalised), and publishes PATH as a symlink to it. These checks let a caller confirm an entry is Codex's own
// before connecting; they create, remove and connect to nothing.
import { createHash } from 'node:crypto';
import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, posix } from 'node:path';

export type CodexUnixSocketObservation = 'absent' | 'published';

export interface CodexUnixSocketOptions {
  /** Replaces the per-user daemon directory (fixtures). */
  daemonDirectory?: string;
}

const MESSAGES = {
  invalidPath: 'Codex Unix socket path must be a normalized absolute file path',
  invalidDaemonDirectory: 'Codex daemon socket directory must be a normalized absolute path',
  noEuid: 'Codex Unix socket inspection requires a POSIX effective user id',
  notAlias: 'Codex Unix socket path is not the alias Codex publishes',
  unsafeParent: 'Codex Unix socket parent directory lets other users replace its entries',
  stale: 'Codex Unix socket alias has no socket behind it',
  directoryNotPrivate: 'Codex Unix socket directory is not private to the current user',
  notOwnedSocket: 'Codex Unix socket is not a socket owned by the current user',
} as const;

const PRIVATE_DIRECTORY_MODE = 0o700;
const GROUP_OR_WORLD_WRITABLE = 0o022;
const STICKY = 0o1000;

function isNormalizedAbsolute(path: unknown, allowRoot: boolean): path is string {
  if (typeof path !== 'string' || !path.startsWith('/') || path.includes('\0')) return false;
  if (posix.normalize(path) !== path) return false;
  if (path === '/') return allowRoot;
  return !path.endsWith('/');
}

function checkInputs(socketPath: unknown, opts: CodexUnixSocketOptions | undefined): { euid: number } {
  if (!isNormalizedAbsolute(socketPath, false)) throw new Error(MESSAGES.invalidPath);
  if (opts?.daemonDirectory !== undefined && !isNormalizedAbsolute(opts.daemonDirectory, true)) {
    throw new Error(MESSAGES.invalidDaemonDirectory);
  }
  if (typeof process.geteuid !== 'function') throw new Error(MESSAGES.noEuid);
  return { euid: process.geteuid() };
}

async function daemonDirectoryFor(euid: number, opts: CodexUnixSocketOptions | undefined): Promise<string> {
  return opts?.daemonDirectory ?? posix.join(await realpath('/tmp'), `codex-daemon-${euid}`);
}

/** Where Codex binds the socket it publishes at `socketPath`. The socket's parent directory must exist. */
export async function codexUnixSocketTarget(socketPath: string, opts?: CodexUnixSocketOptions): Promise<string> {
  const { euid } = checkInputs(socketPath, opts);
  const canonical = posix.join(await realpath(dirname(socketPath)), basename(socketPath));
  const digest = createHash('sha256').update(canonical, 'utf8').digest('hex');
  return posix.join(await daemonDirectoryFor(euid, opts), digest);
}

async function lstatOrAbsent(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * 'absent' when nothing is at `socketPath`; 'published' only for Codex's own alias: a link owned by the effective user,
 * in a parent other users cannot rewrite, whose text is exactly the derived target, pointing at a socket the user owns
 * in the user's own 0700 directory. Every other entry throws.
 */
export async function observeCodexUnixSocket(
  socketPath: string,
  opts?: CodexUnixSocketOptions,
): Promise<CodexUnixSocketObservation> {
  const { euid } = checkInputs(socketPath, opts);
  const entry = await lstatOrAbsent(socketPath);
  if (!entry) return 'absent';
  if (!entry.isSymbolicLink() || entry.uid !== euid) throw new Error(MESSAGES.notAlias);

  const parent = await stat(dirname(socketPath));
  const parentOwnerOk = parent.uid === euid || parent.uid === 0;
  const parentWritableByOthers = (parent.mode & GROUP_OR_WORLD_WRITABLE) !== 0 && (parent.mode & STICKY) === 0;
  if (!parent.isDirectory() || !parentOwnerOk || parentWritableByOthers) throw new Error(MESSAGES.unsafeParent);

  const target = await codexUnixSocketTarget(socketPath, opts);
  if ((await readlink(socketPath)) !== target) throw new Error(MESSAGES.notAlias);

  const directory = await lstatOrAbsent(dirname(target));
  if (!directory) throw new Error(MESSAGES.stale);
  if (!directory.isDirectory() || directory.uid !== euid || (directory.mode & 0o777) !== PRIVATE_DIRECTORY_MODE) {
    throw new Error(MESSAGES.directoryNotPrivate);
  }
  const socket = await lstatOrAbsent(target);
  if (!socket) throw new Error(MESSAGES.stale);
  if (!socket.isSocket() || socket.uid !== euid) throw new Error(MESSAGES.notOwnedSocket);
  return 'published';
}
