// The hub's config file (rule: hub-commands): one per user, found by locate.ts (--config, $BATON_CONFIG, $BATON_HOME,
// the user's config dir). Unknown keys and bad values are refused at load with the path of the bad key. Roots are the
// only part that commands edit (init, roots add/remove) and the only part a running hub reloads.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ACP_PRESETS } from '../../agents/acp/presets.ts';
import { AGENT_KIND_NAMES, agentConfigSchema } from '../../agents/kinds.ts';
import { LOCAL_TARGET_NAME, type TargetConfig, targetsConfigSchema } from '../../agents/targets/config.ts';
import { BUDGET_KEYS, type Budget } from '../../core/usage.ts';
import { findAgentBinary } from '../../lib/agent-path.ts';
import { isWithin } from '../../lib/paths.ts';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';
import { registerSecret } from '../../lib/redact.ts';
import { type ConfigLocation, describeLocation, locateConfig, ownDirs } from '../locate.ts';

export const DEFAULT_PORT = 43219;
/** Default callers: the clients baton knows how to configure (rule: hub-commands). */
export const DEFAULT_CALLERS = ['claude', 'codex', 'opencode', 'gemini', 'dsh'] as const;
const TOKEN_BYTES = 32;

const name = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be lowercase letters, digits and dashes, starting with a letter');
const token = z.string().min(32, 'must be at least 32 characters').max(512);

/** A cap or budget: a whole number above zero (zero or less would stop all work; leave the key out for no cap). */
const positiveInt = z.number().int('must be a whole number').positive('must be a positive number').max(1_000_000);

const tokenBudget = z.number().int('must be a whole number').positive('must be a positive number').max(1e12);
const costBudget = z.number().positive('must be a positive number').max(1e6);
/** Budgets (rule: usage-budgets): per round (tokens = input + output) and per caller and UTC day. */
const budgetKeys = {
  maxTokensPerRound: tokenBudget.optional(),
  maxCostUsdPerRound: costBudget.optional(),
  maxTokensPerDay: tokenBudget.optional(),
  maxCostUsdPerDay: costBudget.optional(),
};

const agentEntry = z.object({ kind: z.string().min(1) }).passthrough();
/** Keys of an agent entry the hub reads itself; the rest is the kind's own config. */
const hubAgentKeys = z.object({ maxRunning: positiveInt.optional() });

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
    // Empty is allowed: a fresh user config has no project yet, and agent_run says to run `baton init`.
    roots: z.array(z.string().min(1)),
    stateDir: z.string().min(1).optional(),
    control: z.object({ token }).strict(),
    callers: z.record(
      name,
      z
        .object({
          token,
          agents: z.array(name).optional(),
          // The caller's own budgets, in place of the hub-wide ones of `limits`.
          limits: z.object(budgetKeys).strict().optional(),
          // Per agent: `deny` (the default) or `ask` (rule: approvals).
          approvals: z.record(name, z.enum(['ask', 'deny'])).optional(),
        })
        .strict(),
    ),
    agents: z.record(name, agentEntry).default({}),
    // Where agents run (docs/targets.md); `local` exists without an entry. An agent names its own with `target`.
    targets: targetsConfigSchema.default({}),
    limits: z
      .object({
        idleTimeoutMs: z.number().int().min(0).max(86_400_000).default(600_000),
        hardTimeoutMs: z.number().int().min(0).max(604_800_000).default(7_200_000),
        cancelGraceMs: z.number().int().min(0).max(600_000).default(10_000),
        // Deadline of each agent's version/login probe at start; its processes are stopped when it passes.
        probeTimeoutMs: z.number().int().min(100).max(600_000).default(20_000),
        // Rounds running at once hub-wide (rule: run-caps); unset: twice the CPU count.
        maxRunning: positiveInt.optional(),
        ...budgetKeys,
        // How long a parked permission request waits before it is denied as timed out (default 10 minutes).
        approvalTimeoutMs: z
          .number()
          .int('must be a whole number')
          .positive('must be a positive number')
          .max(604_800_000)
          .optional(),
      })
      .strict()
      .default({ idleTimeoutMs: 600_000, hardTimeoutMs: 7_200_000, cancelGraceMs: 10_000, probeTimeoutMs: 20_000 }),
    logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
    // Online copies of the store: every `intervalHours` (0 = never), the newest `keep` are kept.
    backups: z
      .object({
        intervalHours: z.number().min(0).max(8_760).default(24),
        keep: z.number().int().min(1).max(1_000).default(3),
      })
      .strict()
      .default({ intervalHours: 24, keep: 3 }),
  })
  .strict();

