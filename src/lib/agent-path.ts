// Where baton looks for agent CLIs: the user's PATH, then the few places the CLIs' own installers and `npm i -g` put
// them (a service or a GUI-launched shell often has a PATH without them), and never baton's own package: npm scripts
// and npx put <package>/node_modules/.bin first on PATH, which holds the test copies of the agent CLIs in a checkout.
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: two levels above this file in both src/lib and dist/lib. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The running Node's own directory: npm's default global bin, and a `node` for agents' `#!/usr/bin/env node`. */
const NODE_BIN_DIR = dirname(process.execPath);

/**
 * The usual install places, searched after PATH (docs/install.md lists them): the native installers of Claude Code
 * (~/.local/bin, older ~/.claude/local) and OpenCode (~/.opencode/bin), the common user npm prefix (~/.npm-global),
 * npm's global bin ($NPM_CONFIG_PREFIX/bin, else next to the running node, npm's default prefix), Homebrew and
 * /usr/local/bin.
 */
function usualInstallDirs(env: NodeJS.ProcessEnv = process.env, home = homedir()): string[] {
  const npmPrefix = env.NPM_CONFIG_PREFIX || env.npm_config_prefix;
  return [
    join(home, '.local', 'bin'),
    join(home, '.claude', 'local'),
    join(home, '.opencode', 'bin'),
    join(home, '.npm-global', 'bin'),
    ...(npmPrefix ? [join(npmPrefix, 'bin')] : []),
    NODE_BIN_DIR,
    '/opt/homebrew/bin',
    '/usr/local/bin',
  ];
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Roots whose `node_modules/.bin` may hold baton's own dependencies: the package root and each directory above it. */
function ownBinDirs(root: string): Set<string> {
  const dirs = new Set<string>();
  for (let d = root; ; d = dirname(d)) {
    dirs.add(join(d, 'node_modules', '.bin'));
    if (dirname(d) === d) break;
  }
  return dirs;
}

/** True for a PATH entry that belongs to baton's own install rather than to the user. */
function isOwnBinDir(dir: string, root = PACKAGE_ROOT): boolean {
  const roots = [root, real(root)];
  for (const candidate of [resolve(dir), real(dir)]) {
    for (const r of roots) {
      if (candidate === r || candidate.startsWith(r + sep)) return true;
      if (ownBinDirs(r).has(candidate)) return true;
    }
  }
  return false;
}

/**
 * The search path for agent CLIs, as a PATH string: the entries of `pathEnv` minus baton's own package dirs, then
 * the usual install places not already listed. Relative entries are dropped (they would depend on the cwd).
 */
export function agentSearchPath(
  pathEnv = process.env.PATH ?? '',
  opts: { env?: NodeJS.ProcessEnv; home?: string; root?: string } = {},
): string {
  const seen = new Set<string>();
  const out: string[] = [];
  const add = (dir: string) => {
    if (!dir || !isAbsolute(dir) || seen.has(dir)) return;
    // The running Node's dir holds only `node` even when it is a devDependency inside a checkout.
    if (dir !== NODE_BIN_DIR && isOwnBinDir(dir, opts.root)) return;
    seen.add(dir);
    out.push(dir);
  };
  for (const dir of pathEnv.split(delimiter)) add(dir);
  for (const dir of usualInstallDirs(opts.env, opts.home)) add(dir);
  return out.join(delimiter);
}

function isExecutableFile(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Absolute path of an agent executable: a command with a slash as given (relative to the cwd), a bare name from
 * {@link agentSearchPath} of `pathEnv`; undefined when there is none.
 */
export function findAgentBinary(command: string, pathEnv = process.env.PATH ?? ''): string | undefined {
  if (command.includes('/')) {
    const abs = resolve(command);
    return isExecutableFile(abs) ? abs : undefined;
  }
  for (const dir of agentSearchPath(pathEnv).split(delimiter)) {
    if (dir && isExecutableFile(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

/**
 * The one wording for an agent binary baton cannot find (rule: missing-binary), used by doctor, the preflight, probes
 * and a round's error alike. `install` names what to install ("Claude Code"); without it the sentence says "it".
 */
export function binaryNotFound(command: string, install = 'it'): string {
  const where = command.includes('/') ? '' : ' on PATH or in the usual install places';
  return `binary "${command}" not found${where}; install ${install} or set its path in the agent's config`;
}

/** Why a binary could not be started: the wording above when it is missing (ENOENT), else the system's reason. */
export function spawnFailure(command: string, err: Error, install?: string): string {
  if ((err as NodeJS.ErrnoException).code === 'ENOENT') return binaryNotFound(command, install);
  return `cannot start "${command}": ${err.message}`;
}
