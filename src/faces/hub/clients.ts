// `baton connect`: how each MCP client registers baton through its own CLI, plus exactly the one setting
// that client needs to call baton's tools without asking. Plans are data (printable with --print), run by runPlan,
// which puts every touched file back when a step fails. No token is ever written: each client reads it from an env var.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { captureCommand } from '../../lib/capture.ts';
import type { ClientName } from './client-names.ts';

export type Scope = 'user' | 'project';

export const CLIENT_INFO: Record<ClientName, { binary: string; label: string; install: string }> = {
  claude: { binary: 'claude', label: 'Claude Code', install: 'npm install -g @anthropic-ai/claude-code' },
  codex: { binary: 'codex', label: 'Codex', install: 'npm install -g @openai/codex' },
  gemini: { binary: 'gemini', label: 'Gemini CLI', install: 'npm install -g @google/gemini-cli' },
  opencode: { binary: 'opencode', label: 'OpenCode', install: 'npm install -g opencode-ai' },
};

/** What gets registered: the hub's HTTP endpoint (token from an env var) or a stdio command. */
export type Server =
  | { name: string; transport: 'http'; url: string; tokenVar: string }
  | { name: string; transport: 'stdio'; command: string[] };

export type Step =
  | { kind: 'exec'; argv: string[]; why: string; tolerateFailure?: boolean }
  | {
      kind: 'edit';
      path: string;
      why: string;
      /** New file text from the current one (undefined: no file yet); throws when the file cannot be edited safely. */
      apply(current: string | undefined): string;
      /** False when the file only exists after an earlier step (then it is not checked before running). */
      checkFirst: boolean;
    };

export interface Plan {
  client: ClientName;
  scope: Scope;
  steps: Step[];
  /** Files a step may change: snapshotted before running and restored if any step fails. */
  files: string[];
}

export interface PlanContext {
  /** Absolute path of the client's executable (or its bare name for --print). */
  bin: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export class ConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectError';
  }
}

const home = (env: NodeJS.ProcessEnv) => env.HOME || homedir();

export function planConnect(client: ClientName, scope: Scope, server: Server, ctx: PlanContext): Plan {
  switch (client) {
    case 'claude':
      return claudePlan(scope, server, ctx);
    case 'codex':
      return codexPlan(scope, server, ctx);
    case 'gemini':
      return geminiPlan(scope, server, ctx);
    case 'opencode':
      return opencodePlan(scope, server, ctx);
  }
}

// Claude Code: `claude mcp add` refuses a name that exists, so remove first (absent is fine). In -p mode it asks for
// permission for every MCP tool unless an allow rule names the server: `mcp__<name>` in permissions.allow. For the
// project scope the rule goes to .claude/settings.local.json: claude -p ignored it in the shared .claude/settings.json
// (measured with 2.1.332), and a grant is the user's own choice anyway.
function claudePlan(scope: Scope, server: Server, ctx: PlanContext): Plan {
  const configDir = ctx.env.CLAUDE_CONFIG_DIR || join(home(ctx.env), '.claude');
  const settings =
    scope === 'user' ? join(configDir, 'settings.json') : join(ctx.cwd, '.claude', 'settings.local.json');
  const registry =
    scope === 'user'
      ? ctx.env.CLAUDE_CONFIG_DIR
        ? join(ctx.env.CLAUDE_CONFIG_DIR, '.claude.json')
        : join(home(ctx.env), '.claude.json')
      : join(ctx.cwd, '.mcp.json');
  const add =
    server.transport === 'http'
      ? [
          'mcp',
          'add',
          '--scope',
          scope,
          '--transport',
          'http',
          server.name,
          server.url,
          '--header',
          `Authorization: Bearer \${${server.tokenVar}}`,
        ]
      : ['mcp', 'add', '--scope', scope, server.name, '--', ...server.command];
  const rule = `mcp__${server.name}`;
  return {
    client: 'claude',
    scope,
    files: [registry, settings],
    steps: [
      {
        kind: 'exec',
        argv: [ctx.bin, 'mcp', 'remove', '--scope', scope, server.name],
        why: `drop an earlier "${server.name}" entry, if any`,
        tolerateFailure: true,
      },
      { kind: 'exec', argv: [ctx.bin, ...add], why: `register "${server.name}"` },
      {
        kind: 'edit',
        path: settings,
        why: `add "${rule}" to permissions.allow, so Claude Code calls ${server.name}'s tools without asking`,
        checkFirst: true,
        apply: (current) => {
          const json = parseJsonObject(settings, current);
          const permissions = objectAt(settings, json, 'permissions');
          const allow = permissions.allow ?? [];
          if (!Array.isArray(allow)) throw new ConnectError(`${settings}: permissions.allow is not a list`);
          if (!allow.includes(rule)) allow.push(rule);
          permissions.allow = allow;
          return `${JSON.stringify(json, null, 2)}\n`;
        },
      },
    ],
  };
}

