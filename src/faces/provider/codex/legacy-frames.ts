// The JSON-RPC frames of the legacy passthrough (`codex mcp-server`): their shape, and what the bridge reads from
// Codex's native events (sanitised status, the typed unauthorized failure). Pure functions, no state.
import { statusLine } from '../../../lib/text.ts';
import { toolError } from '../../mcp-tools.ts';
import { authFailure } from './app-server.ts';
import { AUTH_INVALIDATED_ACTION, AUTH_INVALIDATED_CODE } from './turns.ts';

export type JsonRpcId = string | number;
export type Message = {
  jsonrpc?: string;
  id?: JsonRpcId;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: unknown;
};

export const keyOf = (id: JsonRpcId) => `${typeof id}:${id}`;

/**
 * Sanitised status (rule: fail-closed-status) of a native `codex/event` message, or undefined when it says nothing
 * shareable.
 */
export function statusOf(msg: Record<string, unknown>): string | undefined {
  const type = String(msg.type ?? '');
  if (type === 'task_started') return 'Working';
  if (type === 'exec_command_begin') return 'Running a command';
  if (type === 'patch_apply_begin') return 'Editing files';
  if (type === 'mcp_tool_call_begin') return 'Calling an MCP tool';
  if (type === 'web_search_begin') return 'Searching the web';
  if (type.startsWith('collab_')) return 'Working with a sub-agent';
  if (type === 'agent_message' && msg.phase === 'commentary' && typeof msg.message === 'string')
    return statusLine(msg.message) || undefined;
  if (type === 'plan_update' && Array.isArray(msg.plan)) {
    const step = (msg.plan as Array<{ step?: unknown; status?: unknown }>).find((s) => s.status === 'in_progress');
    if (step && typeof step.step === 'string') return statusLine(`Plan: ${step.step}`);
  }
  return undefined;
}

/** The typed unauthorized event of `codex mcp-server`. */
export function isTypedUnauthorized(msg: Record<string, unknown>): boolean {
  if (msg.type !== 'error') return false;
  const info = msg.codex_error_info;
  if (info === 'unauthorized') return true;
  return (
    !!info &&
    typeof info === 'object' &&
    Object.values(info).some((v) => (v as { http_status_code?: unknown } | null)?.http_status_code === 401)
  );
}

/** The one structured tool error that replaces Codex's typed unauthorized event. */
export function authErrorResult(threadId?: string): Record<string, unknown> {
  const failure = authFailure();
  return toolError(failure.message, {
    code: AUTH_INVALIDATED_CODE,
    action: AUTH_INVALIDATED_ACTION,
    ...(threadId ? { threadId } : {}),
  }) as unknown as Record<string, unknown>;
}
