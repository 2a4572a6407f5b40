// The hub's config file (HB-1): `.baton/config.json`, selected by --config or BATON_CONFIG. Unknown keys and bad values
// are refused at load with the path of the bad key.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ACP_PRESETS } from '../../agents/acp/presets.ts';
import { AGENT_KINDS } from '../../agents/registry.ts';
import { findAgentBinary } from '../../lib/agent-path.ts';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';
import { registerSecret } from '../../lib/redact.ts';

export const DEFAULT_PORT = 43219;
export const DEFAULT_CONFIG_PATH = join('.baton', 'config.json');
/** Default callers: the clients baton knows how to configure (HB-1). */
export const DEFAULT_CALLERS = ['claude', 'codex', 'opencode', 'gemini', 'dsh'] as const;
const TOKEN_BYTES = 32;

const name = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be lowercase letters, digits and dashes, starting with a letter');
const token = z.string().min(32, 'must be at least 32 characters').max(512);

const agentEntry = z.object({ kind: z.string().min(1) }).passthrough();

export const configSchema = z
  .object({
    version: z.literal(1),
    listen: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(DEFAULT_PORT),
      })
      .strict()
      .default({ host: '127.0.0.1', port: DEFAULT_PORT }),
    roots: z.array(z.string().min(1)).min(1, 'at least one root is needed'),
    stateDir: z.string().min(1).optional(),
    control: z.object({ token }).strict(),
    callers: z.record(name, z.object({ token, agents: z.array(name).optional() }).strict()),
    agents: z.record(name, agentEntry).default({}),
    limits: z
      .object({
        idleTimeoutMs: z.number().int().min(0).max(86_400_000).default(600_000),
        hardTimeoutMs: z.number().int().min(0).max(604_800_000).default(7_200_000),
        cancelGraceMs: z.number().int().min(0).max(600_000).default(10_000),
      })
      .strict()
      .default({ idleTimeoutMs: 600_000, hardTimeoutMs: 7_200_000, cancelGraceMs: 10_000 }),
    logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  })
  .strict();

export type HubConfig = z.infer<typeof configSchema> & { path: string; stateDirPath: string; rootsReal: string[] };

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function resolveConfigPath(flag?: string): string {
  return resolve(flag ?? process.env.BATON_CONFIG ?? DEFAULT_CONFIG_PATH);
}

function formatIssues(err: z.ZodError): string {
  return err.issues
    .map((i) => {
      const path = i.path.join('.') || '(root)';
      if (i.code === 'unrecognized_keys') return `${path ? `${path}: ` : ''}unknown key(s) ${i.keys.join(', ')}`;
      return `${path}: ${i.message}`;
    })
    .join('\n  ');
}

export function loadConfig(path: string): HubConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as Error).message}; create one with \`baton init\``);
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`invalid config ${path}:\n  ${formatIssues(parsed.error)}`);
  const cfg = parsed.data;
  for (const [agentName, entry] of Object.entries(cfg.agents)) {
    const kind = AGENT_KINDS[entry.kind];
    if (!kind) {
      throw new ConfigError(
        `invalid config ${path}:\n  agents.${agentName}.kind: unknown kind "${entry.kind}" (known: ${Object.keys(AGENT_KINDS).join(', ')})`,
      );
    }
    const { kind: _k, ...rest } = entry;
    const check = kind.configSchema.safeParse(rest);
    if (!check.success) {
      const issues = check.error.issues.map((i) => `agents.${agentName}.${i.path.join('.')}: ${i.message}`);
      throw new ConfigError(`invalid config ${path}:\n  ${issues.join('\n  ')}`);
    }
  }
  for (const [callerName, c] of Object.entries(cfg.callers)) {
    for (const a of c.agents ?? []) {
      if (!(a in cfg.agents))
        throw new ConfigError(`invalid config ${path}:\n  callers.${callerName}.agents: unknown agent "${a}"`);
    }
  }
  const base = dirname(path);
  const rootsReal = cfg.roots.map((r, i) => {
    const abs = isAbsolute(r) ? r : resolve(base, r);
    try {
      if (!statSync(abs).isDirectory()) throw new Error('not a directory');
      return realpathSync(abs);
    } catch (err) {
      throw new ConfigError(
        `invalid config ${path}:\n  roots.${i}: ${abs} is not a readable directory (${(err as Error).message})`,
      );
    }
  });
  registerSecret(cfg.control.token);
  for (const c of Object.values(cfg.callers)) registerSecret(c.token);
  const stateDirPath = cfg.stateDir ? resolve(base, cfg.stateDir) : join(base, 'state');
  return { ...cfg, path, stateDirPath, rootsReal };
}

/** Agents a caller may reach: its configured list, or every agent but the one sharing its name (HB-3). */
export function reachableAgents(cfg: HubConfig, caller: string): string[] {
  const c = cfg.callers[caller];
  if (!c) return [];
  return (c.agents ?? Object.keys(cfg.agents).filter((a) => a !== caller)).filter((a) => a in cfg.agents);
}

export function newToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

/** Known agents and how init configures them when their binary is found (see findOnPath). */
export const AGENT_PRESETS: { name: string; binary: string; entry: { kind: string } & Record<string, unknown> }[] = [
  { name: 'codex', binary: 'codex', entry: { kind: 'codex' } },
  { name: 'claude', binary: 'claude', entry: { kind: 'claude' } },
  { name: 'opencode', binary: 'opencode', entry: { kind: 'opencode' } },
  { name: 'gemini', binary: 'gemini', entry: { kind: 'acp', command: [...ACP_PRESETS.gemini.command] } },
  { name: 'dsh', binary: 'dsh', entry: { kind: 'acp', command: [...ACP_PRESETS.dsh.command] } },
];

/** Where an agent's binary is: the user's PATH and the usual install places, never baton's own package. */
export function findOnPath(binary: string, pathEnv = process.env.PATH ?? ''): string | null {
  return findAgentBinary(binary, pathEnv) ?? null;
}

export interface InitOptions {
  path: string;
  roots: string[];
  port?: number;
  /** Agents to configure; default: presets whose binary is on PATH and whose kind this build has. */
  agents?: Record<string, { kind: string } & Record<string, unknown>>;
}

/** Writes a new config (0600, dir 0700); never overwrites an existing one. */
export function initConfig(opts: InitOptions): { path: string; created: boolean; agents: string[] } {
  if (existsSync(opts.path)) return { path: opts.path, created: false, agents: [] };
  const agents =
    opts.agents ??
    Object.fromEntries(
      AGENT_PRESETS.filter((p) => p.entry.kind in AGENT_KINDS && findOnPath(p.binary)).map((p) => [p.name, p.entry]),
    );
  const callers = Object.fromEntries(DEFAULT_CALLERS.map((c) => [c, { token: newToken() }]));
  const cfg = {
    version: 1,
    listen: { host: '127.0.0.1', port: opts.port ?? DEFAULT_PORT },
    roots: opts.roots.map((r) => realpathSync(resolve(r))),
    control: { token: newToken() },
    callers,
    agents,
  };
  const dir = dirname(opts.path);
  ensurePrivateDir(dir);
  // Keep baton's files out of the user's git status when the config lives inside a repository.
  if (!existsSync(join(dir, '.gitignore'))) writePrivateFile(join(dir, '.gitignore'), '*\n');
  writePrivateFile(opts.path, `${JSON.stringify(cfg, null, 2)}\n`, { exclusive: true });
  return { path: opts.path, created: true, agents: Object.keys(agents) };
}
