// The Codex provider's isolated CODEX_HOME (rules: codex-provider, isolated-homes): a private tree `tmp/codex-homes/`
// in the launch directory, a copy of the user's auth.json with the conditional write-back of the agent's home module,
// and the minimal config rule `codex-provider` lists. Only the user's Fast-mode pair is ever read from their own
// config.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CodexModelProvider } from '../../../agents/codex/config.ts';
import { type PreparedHome, prepareCodexHome } from '../../../agents/codex/home.ts';
import { renderCodexConfig } from '../../../codex/config-toml.ts';
import { type CodexVersion, compareCodexVersions, parseCodexVersion } from '../../../codex/version.ts';
import { ensurePrivateDir } from '../../../lib/private-fs.ts';

/** `[agents] enabled = false` is a fatal parse error before this release (0.102–0.144) and needed from it on. */
export const AGENTS_TABLE_MINIMUM_VERSION = '0.145.0';
/** Codex releases from this one on have no `codex mcp-server`: baton serves the contract over `codex app-server`. */
export const APP_SERVER_MINIMUM_VERSION = '0.154.0';

export interface CodexHomeSettings {
  /** Default model and reasoning effort of new sessions. */
  model: string;
  effort: string;
  sandboxMode: string;
  approvalPolicy: string;
  workspaceNetwork: boolean;
  /** Both user settings present: top-level `service_tier = "fast"` and `[features].fast_mode = true`. */
  fastMode: boolean;
  /** The probed version; null (unparsable) means current. */
  version: CodexVersion | null;
  modelProvider?: CodexModelProvider;
}

/** True when the probed version needs (and tolerates) `[agents] enabled = false`; unparsable means current. */
export function wantsAgentsTable(version: CodexVersion | null): boolean {
  return version === null || compareCodexVersions(version, parseCodexVersion(AGENTS_TABLE_MINIMUM_VERSION)!) >= 0;
}

export function isAppServerCodex(version: CodexVersion | null): boolean {
  return version === null || compareCodexVersions(version, parseCodexVersion(APP_SERVER_MINIMUM_VERSION)!) >= 0;
}

/**
 * The isolated config.toml: exactly the rule `codex-provider` defaults, the operator's provider, and untrusted project
 * entries.
 */
export function renderProviderConfig(settings: CodexHomeSettings, untrustedProjects: readonly string[] = []): string {
  return renderCodexConfig({
    comment: 'Written by baton for the Codex provider; rewritten at every start.',
    top: [
      ['model', settings.model],
      ['model_reasoning_effort', settings.effort],
      settings.modelProvider ? ['model_provider', settings.modelProvider.id] : undefined,
      ['sandbox_mode', settings.sandboxMode],
      ['approval_policy', settings.approvalPolicy],
      ['web_search', 'cached'],
      ['check_for_update_on_startup', false],
      ['allow_login_shell', false],
      settings.fastMode ? ['service_tier', 'fast'] : undefined,
    ],
    tables: [
      ['history', [['persistence', 'none']]],
      ['analytics', [['enabled', false]]],
      ['feedback', [['enabled', false]]],
      ['sandbox_workspace_write', [['network_access', settings.workspaceNetwork]]],
      wantsAgentsTable(settings.version) ? ['agents', [['enabled', false]]] : undefined,
      [
        'features',
        [
          ['multi_agent', false],
          ['apps', false],
          ['plugins', false],
          ['hooks', false],
          ['skill_mcp_dependency_install', false],
          settings.fastMode ? ['fast_mode', true] : undefined,
        ],
      ],
    ],
    provider: settings.modelProvider,
    untrustedProjects,
  });
}

/**
 * Fast mode only when the user's config has both top-level `service_tier = "fast"` and `[features] fast_mode = true`.
 * A line scanner, not a TOML parser: anything partial, disabled, missing or unreadable leaves Standard mode.
 */
export function userWantsFastMode(userCodexHome: string): boolean {
  let text: string;
  try {
    text = readFileSync(join(userCodexHome, 'config.toml'), 'utf8');
  } catch {
    return false;
  }
  let table = '';
  let tier = false;
  let fast = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '').trim();
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      table = header[1]!;
      continue;
    }
    const kv = /^([A-Za-z0-9_.-]+)\s*=\s*(.+)$/.exec(line);
    if (!kv) continue;
    const [, key, value] = kv;
    if (table === '' && key === 'service_tier') tier = value === '"fast"' || value === "'fast'";
    if ((table === 'features' && key === 'fast_mode') || (table === '' && key === 'features.fast_mode'))
      fast = value === 'true';
  }
  return tier && fast;
}

/** `tmp/codex-homes/` in the launch directory, private (0700). */
export function codexHomesRoot(launchDir: string): string {
  const root = join(launchDir, 'tmp', 'codex-homes');
  ensurePrivateDir(root);
  return root;
}

/**
 * (Re)writes the home's config and snapshots the user's auth.json; `writeBackAuth` applies rule `isolated-homes`. With
 * `configOnly` (every call after the bridge's start) auth.json is left alone, so a login Codex rotated during one call
 * is not overwritten by the next call's copy before the bridge writes it back at exit.
 */
export function prepareProviderHome(
  dir: string,
  settings: CodexHomeSettings,
  userCodexHome: string,
  cwd?: string,
  configOnly = false,
): PreparedHome {
  return prepareCodexHome(
    dir,
    'provider',
    { userCodexHome },
    { dir, cwd, configOnly, renderConfig: (projects) => renderProviderConfig(settings, projects) },
  );
}
