// The registry of agent kinds. A new kind is one folder under src/agents/ and one line here.
import type { z } from 'zod';
import { acpAgentKind } from './acp/index.ts';
import type { Agent, AgentContext } from './agent.ts';
import { claudeKind } from './claude/index.ts';
import { codexAgentKind } from './codex/index.ts';
import { openCodeAgentKind } from './opencode/agent.ts';

export interface AgentKind<S extends z.ZodType = z.ZodType> {
  /** Strict schema of this kind's entry in `agents` of config.json (without the `kind` key). */
  configSchema: S;
  create(name: string, config: z.infer<S>, ctx: AgentContext): Agent;
}

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