export type HubConfig = z.infer<typeof configSchema> & {
  path: string;
  location: ConfigLocation;
  stateDirPath: string;
  connectionsDirPath: string;
  /** baton's own dirs (config, snippets, state): never inside a root, never a cwd. */
  privateDirs: string[];
  rootsReal: string[];
  /** Every target by name, the built-in `local` included. */
  targetConfigs: Record<string, TargetConfig>;
  /** Each agent's own cap on rounds running at once (`agents.<name>.maxRunning`), for the agents that set one. */
  agentMaxRunning: Record<string, number>;
};

/** The agent kinds that can run on an ssh target. */
const SSH_KINDS: readonly string[] = ['acp', 'codex', 'claude'];

/** The target an agent entry names (`local` when it names none). */
export function agentTarget(entry: Record<string, unknown>): string {
  return typeof entry.target === 'string' ? entry.target : LOCAL_TARGET_NAME;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
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

function asLocation(where: string | ConfigLocation): ConfigLocation {
  return typeof where === 'string' ? locateConfig({ flag: where }) : where;
}

/**
 * Checks one root and returns its real path: it must be a directory, and it may neither contain baton's own files
 * (a delegated agent could read every token there) nor lie inside them.
 */
export function checkRoot(dir: string, privateDirs: readonly string[]): string {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    throw new ConfigError(`${dir} does not exist; give an existing project directory`);
  }
  if (!statSync(real).isDirectory()) throw new ConfigError(`${dir} is not a directory`);
  for (const own of privateDirs) {
    if (isWithin(real, own)) {
      throw new ConfigError(
        `${real} contains baton's own files (${own}), where a delegated agent could read every caller's token; ` +
          'authorise a project directory that does not contain them, or move baton elsewhere with $BATON_HOME',
      );
    }
    if (isWithin(own, real)) throw new ConfigError(`${real} lies inside baton's own files (${own}); choose a project`);
  }
  return real;
}

