// The registry of agent kinds. A new kind is one folder under src/agents/, its config schema in kinds.ts and one line
// here.
//
// The ACP, Codex and OpenCode adapters are loaded when an agent of theirs is first probed or opened, not when the hub
// starts: the ACP SDK, the app-server client and the OpenCode HTTP client are code a hub without that kind never needs.
// Claude's small adapter is made at once (its factory sets up the agent's private home). No command that only reads
// the config loads this module: the config checks entries against the schemas of kinds.ts (rule: lazy-commands).
import type { AcpAgent } from './acp/agent.ts';
import type { Agent, AgentContext, AgentKind } from './agent.ts';
import { ClaudeAgent, claudeHomeDir } from './claude/agent.ts';
import { AGENT_CONFIG_SCHEMAS, AGENT_KIND_NAMES, type AgentKindName } from './kinds.ts';

/** One instance, imported on first use; creating an adapter has no side effect worth doing early. */
function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let instance: Promise<T> | undefined;
  return () => {
    instance ??= load();
    return instance;
  };
}

/** An Agent whose implementation is imported on first use. */
function lazyAgent(name: string, kind: string, get: () => Promise<Agent>): Agent {
  return {
    name,
    kind,
    probe: async (request) => (await get()).probe(request),
    openSession: async (opts) => (await get()).openSession(opts),
  };
}

const acpAgentKind: AgentKind<typeof AGENT_CONFIG_SCHEMAS.acp> = {
  configSchema: AGENT_CONFIG_SCHEMAS.acp,
  create: (name, config, ctx) => {
    const get = onFirstUse(async () => new (await import('./acp/agent.ts')).AcpAgent(name, config, ctx));
    // `baton doctor`'s deeper check, which only ACP agents offer.
    const probeSession: AcpAgent['probeSession'] = async (...args) => (await get()).probeSession(...args);
    return Object.assign(lazyAgent(name, 'acp', get), { probeSession });
  },
};

const codexAgentKind: AgentKind<typeof AGENT_CONFIG_SCHEMAS.codex> = {
  configSchema: AGENT_CONFIG_SCHEMAS.codex,
  create: (name, config, ctx) =>
    lazyAgent(
      name,
      'codex',
      onFirstUse(async () => (await import('./codex/adapter.ts')).createCodexAgent(name, config, ctx)),
    ),
};

const claudeAgentKind: AgentKind<typeof AGENT_CONFIG_SCHEMAS.claude> = {
  configSchema: AGENT_CONFIG_SCHEMAS.claude,
  create: (name, config, ctx) =>
    new ClaudeAgent(name, {
      ...config,
      homeDir: claudeHomeDir(ctx.stateDir, name),
      logger: ctx.logger,
      target: ctx.target,
    }),
};

const openCodeAgentKind: AgentKind<typeof AGENT_CONFIG_SCHEMAS.opencode> = {
  configSchema: AGENT_CONFIG_SCHEMAS.opencode,
  create: (name, config, ctx) =>
    lazyAgent(
      name,
      'opencode',
      onFirstUse(async () => new (await import('./opencode/agent.ts')).OpenCodeAgent(name, config, ctx)),
    ),
};

const AGENT_KINDS: Record<AgentKindName, AgentKind> = {
  acp: acpAgentKind as AgentKind,
  claude: claudeAgentKind as AgentKind,
  codex: codexAgentKind as AgentKind,
  opencode: openCodeAgentKind as AgentKind,
};

export function createAgent(name: string, entry: { kind: string } & Record<string, unknown>, ctx: AgentContext): Agent {
  const kind = Object.hasOwn(AGENT_KINDS, entry.kind) ? AGENT_KINDS[entry.kind as AgentKindName] : undefined;
  if (!kind) throw new Error(`agent "${name}": unknown kind "${entry.kind}" (known: ${AGENT_KIND_NAMES.join(', ')})`);
  const { kind: _k, target: _t, ...rest } = entry;
  return kind.create(name, kind.configSchema.parse(rest), ctx);
}
