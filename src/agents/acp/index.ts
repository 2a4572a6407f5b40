// The `acp` agent kind: any ACP v1 agent by command (rule: acp-agents), with presets for Gemini CLI, OpenCode and
// DeepSeek Harness.
import type { AgentKind } from '../agent.ts';
import { AcpAgent } from './agent.ts';
import { acpConfigSchema } from './config.ts';

export { AcpAgent } from './agent.ts';
export { acpConfigSchema } from './config.ts';
export { ACP_PRESETS, acpPreset } from './presets.ts';
export { AcpAgentSession, ResumeUnsupportedError } from './session.ts';

export const acpAgentKind: AgentKind<typeof acpConfigSchema> = {
  configSchema: acpConfigSchema,
  create: (name, config, ctx) => new AcpAgent(name, config, ctx),
};
