// The checks the MCP SDK's Streamable HTTP transport makes of a 2025-era POST, made by the hub itself because it serves
// 2025-era sessions from its store rather than through that transport (faces/hub/mcp-endpoint.ts). Pinned to the SDK's
// own transport on the same inputs by test/faces/hub/mcp-post-checks.test.ts.
import type { IncomingHttpHeaders } from 'node:http';
import {
  isInitializeRequest,
  isJsonContentType,
  type JSONRPCMessage,
  parseJSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';

/** Messages one 2025-era POST may carry (a JSON-RPC batch); the SDK's own transport has the same bound. */
const MAX_BATCH = 100;

/** Why a POST is refused: the HTTP status and the JSON-RPC error it is answered with. */
export interface PostRefusal {
  status: number;
  code: number;
  message: string;
}

/**
 * A 2025-era POST checked before it is dispatched (Accept, Content-Type, batch size, JSON-RPC shape, one initialize
 * alone, a supported MCP-Protocol-Version): its messages, or the refusal. `initialize` is a POST that opens a session
 * (a single initialize request), whose version is negotiated rather than checked.
 */
export function postMessages(
  headers: IncomingHttpHeaders,
  body: unknown,
  initialize: boolean,
): JSONRPCMessage[] | PostRefusal {
  const refuse = (status: number, code: number, message: string): PostRefusal => ({ status, code, message });
  const accept = headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
    return refuse(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  if (!isJsonContentType(headers['content-type'] ?? null))
    return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  const raw = Array.isArray(body) ? body : [body];
  if (raw.length > MAX_BATCH)
    return refuse(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`);
  let messages: JSONRPCMessage[];
  try {
    messages = raw.map((m) => parseJSONRPCMessage(m));
  } catch {
    return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
  }
  if (initialize) return messages;
  if (messages.length > 1 && messages.some((m) => isInitializeRequest(m)))
    return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
  const version = headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
    return refuse(
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
  return messages;
}
