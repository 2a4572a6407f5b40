// Whether Codex can start its Linux sandbox helper for a given home. Codex runs every sandboxed command through
// bubblewrap: the first `bwrap` on PATH, else the copy bundled with it. The bundled copy and a system bubblewrap from
// 0.9 on start the helper by path (`--argv0`); an older system bubblewrap (Debian 12 ships 0.8) finds it only as
// `codex-linux-sandbox` on PATH, through links Codex makes in its home at start, and Codex refuses to make them when
// the home lies under its temp directory (TMPDIR, else /tmp), which sandboxed commands may write. Then every sandboxed
// command fails before it starts; commands without a sandbox are unaffected.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';

/** Deadline of `bwrap --help`. */
const BWRAP_HELP_TIMEOUT_MS = 5_000;

function isUnder(dir: string, parent: string): boolean {
  const rel = relative(parent, dir);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** The first executable `bwrap` on `path`, as Codex finds it. */
export function findBwrap(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'bwrap');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** True when `bwrap --help` lists `--argv0` (bubblewrap 0.9 and later); false when it does not or cannot run. */
export function bwrapSetsArgv0(bwrap: string): boolean {
  const run = spawnSync(bwrap, ['--help'], { encoding: 'utf8', timeout: BWRAP_HELP_TIMEOUT_MS, stdio: 'pipe' });
  return `${run.stdout ?? ''}${run.stderr ?? ''}`.includes('--argv0');
}

/**
 * One line saying why Codex, run with `env` and home `codexHome`, cannot run sandboxed commands on this machine, or
 * undefined when it can (or when this is not Linux).
 */
export function codexSandboxHelperProblem(
  codexHome: string,
  env: Record<string, string | undefined>,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (platform !== 'linux') return undefined;
  const tempDir = env.TMPDIR || '/tmp';
  if (!isUnder(codexHome, tempDir) && !isUnder(real(codexHome), real(tempDir))) return undefined;
  const bwrap = findBwrap(env.PATH);
  if (!bwrap || bwrapSetsArgv0(bwrap)) return undefined;
  return (
    `Codex cannot run sandboxed commands: its home ${codexHome} is under the temp directory ${tempDir}, where Codex ` +
    `makes no helper links, and ${bwrap} (older than bubblewrap 0.9) needs them; move baton's state directory (or ` +
    `the launch directory) out of ${tempDir}, or install bubblewrap 0.9 or later`
  );
}
