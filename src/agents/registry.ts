// The registry of agent kinds. A new kind is one folder under src/agents/ and one line here.
//
// The ACP and Codex adapters are loaded when an agent of theirs is first probed or opened, not when the hub starts:
// the ACP SDK and the app-server client are most of the adapters' memory, and a hub whose agents answer a `--version`
// probe needs neither until a task runs. Their config schemas, which the hub checks at start, are small modules.
import type { AcpAgent } from './acp/agent.ts';
import { acpConfigSchema } from './acp/config.ts';
import type { Agent, AgentContext, AgentKind } from './agent.ts';
import { claudeKind } from './claude/index.ts';
import { codexAgentConfigSchema } from './codex/config.ts';
import { openCodeAgentKind } from './opencode/agent.ts';

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

const acpAgentKind: AgentKind<typeof acpConfigSchema> = {
  configSchema: acpConfigSchema,
  create: (name, config, ctx) => {
    const get = onFirstUse(async () => new (await import('./acp/agent.ts')).AcpAgent(name, config, ctx));
    // `baton doctor`'s deeper check, which only ACP agents offer.
    const probeSession: AcpAgent['probeSession'] = async (...args) => (await get()).probeSession(...args);
    return Object.assign(lazyAgent(name, 'acp', get), { probeSession });
  },
};

const codexAgentKind: AgentKind<typeof codexAgentConfigSchema> = {
  configSchema: codexAgentConfigSchema,
  create: (name, config, ctx) =>
    lazyAgent(
      name,
      'codex',
      onFirstUse(async () => (await import('./codex/adapter.ts')).createCodexAgent(name, config, ctx)),
    ),
};

export const AGENT_KINDS: Record<string, AgentKind> = {
  acp: acpAgentKind as AgentKind,
  claude: claudeKind as AgentKind,
  codex: codexAgentKind as AgentKind,
  opencode: openCodeAgentKind as AgentKind,
};

export function createAgent(name: string, entry: { kind: string } & Record<string, unknown>, ctx: AgentContext): Agent {
  const kind = AGENT_KINDS[entry.kind];
  if (!kind)
    throw new Error(`agent "${name}": unknown kind "${entry.kind}" (known: ${Object.keys(AGENT_KINDS).join(', ')})`);
  const { kind: _k, ...rest } = entry;
  return kind.create(name, kind.configSchema.parse(rest), ctx);
}
