// The one environment every agent child gets (rule: no-recursion): an allowlist, so a variable nobody thought of (a
// baton token, a caller's MCP endpoint) stays behind by default. Generic process variables pass for every kind; each
// kind adds what its runtime genuinely reads (its login, provider and config variables). No BATON_* variable ever
// passes, whatever the allowlist, the caller's extra names or the values it sets say; nor does a credential baton
// itself holds (SECRET_ENV_NAMES), whatever the allowlist or the extra names say.
import { SECRET_ENV_NAMES } from './redact.ts';

export type ChildKind = 'acp' | 'claude' | 'gemini' | 'opencode' | 'codex';

export const CHILD_KINDS: readonly ChildKind[] = ['acp', 'claude', 'gemini', 'opencode', 'codex'];

const BATON_PREFIX = 'BATON_';
/** baton's own credentials from its environment (the attach face's server password and token): never an agent's. */
const BATON_SECRETS: ReadonlySet<string> = new Set(SECRET_ENV_NAMES);
const withheld = (name: string) => name.startsWith(BATON_PREFIX) || BATON_SECRETS.has(name);

interface Rule {
  names?: readonly string[];
  prefixes?: readonly string[];
  suffixes?: readonly string[];
  /** Matched by the rule's prefixes but still kept back (baton sets them itself, or they would change the run). */
  except?: readonly string[];
}

/**
 * What any process needs to run: its paths, user, locale, terminal, time zone, proxies and CA certificates; and the
 * user's Node compile-cache setting (rule: node-compile-cache), so a Node agent (Gemini CLI, a Node ACP agent, Codex's
 * launcher) reuses its compiled code instead of compiling it cold at every start. It names a cache dir, not a secret.
 */
const GENERIC: Rule = {
  names: [
    'PATH',
    'HOME',
    'USER',
    'LOGNAME',
    'SHELL',
    'LANG',
    'LANGUAGE',
    'TERM',
    'COLORTERM',
    'NO_COLOR',
    'TZ',
    'TMPDIR',
    'HTTPS_PROXY',
    'HTTP_PROXY',
    'ALL_PROXY',
    'NO_PROXY',
    'https_proxy',
    'http_proxy',
    'all_proxy',
    'no_proxy',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
    'NODE_EXTRA_CA_CERTS',
    'NODE_COMPILE_CACHE',
    'NODE_DISABLE_COMPILE_CACHE',
  ],
  prefixes: ['LC_'],
};

/** Credentials and endpoints of the model providers a multi-provider runtime (OpenCode, an ACP agent) may use. */
const MODEL_PROVIDERS: Rule = {
  names: ['GOOGLE_APPLICATION_CREDENTIALS'],
  prefixes: [
    'ANTHROPIC_',
    'OPENAI_',
    'GEMINI_',
    'GOOGLE_',
    'VERTEX_',
    'AWS_',
    'AZURE_',
    'OPENROUTER_',
    'DEEPSEEK_',
    'MISTRAL_',
    'GROQ_',
    'XAI_',
    'OLLAMA_',
  ],
  suffixes: ['_API_KEY'],
};

const CLAUDE: Rule = {
  // Bedrock and Vertex logins, and the CLI's own DISABLE_* switches (telemetry, autoupdater, error reporting).
  names: ['GOOGLE_APPLICATION_CREDENTIALS', 'IS_SANDBOX', 'MAX_THINKING_TOKENS'],
  prefixes: ['ANTHROPIC_', 'CLAUDE_', 'AWS_', 'CLOUD_ML_', 'VERTEX_', 'DISABLE_', 'XDG_'],
};

const GEMINI: Rule = {
  // Docker/Podman/seatbelt settings let the always-on sandbox start; GEMINI_SANDBOX is baton's to set (a value such as
  // "false" would switch the sandbox off behind the flag's back).
  names: ['SEATBELT_PROFILE', 'CONTAINER_HOST'],
  prefixes: ['GEMINI_', 'GOOGLE_', 'CLOUDSDK_', 'DOCKER_', 'SANDBOX_', 'XDG_'],
  except: ['GEMINI_SANDBOX', 'GEMINI_CLI_HOME'],
};

