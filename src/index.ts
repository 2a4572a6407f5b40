// Library exports of the package (SPEC §6).
export type { Agent, AgentEvent, AgentProbe, AgentSession, OpenSessionOptions, Sandbox } from './agents/agent.ts';
export * from './faces/attach/index.ts';
