// The bubblewrap launcher behind the `local` secrets fence and the `sandbox` target (Linux only). The agent sees the
// host as it is (or read-only, in a sandbox), except that baton's own dirs are empty directories, its /proc holds only
// its own processes (no reading the hub's environment), and a sandbox's writable paths are bound back in (rule:
// secrets-fence).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { isWithin } from '../../lib/paths.ts';

const BWRAP_PLACES = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];
/** How long the one-off check that bubblewrap can make its namespaces may take. */
const CHECK_TIMEOUT_MS = 10_000;

export type FenceAvailability = { ok: true; bwrap: string } | { ok: false; reason: string; fix: string };

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
  const probe = spawnSync(
    bwrap,
    [
      ...bwrapArgs({ hidden: [], writable: [], readOnlyHost: false, privateTmp: false, cwd: '/' }),
      '/bin/sh',
      '-c',
      ':',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], timeout: CHECK_TIMEOUT_MS, encoding: 'utf8' },
  );
  if (probe.status !== 0) {
    const line = (probe.stderr ?? '').trim().split('\n').at(-1)?.slice(0, 200) || probe.error?.message || 'failed';
    return {
      ok: false,
      reason: `bubblewrap cannot create namespaces here (${line})`,
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or the AppArmor profile for bwrap)',
    };
  }
  return { ok: true, bwrap };
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
  cwd: string;
}

/**
 * bubblewrap's arguments up to and including `--`. The outer bwrap process leads the group baton signals; it gets no
 * --die-with-parent: that turns the interrupt a CLI agent is sent on cancel into an immediate kill of the whole
 * namespace, while the agent, which receives the same signal through its group, should get its grace to stop. A hub
 * that dies leaves the group to the next start's reaping as before.
 */
export function bwrapArgs(layout: FenceLayout): string[] {
  const args = ['--unshare-pid'];
  args.push(layout.readOnlyHost ? '--ro-bind' : '--bind', '/', '/');
  args.push('--dev-bind', '/dev', '/dev', '--proc', '/proc');
  // Outer dirs before the ones inside them, so a later mount is not covered by an earlier one.
  const byDepth = (a: string, b: string) => a.split('/').length - b.split('/').length || a.localeCompare(b);
  // A dir that does not exist has nothing to hide (and a mount point made for it would be made on the host).
  const hidden = [...new Set(layout.hidden)].filter((d) => existsSync(d)).sort(byDepth);
  if (layout.privateTmp) hidden.unshift('/tmp');
  for (const dir of hidden) args.push('--tmpfs', dir);
  // A writable path is bound when the host is read-only, or when it lies inside a hidden dir (else it is there already).
  const writable = [...new Set(layout.writable)]
    .filter((p) => layout.readOnlyHost || hidden.some((h) => isWithin(h, p)))
    .sort(byDepth);
  for (const path of writable) args.push('--bind-try', path, path);
  args.push('--chdir', layout.cwd, '--');
  return args;
}
