// One MCP endpoint per caller serving both protocol eras (rules: caller-endpoints, durable-sessions): 2026-07-28
// requests are stateless and go to the SDK's own handler; 2025-era requests carry an `Mcp-Session-Id` that the store
// binds to the caller, so a session outlives a hub restart and a long idle. Every 2025-era request is answered by a
// fresh server instance, so a session costs one store row and nothing in memory between requests.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type NodeMcpRequestHandler,
  NodeStreamableHTTPServerTransport,
  toNodeHandler,
} from '@modelcontextprotocol/node';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type McpHttpHandler,
  type Server,
} from '@modelcontextprotocol/server';
import type { Store } from '../../core/store.ts';
import type { Logger } from '../../lib/log.ts';
import { redactError } from '../../lib/redact.ts';

/** 2025-era sessions one caller may hold (rule: durable-sessions); past it the least recently seen idle one goes. */
export const MAX_SESSIONS_PER_CALLER = 32;
/** A session is idle, and may be evicted for a new one, once it has had no request for this long. */
export const SESSION_EVICT_IDLE_MS = 2 * 60_000;
/** A session nobody has used for this long is dropped by the sweep (its tasks are not: rule tasks-outlive-clients). */
export const SESSION_RETENTION_MS = 30 * 24 * 3_600_000;
/** `last_seen` is written at most this often per session: a busy session must not cost a write per request. */
const TOUCH_INTERVAL_MS = 10_000;
/** Open `subscriptions/listen` streams per caller. */
const MAX_SUBSCRIPTIONS_PER_CALLER = 16;

/** Builds the server instance that answers one request of `caller` in the given era. */
export type ServerFactory = (caller: string, era: 'legacy' | 'modern') => Server;

export interface McpEndpointOptions {
  store: Store;
  logger: Logger;
  factory: ServerFactory;
  /** Largest request body (the hub has already read it under this bound). */
  maxBodyBytes: number;
}

/** A request in flight on a 2025-era session: `notifications/cancelled` for its id closes its server. */
type InFlight = Map<string, Server>;

export class McpEndpoint {
  private readonly modern = new Map<string, { handler: McpHttpHandler; node: NodeMcpRequestHandler }>();
  private readonly inflight: InFlight = new Map();
  /** Sessions with a request in flight (never evicted), by id hash. */
  private readonly busy = new Map<string, number>();
  private readonly touched = new Map<string, number>();

  private readonly opts: McpEndpointOptions;

  constructor(opts: McpEndpointOptions) {
    this.opts = opts;
  }

  async handle(req: IncomingMessage, res: ServerResponse, caller: string, body: unknown): Promise<void> {
    if (await isLegacyRequest(eraProbe(req), body)) return this.legacy(req, res, caller, body);
    return this.modernFor(caller).node(req, res, body);
  }

  /** Drops sessions unused for SESSION_RETENTION_MS. */
  sweep(): void {
    const dropped = this.opts.store.pruneMcpSessions(new Date(Date.now() - SESSION_RETENTION_MS).toISOString());
    if (dropped) this.opts.logger.info('old MCP sessions dropped', { dropped });
    this.touched.clear();
  }

  async close(): Promise<void> {
    for (const server of this.inflight.values()) await server.close().catch(() => {});
    for (const m of this.modern.values()) await m.handler.close().catch(() => {});
    this.modern.clear();
  }

  // ------------------------------------------------------------ 2026-07-28: stateless

  private modernFor(caller: string) {
    let m = this.modern.get(caller);
    if (!m) {
      const handler = createMcpHandler(() => this.opts.factory(caller, 'modern'), {
        legacy: 'reject',
        maxSubscriptions: MAX_SUBSCRIPTIONS_PER_CALLER,
        maxRequestBodySize: this.opts.maxBodyBytes,
        onerror: (err) => this.opts.logger.debug('mcp request refused', { caller, error: redactError(err) }),
      });
      m = { handler, node: toNodeHandler(handler, { maxRequestBodySize: this.opts.maxBodyBytes }) };
      this.modern.set(caller, m);
    }
    return m;
  }

  // ------------------------------------------------------------ 2025 era: sessions in the store

