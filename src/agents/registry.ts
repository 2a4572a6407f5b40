// The registry of agent kinds. A new kind is one folder under src/agents/ and one line here.
import { acpAgentKind } from './acp/index.ts';
import type { Agent, AgentContext, AgentKind } from './agent.ts';
import { claudeKind } from './claude/index.ts';
import { codexAgentKind } from './codex/index.ts';
import { openCodeAgentKind } from './opencode/agent.ts';

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
