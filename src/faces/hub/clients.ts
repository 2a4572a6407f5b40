// `baton connect`: how each MCP client registers baton through its own CLI, plus exactly the one setting
// that client needs to call baton's tools without asking. Plans are data (printable with --print), run by runPlan,
// which puts every touched file back when a step fails. No token is ever written: each client reads it from an env var.
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { captureCommand } from '../../lib/capture.ts';
import {
  ConnectError,
  home,
  objectAt,
  parseJsonObject,
  readIfExists,
  setTomlTableKey,
  writeUserFile,
} from './client-files.ts';
import type { ClientName } from './client-names.ts';

export { ConnectError };

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