// Codex: `codex mcp add` replaces an entry of the same name in $CODEX_HOME/config.toml. `codex exec` runs with approval
// policy "never" and then refuses every MCP tool call unless the server's tools are pre-approved.
function codexPlan(scope: Scope, server: Server, ctx: PlanContext): Plan {
  if (scope !== 'user') {
    throw new ConnectError(
      'Codex keeps MCP servers in its user config ($CODEX_HOME/config.toml) only; run without --scope or with --scope user',
    );
  }
  const config = join(ctx.env.CODEX_HOME || join(home(ctx.env), '.codex'), 'config.toml');
  const add =
    server.transport === 'http'
      ? ['mcp', 'add', server.name, '--url', server.url, '--bearer-token-env-var', server.tokenVar]
      : ['mcp', 'add', server.name, '--', ...server.command];
  return {
    client: 'codex',
    scope,
    files: [config],
    steps: [
      { kind: 'exec', argv: [ctx.bin, ...add], why: `register "${server.name}" (replaces an earlier entry)` },
      {
        kind: 'edit',
        path: config,
        why: `set default_tools_approval_mode = "approve" under [mcp_servers.${server.name}], so \`codex exec\` may call its tools`,
        checkFirst: false,
        apply: (current) =>
          setTomlTableKey(
            config,
            current ?? '',
            `mcp_servers.${server.name}`,
            'default_tools_approval_mode',
            '"approve"',
          ),
      },
      // Codex refuses to start on a config it cannot read: this proves the edit left a valid file.
      { kind: 'exec', argv: [ctx.bin, 'mcp', 'get', server.name], why: 'check that Codex reads the result' },
    ],
  };
}

// Gemini CLI: `gemini mcp add` replaces an entry of the same name; without `--trust` it leaves the server's tools out
// of non-interactive runs altogether.
function geminiPlan(scope: Scope, server: Server, ctx: PlanContext): Plan {
  const settings =
    scope === 'user' ? join(home(ctx.env), '.gemini', 'settings.json') : join(ctx.cwd, '.gemini', 'settings.json');
  const add =
    server.transport === 'http'
      ? [
          'mcp',
          'add',
          '--scope',
          scope,
          '--transport',
          'http',
          '--trust',
          '--header',
          `Authorization: Bearer \${${server.tokenVar}}`,
          server.name,
          server.url,
        ]
      : ['mcp', 'add', '--scope', scope, '--trust', server.name, server.command[0]!, '--', ...server.command.slice(1)];
  return {
    client: 'gemini',
    scope,
    files: [settings],
    steps: [
      {
        kind: 'exec',
        argv: [ctx.bin, ...add],
        why: `register "${server.name}" as trusted (replaces an earlier entry); untrusted, its tools are left out`,
      },
    ],
  };
}

