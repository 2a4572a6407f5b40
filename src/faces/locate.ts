// Where baton keeps its per-user config, client snippets and state: one resolver that every command uses,
// so `baton tasks` run from any directory finds the same hub that `baton start` started.
//
// Precedence: --config FILE, then $BATON_CONFIG, then $BATON_HOME (config.json, connections/, state/ inside it), then
// the platform's user dirs — Linux/other: $XDG_CONFIG_HOME/baton (or ~/.config/baton) for the config and snippets and
// $XDG_STATE_HOME/baton (or ~/.local/state/baton) for the store, logs and lease; macOS: ~/Library/Application
// Support/baton for all three. An explicit config file keeps the layout it always had: connections/ and state/ beside it.
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { realish } from '../lib/paths.ts';

export type LocationSource = 'flag' | 'BATON_CONFIG' | 'BATON_HOME' | 'user';

export interface ConfigLocation {
  /** Absolute path of config.json. */
  configPath: string;
  /** Where `baton examples` writes snippets and tokens.env. */
  connectionsDir: string;
  /** The store, logs and lease, unless the config names its own `stateDir`. */
  stateDir: string;
  source: LocationSource;
}

export interface LocateOptions {
  /** The --config flag, if given. */
  flag?: string;
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  home?: string;
  cwd?: string;
}

/** An env var that is unset or empty counts as unset (a caller clearing it with `VAR=` means "not this"). */
function envPath(env: NodeJS.ProcessEnv, name: string, cwd: string): string | undefined {
  const v = env[name];
  return v ? resolve(cwd, v) : undefined;
}

/** XDG base dirs must be absolute; a relative value is ignored, as the spec says. */
function xdg(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const v = env[name];
  return v && isAbsolute(v) ? v : fallback;
}

function beside(configPath: string, source: LocationSource): ConfigLocation {
  const dir = dirname(configPath);
  return { configPath, connectionsDir: join(dir, 'connections'), stateDir: join(dir, 'state'), source };
}

/** The per-user location, ignoring --config and BATON_CONFIG. */
export function userLocation(opts: LocateOptions = {}): ConfigLocation {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const batonHome = envPath(env, 'BATON_HOME', cwd);
  if (batonHome) return beside(join(batonHome, 'config.json'), 'BATON_HOME');
  const home = opts.home ?? homedir();
  if ((opts.platform ?? process.platform) === 'darwin') {
    return beside(join(home, 'Library', 'Application Support', 'baton', 'config.json'), 'user');
  }
  const configDir = join(xdg(env, 'XDG_CONFIG_HOME', join(home, '.config')), 'baton');
  return {
    configPath: join(configDir, 'config.json'),
    connectionsDir: join(configDir, 'connections'),
    stateDir: join(xdg(env, 'XDG_STATE_HOME', join(home, '.local', 'state')), 'baton'),
    source: 'user',
  };
}

export function locateConfig(opts: LocateOptions = {}): ConfigLocation {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const explicit = opts.flag ? resolve(cwd, opts.flag) : envPath(env, 'BATON_CONFIG', cwd);
  const user = userLocation(opts);
  if (!explicit) return user;
  // Naming the user config explicitly (as `baton start` and the service unit do) must not move its state dir.
  if (explicit === user.configPath) return user;
  return beside(explicit, opts.flag ? 'flag' : 'BATON_CONFIG');
}

/** One line saying where the config was looked for, for "no config" messages. */
export function describeLocation(loc: ConfigLocation): string {
  switch (loc.source) {
    case 'flag':
      return `${loc.configPath} (from --config)`;
    case 'BATON_CONFIG':
      return `${loc.configPath} (from $BATON_CONFIG)`;
    case 'BATON_HOME':
      return `${loc.configPath} (from $BATON_HOME)`;
    case 'user':
      return `${loc.configPath} (the user config; set $BATON_HOME or pass --config to use another)`;
  }
}

/**
 * The dirs holding baton's own files for a config at `loc` whose `stateDir` key is `stateDir` (the config dir,
 * `connections/`, the state dir), as real paths: never a root, and empty in a fenced agent's view.
 */
export function ownDirs(
  loc: ConfigLocation,
  stateDir: string | undefined,
): { stateDirPath: string; privateDirs: string[] } {
  const stateDirPath = stateDir ? resolve(dirname(loc.configPath), stateDir) : loc.stateDir;
  const dirs = [dirname(loc.configPath), loc.connectionsDir, stateDirPath].map(realish);
  return { stateDirPath, privateDirs: [...new Set(dirs)] };
}
