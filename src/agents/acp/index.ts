// The `acp` agent kind: any ACP v1 agent by command (AG-4), with presets for Gemini CLI, OpenCode and DeepSeek Harness.
import type { AgentKind } from '../agent.ts';
import { AcpAgent } from './agent.ts';
import { acpConfigSchema } from './config.ts';

export { AcpAgent, type AcpSessionProbe } from './agent.ts';
export { type AcpConfig, acpConfigSchema, DEFAULT_CANCEL_GRACE_MS } from './config.ts';
export { ACP_PRESETS, type AcpPresetName, acpPreset } from './presets.ts';
export { AgentStartError } from './process.ts';
export { AcpAgentSession, ResumeUnsupportedError } from './session.ts';

export const acpAgentKind: AgentKind<typeof acpConfigSchema> = {
  configSchema: acpConfigSchema,
  create: (name, config, ctx) => new AcpAgent(name, config, ctx),
};
