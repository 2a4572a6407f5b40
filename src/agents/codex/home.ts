// The isolated CODEX_HOME of a Codex agent (rules: no-recursion, isolated-homes): a private directory under
// <stateDir>/homes/ holding a copy of the user's auth.json and a minimal config baton writes. One home per configured
// agent, so that Codex's thread store survives a daemon restart and `thread/resume` finds earlier threads; the user's
// own ~/.codex is never used directly.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { renderCodexConfig } from '../../codex/config-toml.ts';
import { mirrorAuthFile } from '../../lib/auth-mirror.ts';
import { ensurePrivateDir, PRIVATE_FILE_MODE, writePrivateFile } from '../../lib/private-fs.ts';
import type { CodexAgentConfig } from './config.ts';

export const AUTH_FILE = 'auth.json';
export const CONFIG_FILE = 'config.toml';

/**
 * The minimal config: no MCP servers, plugins/apps/hooks/sub-agents off, no update check, no history, no telemetry.
 * `untrustedProjects` are marked untrusted: Codex otherwise trusts a thread's cwd on its own and then loads the
 * repository's `.codex/config.toml`, whose MCP servers and hooks would reach the child (rule: no-recursion).
 */
export function minimalCodexConfig(config: CodexAgentConfig, untrustedProjects: readonly string[] = []): string {
  return renderCodexConfig({
    comment: 'Written by baton for an isolated Codex run; rewritten at every start.',
    top: [
      config.model ? ['model', config.model] : undefined,
      config.modelProvider ? ['model_provider', config.modelProvider.id] : undefined,
      ['approval_policy', 'never'],
      ['sandbox_mode', 'workspace-write'],
      ['check_for_update_on_startup', false],
      ['allow_login_shell', false],
    ],
    tables: [
      ['history', [['persistence', 'none']]],
      ['analytics', [['enabled', false]]],
      ['feedback', [['enabled', false]]],
      ['agents', [['enabled', false]]],
      [
        'features',
        [
          ['multi_agent', false],
          ['multi_agent_v2', false],
          ['apps', false],
          ['plugins', false],
          ['hooks', false],
          ['skill_mcp_dependency_install', false],
          ['shell_snapshot', false],
        ],
      ],
    ],
    provider: config.modelProvider,
    untrustedProjects,
  });
}

/** Untrusted project paths are kept across rewrites, so one session never drops another's (the home is shared). */
const UNTRUSTED_PROJECTS_FILE = 'baton-untrusted-projects.json';
export const MAX_UNTRUSTED_PROJECTS = 4096;

function rememberUntrustedProjects(home: string, add: readonly string[]): string[] {
  const path = join(home, UNTRUSTED_PROJECTS_FILE);
  let known: string[] = [];
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (Array.isArray(parsed)) known = parsed.filter((p): p is string => typeof p === 'string');
  } catch {}
  const merged = [...new Set([...known.filter((p) => !add.includes(p)), ...add])].slice(-MAX_UNTRUSTED_PROJECTS);
  writeIfChanged(path, JSON.stringify(merged));
  return merged;
}

/** Most sessions find the home as the last one left it: a read then costs less than a write, a chmod and a rename. */
function writeIfChanged(path: string, text: string): void {
  try {
    if ((statSync(path).mode & 0o777) === PRIVATE_FILE_MODE && readFileSync(path, 'utf8') === text) return;
  } catch {}
  writePrivateFile(path, text);
}

/** The cwd, its real path, and every ancestor of both: wherever Codex may look for a project root. */
export function projectPathsOf(cwd: string): string[] {
  const paths = new Set<string>();
  let real = cwd;
  try {
    real = realpathSync(cwd);
  } catch {}
  for (const start of [resolve(cwd), real]) {
    for (let p = start; ; p = dirname(p)) {
      paths.add(p);
      if (dirname(p) === p) break;
    }
  }
  return [...paths];
}

/** The user's own Codex home (source of auth.json). */
export function userCodexHome(config: CodexAgentConfig, env: NodeJS.ProcessEnv = process.env): string {
  return config.userCodexHome ?? env.CODEX_HOME ?? join(homedir(), '.codex');
}

export interface PreparedHome {
  dir: string;
  /** Copies a rotated login back to the user's auth.json under rule `isolated-homes`; true when it wrote. */
  writeBackAuth(): boolean;
}

/**
 * Creates (or refreshes) the agent's private home: 0700, config rewritten, auth.json mirrored from the user's home
 * (0600, removed when the user has none). The snapshot taken here decides a later write-back.
 */
export function prepareCodexHome(
  stateDir: string,
  agentName: string,
  config: CodexAgentConfig,
  opts: {
    cwd?: string;
    /** The home directory itself (default `<stateDir>/homes/codex-<agentName>`). */
    dir?: string;
    /** Renders config.toml (default the agent's minimal config) given the untrusted project paths. */
    renderConfig?: (untrustedProjects: readonly string[]) => string;
    /** Only rewrite the config; leave auth.json (and its snapshot) to whoever prepared the home first. */
    configOnly?: boolean;
  } = {},
): PreparedHome {
  const safeName = agentName.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  const dir = ensurePrivateDir(opts.dir ?? join(stateDir, 'homes', `codex-${safeName}`));
  const untrusted = rememberUntrustedProjects(dir, opts.cwd ? projectPathsOf(opts.cwd) : []);
  const render = opts.renderConfig ?? ((projects: readonly string[]) => minimalCodexConfig(config, projects));
  writeIfChanged(join(dir, CONFIG_FILE), render(untrusted));
  if (opts.configOnly) return { dir, writeBackAuth: () => false };
  const auth = mirrorAuthFile(join(userCodexHome(config), AUTH_FILE), join(dir, AUTH_FILE));
  return { dir, writeBackAuth: () => auth.writeBack() };
}
