// `baton disconnect`, and what doctor reads: which baton entries a client has, read from the client's own files, and
// the plan that takes out exactly what `connect` put in.
import { join } from 'node:path';
import {
  ConnectError,
  home,
  objectAt,
  parseJsonObject,
  readIfExists,
  readJsonFile,
  tomlString,
  tomlTable,
} from './client-files.ts';
import type { ClientName } from './client-names.ts';
import type { Plan, PlanContext, Scope, Step } from './clients.ts';

/** Where a client has a baton entry, read from the client's own files (no client CLI is run). */
export interface Registration {
  client: ClientName;
  scope: Scope;
  /** The entry's name: `baton`, or `baton-<provider>`. */
  name: string;
  file: string;
  /** The hub endpoint it calls (http entries). */
  url?: string;
  /** The environment variable it reads its token from (http entries). */
  tokenVar?: string;
}

/** The files a client keeps its MCP servers in, per scope (the same ones connect writes through the client). */
function registryFiles(client: ClientName, scope: Scope, ctx: Pick<PlanContext, 'cwd' | 'env'>): string[] {
  const h = home(ctx.env);
  switch (client) {
    case 'claude':
      if (scope === 'project') return [join(ctx.cwd, '.mcp.json')];
      return [ctx.env.CLAUDE_CONFIG_DIR ? join(ctx.env.CLAUDE_CONFIG_DIR, '.claude.json') : join(h, '.claude.json')];
    case 'codex':
      return scope === 'user' ? [join(ctx.env.CODEX_HOME || join(h, '.codex'), 'config.toml')] : [];
    case 'gemini':
      return [join(scope === 'user' ? h : ctx.cwd, '.gemini', 'settings.json')];
    case 'opencode': {
      const dir = scope === 'user' ? join(ctx.env.XDG_CONFIG_HOME || join(h, '.config'), 'opencode') : ctx.cwd;
      const names =
        scope === 'user' ? ['opencode.json', 'opencode.jsonc', 'config.json'] : ['opencode.json', 'opencode.jsonc'];
      return names.map((f) => join(dir, f));
    }
  }
}

function claudeSettingsFile(scope: Scope, ctx: Pick<PlanContext, 'cwd' | 'env'>): string {
  const configDir = ctx.env.CLAUDE_CONFIG_DIR || join(home(ctx.env), '.claude');
  return scope === 'user' ? join(configDir, 'settings.json') : join(ctx.cwd, '.claude', 'settings.local.json');
}

function entryIn(
  json: Record<string, unknown> | undefined,
  key: string,
  name: string,
): Record<string, unknown> | undefined {
  const servers = json?.[key];
  if (!servers || typeof servers !== 'object') return undefined;
  const e = (servers as Record<string, unknown>)[name];
  return e && typeof e === 'object' ? (e as Record<string, unknown>) : undefined;
}

/** The variable named in an `Authorization: Bearer ${VAR}` (or OpenCode's `{env:VAR}`) header. */
function headerTokenVar(entry: Record<string, unknown>): string | undefined {
  const headers = entry.headers as Record<string, unknown> | undefined;
  const auth = headers && typeof headers === 'object' ? headers.Authorization : undefined;
  if (typeof auth !== 'string') return undefined;
  return /Bearer \$\{(\w+)\}|Bearer \{env:(\w+)\}/.exec(auth)?.slice(1).find(Boolean);
}

/** Every baton entry named in `names` that `client` has in `scope`. */
export function findRegistrations(
  client: ClientName,
  scope: Scope,
  names: readonly string[],
  ctx: Pick<PlanContext, 'cwd' | 'env'>,
): Registration[] {
  const found: Registration[] = [];
  for (const file of registryFiles(client, scope, ctx)) {
    if (client === 'codex') {
      const text = readIfExists(file);
      if (text === undefined) continue;
      for (const name of names) {
        const lines = tomlTable(text, `mcp_servers.${name}`);
        if (!lines) continue;
        found.push({
          client,
          scope,
          name,
          file,
          url: tomlString(lines, 'url'),
          tokenVar: tomlString(lines, 'bearer_token_env_var'),
        });
      }
      continue;
    }
    const json = readJsonFile(file);
    for (const name of names) {
      const entry = entryIn(json, client === 'opencode' ? 'mcp' : 'mcpServers', name);
      if (!entry) continue;
      const url = [entry.url, entry.httpUrl].find((u): u is string => typeof u === 'string');
      found.push({ client, scope, name, file, url, tokenVar: headerTokenVar(entry) });
    }
  }
  return found;
}