// OpenCode: `opencode mcp add NAME --url …` writes the user config (it has no project flag), so the project scope edits
// ./opencode.json directly. OpenCode calls MCP tools without asking by default: no permission setting is needed.
function opencodePlan(scope: Scope, server: Server, ctx: PlanContext): Plan {
  const entry =
    server.transport === 'http'
      ? { type: 'remote', url: server.url, headers: { Authorization: `Bearer {env:${server.tokenVar}}` } }
      : { type: 'local', command: server.command };
  if (scope === 'user') {
    const dir = join(ctx.env.XDG_CONFIG_HOME || join(home(ctx.env), '.config'), 'opencode');
    const add =
      server.transport === 'http'
        ? ['mcp', 'add', server.name, '--url', server.url, '--header', `Authorization=Bearer {env:${server.tokenVar}}`]
        : ['mcp', 'add', server.name, '--', ...server.command];
    return {
      client: 'opencode',
      scope,
      files: ['opencode.json', 'opencode.jsonc', 'config.json'].map((f) => join(dir, f)),
      steps: [{ kind: 'exec', argv: [ctx.bin, ...add], why: `register "${server.name}" (replaces an earlier entry)` }],
    };
  }
  const file = existsSync(join(ctx.cwd, 'opencode.jsonc'))
    ? join(ctx.cwd, 'opencode.jsonc')
    : join(ctx.cwd, 'opencode.json');
  return {
    client: 'opencode',
    scope,
    files: [file],
    steps: [
      {
        kind: 'edit',
        path: file,
        why: `set mcp.${server.name} (replaces an earlier entry)`,
        checkFirst: true,
        apply: (current) => {
          const json = parseJsonObject(file, current, { $schema: 'https://opencode.ai/config.json' });
          objectAt(file, json, 'mcp')[server.name] = entry;
          return `${JSON.stringify(json, null, 2)}\n`;
        },
      },
    ],
  };
}

// ------------------------------------------------------------ what is registered, and taking it out again

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

