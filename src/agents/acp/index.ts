// The `acp` agent kind: any ACP v1 agent by command (rule: acp-agents), with presets for Gemini CLI, OpenCode and
// DeepSeek Harness. The kind itself (schema + lazy factory) is in src/agents/registry.ts.
export { AcpAgent } from './agent.ts';
export { acpConfigSchema } from './config.ts';
export { ACP_PRESETS } from './presets.ts';
export { AcpAgentSession, ResumeUnsupportedError } from './session.ts';
