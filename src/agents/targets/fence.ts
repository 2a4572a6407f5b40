// The bubblewrap launcher behind the `local` secrets fence and the `sandbox` target (Linux only). The agent sees the
// host as it is (or read-only, in a sandbox), except that baton's own dirs are empty directories, its /proc holds only
// its own processes (no reading the hub's environment), and a sandbox's writable paths are bound back in (rule:
// secrets-fence).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { isWithin } from '../../lib/paths.ts';

const BWRAP_PLACES = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];
/** How long the one-off check that bubblewrap can make its namespaces may take. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * How a fenced command is launched: `argv(fence, command)` is the whole argv, its first element the file to spawn.
 * Where /usr/bin/env can reset signal dispositions, bwrap runs with interrupt and TERM ignored (a shell that ignores
 * them execs it; the disposition is inherited, and bwrap's own namespace init ignores them anyway) and `env
 * --default-signal` restores them for the agent. A signal to the group then reaches the agent alone, and bwrap, which
 * leads the group, exits when the agent does, with its status. Without that, bwrap dies of the signal at once and only
 * the group's disappearance says when the agent is done.
 */
export interface FenceLauncher {
  bwrap: string;
  /** bwrap outlives the agent's signals (see above). */
  shielded: boolean;
  argv(fence: readonly string[], command: string, args: readonly string[]): string[];
}

export type FenceAvailability = ({ ok: true } & FenceLauncher) | { ok: false; reason: string; fix: string };

const ENV = '/usr/bin/env';
const SHIELD = 'trap "" INT TERM; exec "$0" "$@"';

function launcher(bwrap: string, shielded: boolean): FenceLauncher {
  return {
    bwrap,
    shielded,
    argv: (fence, command, args) =>
      shielded
        ? ['/bin/sh', '-c', SHIELD, bwrap, ...fence, ENV, '--default-signal=INT,TERM', command, ...args]
        : [bwrap, ...fence, command, ...args],
  };
}

const checked = new Map<string, FenceAvailability>();

/**
 * Whether bubblewrap can fence a process on this machine: found, and able to create the namespaces (a container or a
 * kernel without unprivileged user namespaces refuses). Checked once per binary path and then remembered.
 */
export function fenceAvailability(bwrapPath?: string): FenceAvailability {
  const key = bwrapPath ?? '';
  let known = checked.get(key);
  if (!known) {
    known = checkFence(bwrapPath);
    checked.set(key, known);
  }
  return known;
}

function trial(l: FenceLauncher): { status: number | null; stderr: string; error?: Error } {
  const fence = bwrapArgs({ hidden: [], writable: [], readOnlyHost: false, privateTmp: false, cwd: '/' });
  const [file, ...rest] = l.argv(fence, '/bin/sh', ['-c', ':']);
  const r = spawnSync(file!, rest, {
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: CHECK_TIMEOUT_MS,
    encoding: 'utf8',
  });
  return { status: r.status, stderr: r.stderr ?? '', error: r.error };
}

function checkFence(bwrapPath: string | undefined): FenceAvailability {
  if (process.platform !== 'linux') {
    return {
      ok: false,
      reason: `${process.platform === 'darwin' ? 'macOS' : process.platform} has no bubblewrap`,
      fix: 'run the hub on Linux with bubblewrap for the fence; see docs/targets.md',
    };
  }
  const bwrap = bwrapPath ?? BWRAP_PLACES.find(executable);
  if (!bwrap || !executable(bwrap)) {
    return {
      ok: false,
      reason: `bubblewrap not found${bwrapPath ? ` at ${bwrapPath}` : ''}`,
      fix: 'install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)',
    };
  }
  const shielded = launcher(bwrap, true);
  if (executable(ENV) && trial(shielded).status === 0) return { ok: true, ...shielded };
  const plain = launcher(bwrap, false);
  const probe = trial(plain);
  if (probe.status !== 0) {
    const line = probe.stderr.trim().split('\n').at(-1)?.slice(0, 200) || probe.error?.message || 'failed';
    return {
      ok: false,
      reason: `bubblewrap cannot create namespaces here (${line})`,
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or the AppArmor profile for bwrap)',
    };
  }
  return { ok: true, ...plain };
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface FenceLayout {
  /** baton's own dirs: empty directories in the agent's view. */
  hidden: readonly string[];
  /** Writable in the agent's view even inside a hidden dir or a read-only host: its home, its work dir. */
  writable: readonly string[];
  /** The host read-only (sandbox) instead of as it is (the secrets fence alone). */
  readOnlyHost: boolean;
  /** An empty private /tmp. */
  privateTmp: boolean;
  /** Dirs under /tmp shown read-only in the private /tmp (where the agent's program is installed). */
  tmpInstalls?: readonly string[];
  cwd: string;
}

/**
 * The dirs directly under /tmp that hold the agent's program: its command when a path, and each PATH entry (where a
 * bare command, its interpreter and their libraries are found). A private /tmp would otherwise hide an agent
 * installed under /tmp, which then could not start.
 */
export function tmpInstalls(command: string, path: string | undefined): string[] {
  const out = new Set<string>();
  for (const p of [...(isAbsolute(command) ? [command] : []), ...(path ?? '').split(':')]) {
    if (!isAbsolute(p) || !isWithin('/tmp', p)) continue;
    const top = p.split('/').slice(0, 3).join('/');
    if (top !== '/tmp') out.add(top);
  }
  return [...out];
}

/**
 * bubblewrap's arguments up to and including `--`. The outer bwrap process leads the group baton signals; it gets no
 * --die-with-parent: without the signal shield that turns the interrupt a CLI agent is sent on cancel into an
 * immediate kill of the whole namespace, and a hub that dies leaves the group to the next start's reaping as before.
 */
export function bwrapArgs(layout: FenceLayout): string[] {
  const args = ['--unshare-pid'];
  args.push(layout.readOnlyHost ? '--ro-bind' : '--bind', '/', '/');
  args.push('--dev-bind', '/dev', '/dev', '--proc', '/proc');
  // Outer dirs before the ones inside them, so a later mount is not covered by an earlier one.
  const byDepth = (a: string, b: string) => a.split('/').length - b.split('/').length || a.localeCompare(b);
  // A dir that does not exist has nothing to hide (and a mount point made for it would be made on the host).
  const hidden = [...new Set(layout.hidden)].filter((d) => existsSync(d)).sort(byDepth);
  if (layout.privateTmp) {
    // The private /tmp first, then the installs shown in it, then baton's dirs (which may lie inside those).
    args.push('--tmpfs', '/tmp');
    for (const dir of layout.tmpInstalls ?? []) args.push('--ro-bind-try', dir, dir);
  }
  for (const dir of hidden) args.push('--tmpfs', dir);
  // A writable path is bound when the host is read-only, or when it lies inside a hidden dir (else it is there already).
  const writable = [...new Set(layout.writable)]
    .filter((p) => layout.readOnlyHost || hidden.some((h) => isWithin(h, p)))
    .sort(byDepth);
  for (const path of writable) args.push('--bind-try', path, path);
  args.push('--chdir', layout.cwd, '--');
  return args;
}