  private async legacy(req: IncomingMessage, res: ServerResponse, caller: string, body: unknown): Promise<void> {
    const store = this.opts.store;
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const key = hashId(sid);
      const session = store.getMcpSession(key);
      // A session of another caller is reported as unknown (rule: http-auth).
      if (!session || session.caller !== caller) return sendJson(res, 404, jsonRpcError(-32001, 'session not found'));
      if (req.method === 'DELETE') {
        store.deleteMcpSession(key);
        res.writeHead(200).end();
        return;
      }
      // Server-initiated messages go out on the response to each POST; there is no standalone stream to open.
      if (req.method === 'GET') {
        res.setHeader('allow', 'POST, DELETE');
        return sendJson(res, 405, jsonRpcError(-32000, 'method not allowed: this hub sends no standalone SSE stream'));
      }
      this.touch(key);
      if (isCancellation(body)) {
        const server = this.inflight.get(`${key}\0${String(body.params.requestId)}`);
        // Closing the request's own server aborts its handler (an agent_wait ends at once).
        if (server) await server.close().catch(() => {});
        res.writeHead(202).end();
        return;
      }
      return this.serveLegacy(req, res, caller, body, key);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      return sendJson(res, 400, jsonRpcError(-32000, 'no MCP session: send initialize first'));
    }
    const refusal = this.admit(caller);
    if (refusal) {
      this.opts.logger.warn('MCP session refused', { caller, reason: refusal });
      res.setHeader('retry-after', String(SESSION_EVICT_IDLE_MS / 1000));
      return sendJson(res, 429, jsonRpcError(-32000, refusal));
    }
    const id = randomUUID();
    const key = hashId(id);
    store.insertMcpSession(key, caller, new Date().toISOString());
    this.touched.set(key, Date.now());
    res.setHeader('mcp-session-id', id);
    res.once('finish', () => {
      if (res.statusCode !== 200) store.deleteMcpSession(key);
    });
    return this.serveLegacy(req, res, caller, body, key);
  }

  /** Room for one more session of `caller`, evicting its least recently seen idle one; or why there is none. */
  private admit(caller: string): string | undefined {
    const { count, oldest } = this.opts.store.mcpSessionsOf(caller);
    if (count < MAX_SESSIONS_PER_CALLER) return undefined;
    const idleSince = Date.now() - SESSION_EVICT_IDLE_MS;
    if (oldest && !this.busy.has(oldest.idHash) && Date.parse(oldest.lastSeen) <= idleSince) {
      this.opts.store.deleteMcpSession(oldest.idHash);
      this.opts.logger.info('idle MCP session evicted for a new one', { caller });
      return undefined;
    }
    return (
      `too many MCP sessions for caller "${caller}": all ${MAX_SESSIONS_PER_CALLER} were used in the last ` +
      `${SESSION_EVICT_IDLE_MS / 60_000} minutes; end sessions you no longer use (HTTP DELETE) or retry later`
    );
  }

  private touch(key: string): void {
    const now = Date.now();
    if (now - (this.touched.get(key) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.touched.set(key, now);
    this.opts.store.touchMcpSession(key, new Date(now).toISOString());
  }

  private async serveLegacy(
    req: IncomingMessage,
    res: ServerResponse,
    caller: string,
    body: unknown,
    key: string,
  ): Promise<void> {
    const server = this.opts.factory(caller, 'legacy');
    // Stateless on the wire: the session was checked above, and this instance lives for this one exchange.
    // The hub's tools send no notifications while they run, so a plain JSON answer says all an SSE stream would, at a
    // fraction of the cost per call.
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    const ids = requestIds(body).map((id) => `${key}\0${id}`);
    for (const id of ids) this.inflight.set(id, server);
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    res.once('close', () => {
      for (const id of ids) if (this.inflight.get(id) === server) this.inflight.delete(id);
      const n = (this.busy.get(key) ?? 1) - 1;
      if (n) this.busy.set(key, n);
      else this.busy.delete(key);
      // The client going away ends the exchange: its handler is aborted, tasks are not (rule: tasks-outlive-clients).
      void server.close().catch(() => {});
    });
    await transport.handleRequest(req, res, body);
  }
}

/**
 * The request as the SDK's era check reads it: method and headers. The check is given the body already parsed, so it
 * reads none; toWebRequest would serialise the whole body again (up to maxBodyBytes) on every request.
 */
function eraProbe(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, values] of Object.entries(req.headersDistinct))
    for (const v of values ?? []) headers.append(name, v);
  return new Request(`http://localhost${req.url ?? '/'}`, { method: req.method ?? 'GET', headers });
}

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

function requestIds(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) =>
    typeof m === 'object' && m !== null && 'method' in m && 'id' in m ? [String((m as { id: unknown }).id)] : [],
  );
}

function isCancellation(body: unknown): body is { params: { requestId: string | number } } {
  const m = body as { method?: unknown; id?: unknown; params?: { requestId?: unknown } } | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    m.method === 'notifications/cancelled' &&
    m.id === undefined &&
    (typeof m.params?.requestId === 'string' || typeof m.params?.requestId === 'number')
  );
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', id: null, error: { code, message } };
}
