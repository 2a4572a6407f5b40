// The one writer of an isolated Codex config.toml. The agent kind and the Codex provider want different settings, but
// the file's shape is the same: top-level keys, then tables, then the operator's model provider, then the project
// paths marked untrusted (Codex would otherwise trust a thread's cwd and load its `.codex/config.toml`: rule
// `no-recursion`).

export type TomlScalar = string | number | boolean;

/** A TOML basic string (JSON's escapes are valid TOML escapes). */
export function tomlString(value: string): string {
  return JSON.stringify(value);
}

export function tomlValue(value: TomlScalar): string {
  return typeof value === 'string' ? tomlString(value) : String(value);
}

/** An operator-configured model provider, as `[model_providers.<id>]` (the agent config's `modelProvider`). */
export interface CodexModelProviderToml {
  id: string;
  name?: string;
  baseUrl: string;
  wireApi?: string;
  envKey?: string;
  requiresOpenaiAuth?: boolean;
  requestMaxRetries?: number;
  streamMaxRetries?: number;
  streamIdleTimeoutMs?: number;
}

export function providerTable(p: CodexModelProviderToml): string[] {
  const lines = [
    `[model_providers.${p.id}]`,
    `name = ${tomlString(p.name ?? p.id)}`,
    `base_url = ${tomlString(p.baseUrl)}`,
  ];
  lines.push(`wire_api = ${tomlString(p.wireApi ?? 'responses')}`);
  if (p.envKey) lines.push(`env_key = ${tomlString(p.envKey)}`);
  if (p.requiresOpenaiAuth !== undefined) lines.push(`requires_openai_auth = ${p.requiresOpenaiAuth}`);
  if (p.requestMaxRetries !== undefined) lines.push(`request_max_retries = ${p.requestMaxRetries}`);
  if (p.streamMaxRetries !== undefined) lines.push(`stream_max_retries = ${p.streamMaxRetries}`);
  if (p.streamIdleTimeoutMs !== undefined) lines.push(`stream_idle_timeout_ms = ${p.streamIdleTimeoutMs}`);
  return lines;
}

/** A key and its value; `undefined` entries are left out (so optional keys can sit in the list in order). */
type TomlEntry = readonly [key: string, value: TomlScalar] | undefined;

export interface CodexConfigToml {
  /** The comment on the file's first line: who wrote it and that it is rewritten. */
  comment: string;
  top: readonly TomlEntry[];
  /** `[name]` tables in order, each with its keys; `undefined` tables are left out. */
  tables: readonly (readonly [name: string, entries: readonly TomlEntry[]] | undefined)[];
  provider?: CodexModelProviderToml;
  untrustedProjects?: readonly string[];
}

export function renderCodexConfig(config: CodexConfigToml): string {
  const entries = (list: readonly TomlEntry[]) =>
    list.filter((e) => e !== undefined).map(([key, value]) => `${key} = ${tomlValue(value)}`);
  const lines = entries(config.top);
  for (const table of config.tables) if (table) lines.push('', `[${table[0]}]`, ...entries(table[1]));
  if (config.provider) lines.push('', ...providerTable(config.provider));
  for (const project of config.untrustedProjects ?? [])
    lines.push('', `[projects.${tomlString(project)}]`, 'trust_level = "untrusted"');
  return `# ${config.comment}\n${lines.join('\n')}\n`;
}
