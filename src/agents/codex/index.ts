// The `codex` agent kind: config schema + factory, registered in src/agents/registry.ts.
import type { AgentKind } from '../agent.ts';
import { createCodexAgent } from './adapter.ts';
import { codexAgentConfigSchema } from './config.ts';

export const codexAgentKind: AgentKind<typeof codexAgentConfigSchema> = {
  configSchema: codexAgentConfigSchema,
  create: createCodexAgent,
};