function readJson(loc: ConfigLocation): unknown {
  let text: string;
  try {
    text = readFileSync(loc.configPath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new ConfigError(
        `no baton config at ${describeLocation(loc)}; run \`baton init\` in a project to create it`,
      );
    }
    throw new ConfigError(`cannot read config ${loc.configPath}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`cannot read config ${loc.configPath}: ${(err as Error).message}`);
  }
}

export function loadConfig(where: string | ConfigLocation): HubConfig {
  const loc = asLocation(where);
  const path = loc.configPath;
  const raw = readJson(loc);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`invalid config ${path}:\n  ${formatIssues(parsed.error)}`);
  const cfg = parsed.data;
  const agentMaxRunning: Record<string, number> = {};
  for (const [agentName, full] of Object.entries(cfg.agents)) {
    // The hub's own keys are taken out of the entry: the kind's schema is strict and the adapter never sees them.
    const { maxRunning, ...entry } = full;
    const own = hubAgentKeys.safeParse({ maxRunning });
    if (!own.success) {
      const issues = own.error.issues.map((i) => `agents.${agentName}.${i.path.join('.')}: ${i.message}`);
      throw new ConfigError(`invalid config ${path}:\n  ${issues.join('\n  ')}`);
    }
    if (own.data.maxRunning !== undefined) agentMaxRunning[agentName] = own.data.maxRunning;
    cfg.agents[agentName] = entry as typeof full;
    const schema = agentConfigSchema(entry.kind);
    if (!schema) {
      throw new ConfigError(
        `invalid config ${path}:\n  agents.${agentName}.kind: unknown kind "${entry.kind}" (known: ${AGENT_KIND_NAMES.join(', ')})`,
      );
    }
    const { kind: _k, target, ...rest } = entry;
    if (
      target !== undefined &&
      (typeof target !== 'string' || !(target === LOCAL_TARGET_NAME || target in cfg.targets))
    ) {
      const known = [LOCAL_TARGET_NAME, ...Object.keys(cfg.targets).filter((t) => t !== LOCAL_TARGET_NAME)].join(', ');
      throw new ConfigError(
        `invalid config ${path}:\n  agents.${agentName}.target: unknown target ${JSON.stringify(target)} (known: ${known}; define it under "targets")`,
      );
    }
    // On another machine only the kinds whose adapters start everything through the target run (docs/targets.md).
    const onSsh = typeof target === 'string' && cfg.targets[target]?.kind === 'ssh';
    if (onSsh && !SSH_KINDS.includes(entry.kind))
      throw new ConfigError(
        `invalid config ${path}:\n  agents.${agentName}.target: target ${JSON.stringify(target)} is an ssh target, and kind "${entry.kind}" cannot run on one yet (${SSH_KINDS.join(', ')} can)`,
      );
    const check = schema.safeParse(rest);
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
    for (const [a, policy] of Object.entries(c.approvals ?? {})) {
      const entry = cfg.agents[a];
      if (!entry)
        throw new ConfigError(`invalid config ${path}:\n  callers.${callerName}.approvals: unknown agent "${a}"`);
      const why = policy === 'ask' ? ASK_REFUSED[entry.kind] : undefined;
      if (why)
        throw new ConfigError(
          `invalid config ${path}:\n  callers.${callerName}.approvals.${a}: "ask" is refused: ${why}`,
        );
    }
  }
  const base = dirname(path);
  const { stateDirPath, privateDirs } = ownDirs(loc, cfg.stateDir);
  const rootsReal = cfg.roots.map((r, i) => {
    const abs = isAbsolute(r) ? r : resolve(base, r);
    try {
      return checkRoot(abs, privateDirs);
    } catch (err) {
      // A project deleted since it was added is the likely case; say how to drop it.
      const hint = existsSync(abs) ? '' : ` (if the project is gone: \`baton roots remove ${abs}\`)`;
      throw new ConfigError(`invalid config ${path}:\n  roots.${i}: ${(err as Error).message}${hint}`);
    }
  });
  registerSecret(cfg.control.token);
  for (const c of Object.values(cfg.callers)) registerSecret(c.token);
  return {
    ...cfg,
    path,
    location: loc,
    stateDirPath,
    connectionsDirPath: loc.connectionsDir,
    privateDirs,
    rootsReal,
    targetConfigs: { [LOCAL_TARGET_NAME]: { kind: 'local' }, ...cfg.targets },
    agentMaxRunning,
  };
}

