// The attach face's library surface (rule: attach-library).
export { ALLOWLIST_ENV_VARS, allowlistFromEnv, type HarnessName, parseAllowedServerUrls } from './allowlist.ts';
export {
  type Connection,
  type ConnectionInfo,
  ConnectionRegistry,
  type ConnectionRegistryOptions,
  MAX_CONNECTIONS,
  type OpenCodeCredentialsInput,
} from './connections.ts';
export {
  DispatchRegistry,
  type DispatchStatus,
  type DispatchView,
  type IDispatchSummary,
  MAX_DISPATCH_RECORDS,
  SETTLED_DISPATCH_TTL_MS,
} from './dispatches.ts';
export type { ChatMessage, ChatSummary, ChatTranscript, HarnessConnection, SendReply } from './harness.ts';
export { CrossHarnessMcpServer, type CrossHarnessMcpServerOptions } from './server.ts';
export { ATTACH_TOOL_NAMES, CrossHarnessMcpToolRegistrar } from './tools.ts';