/** An edit taking `key.name` out of a JSON file, and `key` with it when nothing else is left in it. */
function removeJsonEntry(file: string, key: string, name: string): Step {
  return {
    kind: 'edit',
    path: file,
    why: `remove ${key}.${name}`,
    checkFirst: true,
    apply: (current) => {
      const json = parseJsonObject(file, current);
      const servers = objectAt(file, json, key);
      delete servers[name];
      if (!Object.keys(servers).length) delete json[key];
      return `${JSON.stringify(json, null, 2)}\n`;
    },
  };
}

/** The names `connect` registers: the hub's `baton`, and `baton-<provider>` for each stdio provider. */
export function batonEntryNames(providers: readonly string[]): string[] {
  return ['baton', ...providers.map((p) => `baton-${p}`)];
}

/**
 * `baton disconnect`: takes out exactly what `connect` put in, for each name that is there: the entry (through the
 * client's CLI where it has a remove that works, else by a careful edit) and the permission setting connect added.
 * Nothing registered gives a plan with no steps.
 */
export function planDisconnect(client: ClientName, scope: Scope, names: readonly string[], ctx: PlanContext): Plan {
  if (client === 'codex' && scope !== 'user') {
    throw new ConnectError(
      'Codex keeps MCP servers in its user config ($CODEX_HOME/config.toml) only; there is no project scope to disconnect',
    );
  }
  const regs = findRegistrations(client, scope, names, ctx);
  const steps: Step[] = [];
  const files = new Set(registryFiles(client, scope, ctx));
  for (const r of regs) {
    switch (client) {
      case 'claude':
        steps.push({
          kind: 'exec',
          argv: [ctx.bin, 'mcp', 'remove', '--scope', scope, r.name],
          why: `remove "${r.name}"`,
        });
        break;
      case 'codex':
        // Codex drops the whole [mcp_servers.NAME] table, default_tools_approval_mode with it.
        steps.push({
          kind: 'exec',
          argv: [ctx.bin, 'mcp', 'remove', r.name],
          why: `remove "${r.name}" and its approval setting`,
        });
        break;
      case 'gemini':
        // Without --scope, `gemini mcp remove` looks in the project settings only; with `--scope project` Gemini CLI
        // 0.61.0 does not find an entry there either (it answers "not found" and exits 0). So the user scope goes
        // through the CLI and the project scope is a careful edit.
        steps.push(
          scope === 'user'
            ? {
                kind: 'exec',
                argv: [ctx.bin, 'mcp', 'remove', '--scope', scope, r.name],
                why: `remove "${r.name}" (its trust goes with it)`,
              }
            : removeJsonEntry(r.file, 'mcpServers', r.name),
        );
        break;
      case 'opencode':
        // OpenCode has no `mcp remove`.
        steps.push(removeJsonEntry(r.file, 'mcp', r.name));
        break;
    }
  }
  if (client === 'claude') {
    // The allow rule is looked for on its own: it may outlive an entry removed by hand with `claude mcp remove`.
    const settings = claudeSettingsFile(scope, ctx);
    const allow = (readJsonFile(settings)?.permissions as { allow?: unknown } | undefined)?.allow;
    const rules = Array.isArray(allow) ? names.map((n) => `mcp__${n}`).filter((rule) => allow.includes(rule)) : [];
    if (rules.length) {
      files.add(settings);
      steps.push({
        kind: 'edit',
        path: settings,
        why: `remove ${rules.map((rule) => `"${rule}"`).join(', ')} from permissions.allow`,
        checkFirst: true,
        apply: (current) => {
          const json = parseJsonObject(settings, current);
          const permissions = objectAt(settings, json, 'permissions');
          const list = permissions.allow;
          if (!Array.isArray(list)) throw new ConnectError(`${settings}: permissions.allow is not a list`);
          permissions.allow = list.filter((x) => !rules.includes(x));
          // Only what connect could have created is dropped, and only when nothing else is left in it.
          if (!(permissions.allow as unknown[]).length) delete permissions.allow;
          if (!Object.keys(permissions).length) delete json.permissions;
          return `${JSON.stringify(json, null, 2)}\n`;
        },
      });
    }
  }
  return { client, scope, steps, files: [...files] };
}
