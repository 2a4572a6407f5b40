// The JSON-RPC frames of the legacy passthrough (`codex mcp-server`): their shape, and what the bridge reads from
// Codex's native events (sanitised status, the typed unauthorized failure). Pure functions, no state.
import { isObject } from '../../../lib/json-value.ts';
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

/** What one line from the client is, as the bridge tells frames apart (the raw line is forwarded when not handled). */
export type ClientFrame =
  /** Not JSON: forwarded to Codex as it is, which answers it. */
  | { kind: 'unparsable' }
  | { kind: 'tools_list'; msg: Message; id: JsonRpcId }
  | { kind: 'cancelled'; msg: Message; requestId: JsonRpcId | undefined }
  | { kind: 'tools_call'; msg: Message; id: JsonRpcId; name: string; args: unknown }
  /** Anything else (initialize, notifications, other requests): forwarded to Codex. */
  | { kind: 'other'; msg: Message };

export function clientFrame(raw: Buffer): ClientFrame {
  const msg = parse(raw);
  // JSON that is not an object is no request either: Codex answers it as it answers any line it cannot read.
  if (msg === undefined || msg === NOT_OBJECT) return { kind: 'unparsable' };
  if (msg.method === 'tools/list' && msg.id !== undefined) return { kind: 'tools_list', msg, id: msg.id };
  if (msg.method === 'notifications/cancelled') {
    return { kind: 'cancelled', msg, requestId: msg.params?.requestId as JsonRpcId | undefined };
  }
  if (msg.method !== 'tools/call' || msg.id === undefined) return { kind: 'other', msg };
  return {
    kind: 'tools_call',
    msg,
    id: msg.id,
    name: String(msg.params?.name ?? ''),
    args: msg.params?.arguments ?? {},
  };
}

/** What one line from Codex is, as the bridge tells frames apart (the raw line is forwarded when not handled). */
export type CodexFrame =
  /** Not JSON: forwarded to the client as it is. */
  | { kind: 'unparsable' }
  /** JSON that is not an object (null, a number, a string, an array): no JSON-RPC message; dropped and logged. */
  | { kind: 'not_object' }
  /** A response to a request (the client's, or a job's private call). */
  | { kind: 'response'; msg: Message; key: string }
  /** A native `codex/event`, with the request it belongs to when Codex names one. */
  | {
      kind: 'event';
      msg: Message;
      requestId: JsonRpcId | undefined;
      threadId: string | undefined;
      event: Record<string, unknown>;
    }
  /** A request from Codex (an approval elicitation), with the client request it relates to. */
  | { kind: 'server_request'; msg: Message; id: JsonRpcId; related: JsonRpcId | undefined }
  /** Any other notification: forwarded to the client. */
  | { kind: 'other'; msg: Message };

export function codexFrame(raw: Buffer): CodexFrame {
  const msg = parse(raw);
  if (msg === undefined) return { kind: 'unparsable' };
  if (msg === NOT_OBJECT) return { kind: 'not_object' };
  if (msg.method === undefined && msg.id !== undefined) return { kind: 'response', msg, key: keyOf(msg.id) };
  if (msg.method === 'codex/event') {
    const meta = msg.params?._meta as { requestId?: JsonRpcId; threadId?: string } | undefined;
    const payload = msg.params?.msg;
    const event = isObject(payload) ? payload : {};
    return { kind: 'event', msg, requestId: meta?.requestId, threadId: meta?.threadId, event };
  }
  if (msg.method !== undefined && msg.id !== undefined) {
    const related = (msg.params as { _meta?: { requestId?: JsonRpcId } } | undefined)?._meta?.requestId;
    return { kind: 'server_request', msg, id: msg.id, related };
  }
  return { kind: 'other', msg };
}

/** What parse answers for valid JSON that is not an object, which no field of a Message can be read from. */
const NOT_OBJECT = Symbol('not an object');

/** The line's JSON object, NOT_OBJECT when it is other JSON, or undefined when it is not JSON. */
function parse(raw: Buffer): Message | typeof NOT_OBJECT | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
  return isObject(value) ? (value as Message) : NOT_OBJECT;
}