// OPENCODE_* from baton's own environment stays behind: baton sets the server's password and quiet switches itself,
// and a user's OPENCODE_CONFIG could add MCP servers or plugins (rule: no-recursion); config `env` is the way to pass
// one on purpose.
const OPENCODE: Rule = { prefixes: ['XDG_'] };

const CODEX: Rule = { names: ['OPENAI_API_KEY', 'CODEX_API_KEY'] };

/**
 * Any ACP agent: the generic set, every known runtime's and provider's variables; anything else comes via config. No
 * OPENCODE_* or CODEX_* variable but Codex's API key: they name another config (OPENCODE_CONFIG, CODEX_HOME, which can
 * add MCP servers and plugins: rule no-recursion) or a server and its credentials.
 */
const ACP: Rule = {
  names: ['CODEX_API_KEY', 'SEATBELT_PROFILE', 'CONTAINER_HOST', 'IS_SANDBOX'],
  prefixes: ['CLAUDE_', 'DSH_', 'CLOUD_ML_', 'CLOUDSDK_', 'DOCKER_', 'XDG_'],
};

const RULES: Record<ChildKind, readonly Rule[]> = {
  acp: [GENERIC, MODEL_PROVIDERS, ACP],
  claude: [GENERIC, CLAUDE],
  gemini: [GENERIC, GEMINI],
  opencode: [GENERIC, MODEL_PROVIDERS, OPENCODE],
  codex: [GENERIC, CODEX],
};

function matches(rule: Rule, name: string): boolean {
  if (rule.except?.includes(name)) return false;
  return (
    !!rule.names?.includes(name) ||
    !!rule.prefixes?.some((p) => name.startsWith(p)) ||
    !!rule.suffixes?.some((s) => name.endsWith(s))
  );
}

/** Decisions already made, per kind: they depend on the name alone, and a daemon spawns with the same names often. */
const decided: Record<ChildKind, Map<string, boolean>> = {
  acp: new Map(),
  claude: new Map(),
  gemini: new Map(),
  opencode: new Map(),
  codex: new Map(),
};

/** True when a variable of the parent environment may reach a child of this kind. */
function passesToChild(kind: ChildKind, name: string): boolean {
  let passes = decided[kind].get(name);
  if (passes === undefined) {
    passes = decide(kind, name);
    decided[kind].set(name, passes);
  }
  return passes;
}

function decide(kind: ChildKind, name: string): boolean {
  if (withheld(name)) return false;
  const rules = RULES[kind];
  // A kind's `except` wins over the generic rules too.
  if (rules.some((r) => r.except?.includes(name))) return false;
  return rules.some((r) => matches(r, name));
}

export interface ChildEnvOptions {
  /** The environment to filter (default process.env). */
  parent?: NodeJS.ProcessEnv;
  /** Further parent variables this child needs by name (a configured provider's key variable). */
  pass?: readonly (string | undefined)[];
  /** Values baton sets for the child (its isolated home, the user's configured extras); they win over the parent's. */
  set?: Readonly<Record<string, string | undefined>>;
}

/** The environment of an agent child of `kind`: the parent's allowlisted variables, the named extras, then `set`. */
export function childEnv(kind: ChildKind, opts: ChildEnvOptions = {}): Record<string, string> {
  const parent = opts.parent ?? process.env;
  const env: Record<string, string> = {};
  // Names first, values only of the names that pass: each read of process.env is a call into the runtime.
  for (const name of Object.keys(parent)) {
    if (!passesToChild(kind, name)) continue;
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  for (const name of opts.pass ?? []) {
    const value = name === undefined ? undefined : parent[name];
    if (name && value !== undefined && !withheld(name)) env[name] = value;
  }
  for (const [name, value] of Object.entries(opts.set ?? {})) {
    if (value !== undefined && !name.startsWith(BATON_PREFIX)) env[name] = value;
  }
  return env;
}