/** A JSON file's object, or undefined when it is missing or not plain JSON (the caller says what it could not read). */
function readJsonFile(path: string): Record<string, unknown> | undefined {
  const text = readIfExists(path);
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(plainJson(text).json) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
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

/** The lines of TOML table `[table]` (header excluded), or undefined when there is no such table. */
function tomlTable(text: string, table: string): string[] | undefined {
  const lines = text.split('\n');
  const headerRe = tomlHeaderRe(table);
  const start = lines.findIndex((l) => headerRe.test(l));
  if (start < 0) return undefined;
  let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  return lines.slice(start + 1, end);
}

function tomlString(lines: string[], key: string): string | undefined {
  const re = new RegExp(`^\\s*(?:${esc(key)}|"${esc(key)}")\\s*=\\s*"([^"]*)"`);
  for (const l of lines) {
    const m = re.exec(l);
    if (m) return m[1];
  }
  return undefined;
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

function parseJsonObject(
  path: string,
  text: string | undefined,
  fresh: Record<string, unknown> = {},
): Record<string, unknown> {
  if (text === undefined || !text.trim()) return fresh;
  const { json, comments } = plainJson(text);
  // Rewriting a file with comments would drop them: the user's words are not baton's to delete.
  if (comments)
    throw new ConnectError(`${path} has comments; remove them (or make this change by hand) and run this again`);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new ConnectError(`${path} is not plain JSON (${(err as Error).message}); fix it and run this again`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ConnectError(`${path}: not a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * JSON with comments (JSONC) as plain JSON: comments and trailing commas taken out, strings left as they are. OpenCode
 * writes a trailing comma into a config it edits, so its own files need this to be read at all.
 */
function plainJson(text: string): { json: string; comments: boolean } {
  let out = '';
  let comments = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      out += text.slice(start, i + 1);
    } else if (c === '/' && text[i + 1] === '/') {
      comments = true;
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      comments = true;
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
      out += ' ';
    } else if (c === ',' && isTrailingComma(text, i)) {
      // Dropped.
    } else out += c;
  }
  return { json: out, comments };
}

/** Whether the comma at `at` is followed, past white space, by the end of its object or array. */
function isTrailingComma(text: string, at: number): boolean {
  let j = at + 1;
  while (j < text.length && /\s/.test(text[j]!)) j++;
  return text[j] === '}' || text[j] === ']';
}

function objectAt(path: string, json: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = json[key] ?? {};
  if (typeof v !== 'object' || Array.isArray(v) || v === null)
    throw new ConnectError(`${path}: "${key}" is not an object`);
  json[key] = v;
  return v as Record<string, unknown>;
}

/**
 * Sets `key = value` in the TOML table `[table]` of a file Codex has just written (Codex writes each server as its own
 * `[mcp_servers.NAME]` table). Only that table's lines are touched; a missing table is an error.
 */
function setTomlTableKey(path: string, text: string, table: string, key: string, value: string): string {
  const lines = text.split('\n');
  const headerRe = tomlHeaderRe(table);
  const start = lines.findIndex((l) => headerRe.test(l));
  if (start < 0) throw new ConnectError(`${path}: no [${table}] table after registering it; nothing was changed`);
  let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  const keyRe = new RegExp(`^\\s*(?:${esc(key)}|"${esc(key)}")\\s*=`);
  const body = lines.slice(start + 1, end).filter((l) => !keyRe.test(l));
  return [...lines.slice(0, start + 1), `${key} = ${value}`, ...body, ...lines.slice(end)].join('\n');
}

function tomlHeaderRe(table: string): RegExp {
  const dotted = table.split('.');
  return new RegExp(
    `^\\s*\\[\\s*${dotted.map((p) => `(?:${esc(p)}|"${esc(p)}")`).join('\\s*\\.\\s*')}\\s*\\]\\s*(?:#.*)?$`,
  );
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The plan as shell lines and edit notes, for --print and for the report after running. */
export function describeStep(step: Step): string {
  if (step.kind === 'exec') return `${shellQuote(step.argv)}\n    # ${step.why}`;
  return `edit ${step.path}\n    # ${step.why}`;
}

export function shellQuote(argv: string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export interface StepOutcome {
  step: Step;
  ok: boolean;
  detail?: string;
}

/**
 * Runs a plan: checks every edit that can be checked first, runs the steps in order, and on any failure writes every
 * touched file back as it was (or removes it if it did not exist) before throwing.
 */
export async function runPlan(plan: Plan, env: NodeJS.ProcessEnv, cwd: string): Promise<StepOutcome[]> {
  for (const s of plan.steps) if (s.kind === 'edit' && s.checkFirst) s.apply(readIfExists(s.path));
  const snapshot = new Map<string, { text: string; mode: number } | null>();
  for (const f of new Set([...plan.files, ...plan.steps.flatMap((s) => (s.kind === 'edit' ? [s.path] : []))])) {
    snapshot.set(f, existsSync(f) ? { text: readFileSync(f, 'utf8'), mode: statSync(f).mode & 0o7777 } : null);
  }
  const outcomes: StepOutcome[] = [];
  try {
    for (const step of plan.steps) {
      if (step.kind === 'exec') {
        const r = await execCapture(step.argv, env, cwd);
        const detail = (r.stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' ');
        if (r.code !== 0 && !step.tolerateFailure)
          throw new ConnectError(`\`${shellQuote(step.argv)}\` failed (exit ${r.code}): ${detail || 'no output'}`);
        outcomes.push({ step, ok: r.code === 0, detail });
      } else {
        writeUserFile(step.path, step.apply(readIfExists(step.path)));
        outcomes.push({ step, ok: true });
      }
    }
  } catch (err) {
    for (const [f, was] of snapshot) {
      if (was === null) rmSync(f, { force: true });
      else writeUserFile(f, was.text, was.mode);
    }
    throw err instanceof ConnectError
      ? new ConnectError(`${err.message}\nnothing was changed (every file touched was put back)`)
      : err;
  }
  return outcomes;
}

/**
 * Writes one of the user's own client files atomically (temp file + rename) without changing a mode: an existing
 * file keeps its mode (or `mode`, when putting a file back), a new one gets the user's umask default, and missing
 * parent dirs are created as the umask says. baton's own files are private (lib/private-fs.ts); these are not baton's.
 */
function writeUserFile(path: string, text: string, mode?: number): void {
  const keep = mode ?? (existsSync(path) ? statSync(path).mode & 0o7777 : undefined);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, text, { flag: 'wx' });
    if (keep !== undefined) chmodSync(tmp, keep);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

const EXEC_TIMEOUT_MS = 120_000;
/** A client's `mcp add`/`remove` prints a line or two; only the last lines explain a failure. */
const EXEC_MAX_CHARS = 1024 * 1024;

async function execCapture(
  argv: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await captureCommand(argv, {
    env,
    cwd,
    timeoutMs: EXEC_TIMEOUT_MS,
    maxChars: EXEC_MAX_CHARS,
    stderr: true,
  });
  if (r.error) throw new ConnectError(`cannot run ${argv[0]}: ${r.error.message}`);
  // A command killed at the deadline has no exit code.
  return { code: r.code ?? 128, stdout: r.stdout, stderr: r.stderr ?? '' };
}
