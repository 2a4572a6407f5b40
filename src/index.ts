// Library exports of the package (SPEC §6).
export type { Agent, AgentEvent, AgentProbe, AgentSession, OpenSessionOptions, Sandbox } from './agents/agent.ts';
export {
  CodexAppServerClient,
  type CodexAppServerClientOptions,
  CodexAppServerRequestError,
  type CodexAppServerTransport,
  type CodexServerRequest,
  type JsonRpcFailureReason as CodexAppServerFailureReason,
} from './codex/app-server-client.ts';
export { codexUnixSocketTarget, observeCodexUnixSocket } from './codex/unix-socket.ts';
export {
  CODEX_UNIX_SOCKET_MINIMUM_VERSION,
  type CodexVersion,
  CodexVersionUnsupportedError,
  parseCodexVersion,
  requireCodexVersion,
} from './codex/version.ts';
export * from './faces/attach/index.ts';