/** A caller's budgets: its own where it sets them, else the hub-wide ones (rule: usage-budgets). */
export function budgetOf(cfg: HubConfig, caller: string): Budget {
  const own = cfg.callers[caller]?.limits ?? {};
  const out: Budget = {};
  for (const key of BUDGET_KEYS) {
    const v = own[key] ?? cfg.limits[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * Agent kinds whose permission requests cannot be put to someone (rule: approvals), and why; every other kind can ask.
 */
const ASK_REFUSED: Record<string, string> = {
  claude:
    'Claude Code runs with a fixed tool list and denies everything else without asking (claude -p), so there is nothing to approve; use "deny"',
};

/** The approval policy for a caller's rounds on an agent: `ask` where the config says so, else `deny`. */
export function approvalPolicyOf(cfg: HubConfig, caller: string, agent: string): 'ask' | 'deny' {
  return cfg.callers[caller]?.approvals?.[agent] ?? 'deny';
}

/** Agents a caller may reach: its configured list, or every agent but the one sharing its name (rule: hub-tools). */
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
  location: ConfigLocation;
  roots: string[];
  port?: number;
  /** Agents to configure; default: presets whose binary is on PATH and whose kind this build has. */
  agents?: Record<string, { kind: string } & Record<string, unknown>>;
}

export interface RootsChange {
  path: string;
  created: boolean;
  /** Agents configured when the config was created. */
  agents: string[];
  added: string[];
  already: string[];
  roots: string[];
}

/** The config as JSON, checked against the schema so an edit never writes back a config the hub would refuse. */
function readEditable(loc: ConfigLocation): Record<string, unknown> & { roots: string[]; stateDir?: string } {
  const raw = readJson(loc);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(`invalid config ${loc.configPath} (fix it first):\n  ${formatIssues(parsed.error)}`);
  }
  return raw as Record<string, unknown> & { roots: string[]; stateDir?: string };
}

function sameRoot(stored: string, base: string, real: string | null, abs: string): boolean {
  const s = isAbsolute(stored) ? stored : resolve(base, stored);
  if (s === abs) return true;
  if (!real) return false;
  try {
    return realpathSync(s) === real;
  } catch {
    return false;
  }
}

/**
 * `baton init` / `baton roots add`: creates the config with these roots when there is none (fresh tokens), else adds
 * the roots not there yet. Every dir is checked before anything is written; tokens are never rewritten.
 */
export function addRoots(opts: InitOptions): RootsChange {
  const loc = opts.location;
  const path = loc.configPath;
  if (!existsSync(path)) {
    const { privateDirs } = ownDirs(loc, undefined);
    const roots = [...new Set(opts.roots.map((r) => checkRoot(resolve(r), privateDirs)))];
    const agents = createConfig(opts, roots);
    return { path, created: true, agents, added: roots, already: [], roots };
  }
  const raw = readEditable(loc);
  const { privateDirs } = ownDirs(loc, raw.stateDir);
  const base = dirname(path);
  const wanted = [...new Set(opts.roots.map((r) => checkRoot(resolve(r), privateDirs)))];
  const added: string[] = [];
  const already: string[] = [];
  for (const real of wanted) {
    if (raw.roots.some((s) => sameRoot(s, base, real, real))) already.push(real);
    else added.push(real);
  }
  const roots = [...raw.roots, ...added];
  if (added.length) writePrivateFile(path, `${JSON.stringify({ ...raw, roots }, null, 2)}\n`);
  return { path, created: false, agents: [], added, already, roots };
}

/** `baton roots remove`: the dir may be gone already (a deleted project), so it also matches by its plain path. */
export function removeRoot(loc: ConfigLocation, dir: string): { path: string; removed: string; roots: string[] } {
  const raw = readEditable(loc);
  const abs = resolve(dir);
  let real: string | null = null;
  try {
    real = realpathSync(abs);
  } catch {}
  const base = dirname(loc.configPath);
  const keep = raw.roots.filter((s) => !sameRoot(s, base, real, abs));
  if (keep.length === raw.roots.length) {
    const list = raw.roots.length ? raw.roots.join(', ') : 'none';
    throw new ConfigError(`${abs} is not a root of ${loc.configPath} (roots: ${list}); nothing changed`);
  }
  writePrivateFile(loc.configPath, `${JSON.stringify({ ...raw, roots: keep }, null, 2)}\n`);
  return { path: loc.configPath, removed: abs, roots: keep };
}

export function listRoots(loc: ConfigLocation): string[] {
  return readEditable(loc).roots;
}

/** Writes a new config (0600, dir 0700) atomically; never overwrites an existing one. Returns the agents found. */
function createConfig(opts: InitOptions, roots: string[]): string[] {
  const loc = opts.location;
  const agents =
    opts.agents ??
    Object.fromEntries(
      AGENT_PRESETS.filter((p) => agentConfigSchema(p.entry.kind) && findOnPath(p.binary)).map((p) => [
        p.name,
        p.entry,
      ]),
    );
  const callers = Object.fromEntries(DEFAULT_CALLERS.map((c) => [c, { token: newToken() }]));
  const dir = dirname(loc.configPath);
  const cfg = {
    version: 1,
    listen: { host: '127.0.0.1', port: opts.port ?? DEFAULT_PORT },
    roots,
    // Named when it is not beside the config, so `--config FILE` (the service unit) finds the same store.
    ...(resolve(loc.stateDir) !== join(dir, 'state') ? { stateDir: loc.stateDir } : {}),
    control: { token: newToken() },
    callers,
    agents,
  };
  ensurePrivateDir(dir);
  // Keep baton's files out of the user's git status when the config lives inside a repository.
  if (!existsSync(join(dir, '.gitignore'))) writePrivateFile(join(dir, '.gitignore'), '*\n');
  try {
    writePrivateFile(loc.configPath, `${JSON.stringify(cfg, null, 2)}\n`, { exclusive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new ConfigError(`${loc.configPath} was created by another command meanwhile; run this again`);
    }
    throw err;
  }
  return Object.keys(agents);
}
