// One MCP endpoint per caller serving both protocol eras (rules: caller-endpoints, durable-sessions): 2026-07-28
// requests are stateless and go to the SDK's own handler; 2025-era requests carry an `Mcp-Session-Id` that the store
// binds to the caller, so a session outlives a hub restart and a long idle. A session costs one store row: all 2025-era
// sessions of a caller are answered by one long-lived server instance (SessionChannel) that routes each answer back to
// its HTTP exchange, so a request costs no server or transport construction and no web Request/Response conversion.
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import {
  classifyInboundRequest,
  createMcpHandler,
  type InboundHttpRequest,
  isInitializeRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResponse,
  type McpHttpHandler,
  type RequestId,
  type Server,
  type Transport,
} from '@modelcontextprotocol/server';
import { isDiskFull, type Store } from '../../core/store.ts';
import type { Logger } from '../../lib/log.ts';
import { redactError } from '../../lib/redact.ts';
import { httpStatus, jsonRpcCode, reportable } from '../errors.ts';
import { postMessages } from './post-checks.ts';

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

/**
 * The SDK's Node adapter, loaded by the first 2026-07-28 request rather than at the hub's start: through
 * @hono/node-server it imports node:http and node:http2 as ES modules, which loads Node's bundled undici, a cost a hub
 * serving only 2025-era clients never needs (rule: lazy-commands).
 */
let nodeAdapterModule: Promise<typeof import('@modelcontextprotocol/node')> | undefined;
const nodeAdapter = () => (nodeAdapterModule ??= import('@modelcontextprotocol/node'));

/**
 * The MCP protocol era a request speaks (glossary: era): era2026 is 2026-07-28, stateless requests; era2025 is the 2025
 * protocol, its sessions named by `Mcp-Session-Id`. The SDK calls era2025 "legacy"; in baton that word means Codex ≤ 0.153.
 */
export type McpEra = 'era2025' | 'era2026';

/** Builds the server instance that answers one caller: per request in era2026, once per caller in era2025. */
export type ServerFactory = (caller: string, era: McpEra) => Server;

export interface McpEndpointOptions {
  store: Store;
  logger: Logger;
  factory: ServerFactory;
  /** Largest request body (the hub has already read it under this bound). */
  maxBodyBytes: number;
}

export class McpEndpoint {
  private readonly era2026Handlers = new Map<string, { handler: McpHttpHandler; node: NodeMcpRequestHandler }>();
  private readonly sessionChannels = new Map<string, Promise<SessionChannel>>();
  /** Sessions with a request in flight (never evicted), by id hash. */
  private readonly busy = new Map<string, number>();
  private readonly touched = new Map<string, number>();
  /**
   * Session rows known to exist, id hash → caller: a request on a known session costs no store read. Only this
   * endpoint writes the rows (the daemon's lease keeps it the only one), so every delete below drops its entry and the
   * sweep, which deletes by age, clears it all.
   */
  private readonly known = new Map<string, string>();

  private readonly opts: McpEndpointOptions;

  constructor(opts: McpEndpointOptions) {
    this.opts = opts;
  }

  async handle(req: IncomingMessage, res: ServerResponse, caller: string, body: unknown): Promise<void> {
    if (isEra2025(req, body)) return this.era2025(req, res, caller, body);
    return (this.era2026Handlers.get(caller) ?? (await this.era2026For(caller))).node(req, res, body);
  }

  /** Drops sessions unused for SESSION_RETENTION_MS. */
  sweep(): void {
    const dropped = this.opts.store.pruneMcpSessions(new Date(Date.now() - SESSION_RETENTION_MS).toISOString());
    if (dropped) this.opts.logger.info('old MCP sessions dropped', { dropped });
    this.touched.clear();
    this.known.clear();
  }

  async close(): Promise<void> {
    for (const channel of this.sessionChannels.values()) await (await channel).server.close().catch(() => {});
    this.sessionChannels.clear();
    for (const m of this.era2026Handlers.values()) await m.handler.close().catch(() => {});
    this.era2026Handlers.clear();
  }

  // ------------------------------------------------------------ 2026-07-28: stateless

  /** The caller's handler, built on its first 2026-07-28 request (handle() takes a built one without awaiting). */
  private async era2026For(caller: string) {
    const { toNodeHandler } = await nodeAdapter();
    // Looked up again after the await: the caller's first two requests may both have come here.
    let m = this.era2026Handlers.get(caller);
    if (!m) {
      // The SDK's handler refuses a server instance that already serves an exchange, so this era builds one per request.
      const handler = createMcpHandler(() => this.opts.factory(caller, 'era2026'), {
        legacy: 'reject',
        maxSubscriptions: MAX_SUBSCRIPTIONS_PER_CALLER,
        maxRequestBodySize: this.opts.maxBodyBytes,
        onerror: (err) => this.opts.logger.debug('mcp request refused', { caller, error: redactError(err) }),
      });
      m = { handler, node: toNodeHandler(handler, { maxRequestBodySize: this.opts.maxBodyBytes }) };
      this.era2026Handlers.set(caller, m);
    }
    return m;
  }

  // ------------------------------------------------------------ 2025 era: sessions in the store

  private async era2025(req: IncomingMessage, res: ServerResponse, caller: string, body: unknown): Promise<void> {
    // MCP 2025-06-18 has no JSON-RPC batches (and initialize never was allowed in one): refused, nothing changes.
    if (Array.isArray(body)) {
      return sendJson(
        res,
        400,
        jsonRpcError(
          -32600,
          'invalid request: JSON-RPC batches are not part of MCP 2025-06-18; send one message per POST',
        ),
      );
    }
    const store = this.opts.store;
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const key = hashId(sid);
      const owner = this.ownerOf(key);
      // A session of another caller is reported as unknown (rule: http-auth).
      if (owner !== caller) return sendJson(res, 404, jsonRpcError(-32001, 'session not found'));
      if (req.method === 'DELETE') {
        if (!this.write(res, () => this.drop(key))) return;
        res.writeHead(200).end();
        return;
      }
      // Server-initiated messages go out on the response to each POST; there is no standalone stream to open.
      if (req.method === 'GET') {
        res.setHeader('allow', 'POST, DELETE');
        return sendJson(res, 405, jsonRpcError(-32000, 'method not allowed: this hub sends no standalone SSE stream'));
      }
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST, DELETE');
        return sendJson(res, 405, jsonRpcError(-32000, `method ${req.method} not allowed`));
      }
      const messages = checkPost(req, res, body, false);
      if (!messages) return;
      this.touch(key);
      return this.serveEra2025(res, caller, messages, key);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      return sendJson(res, 400, jsonRpcError(-32000, 'no MCP session: send initialize first'));
    }
    const messages = checkPost(req, res, body, true);
    if (!messages) return;
    // Admission may evict an idle session, a write like the new session's row.
    const admitted = this.write(res, () => this.admit(caller));
    if (!admitted) return;
    const refusal = admitted.value;
    if (refusal) {
      this.opts.logger.warn('MCP session refused', { caller, reason: refusal });
      res.setHeader('retry-after', String(SESSION_EVICT_IDLE_MS / 1000));
      return sendJson(res, 429, jsonRpcError(-32000, refusal));
    }
    const id = randomUUID();
    const key = hashId(id);
    if (!this.write(res, () => store.insertMcpSession(key, caller, new Date().toISOString()))) return;
    this.known.set(key, caller);
    this.touched.set(key, Date.now());
    res.setHeader('mcp-session-id', id);
    res.once('finish', () => {
      if (res.statusCode === 200) return;
      try {
        this.drop(key);
      } catch (err) {
        // A session row left behind is swept like any unused one.
        this.opts.logger.warn('could not drop a failed MCP session', { caller, error: redactError(err) });
      }
    });
    return this.serveEra2025(res, caller, messages, key);
  }

  /**
   * Runs a session-row write; a full disk is answered 507 with the store's own message, as every other write the hub
   * refuses for lack of space (nothing was changed). Undefined when that answer has been sent.
   */
  private write<T>(res: ServerResponse, fn: () => T): { value: T } | undefined {
    try {
      return { value: fn() };
    } catch (err) {
      const full = reportable(err);
      if (full?.code !== 'disk_full') throw err;
      sendJson(res, httpStatus(full.code), jsonRpcError(jsonRpcCode(full.code), full.message));
      return undefined;
    }
  }

  /** Room for one more session of `caller`, evicting its least recently seen idle one; or why there is none. */
  private admit(caller: string): string | undefined {
    const { count, oldest } = this.opts.store.mcpSessionsOf(caller);
    if (count < MAX_SESSIONS_PER_CALLER) return undefined;
    const idleSince = Date.now() - SESSION_EVICT_IDLE_MS;
    if (oldest && !this.busy.has(oldest.idHash) && Date.parse(oldest.lastSeen) <= idleSince) {
      this.drop(oldest.idHash);
      this.opts.logger.info('idle MCP session evicted for a new one', { caller });
      return undefined;
    }
    return (
      `too many MCP sessions for caller "${caller}": all ${MAX_SESSIONS_PER_CALLER} were used in the last ` +
      `${SESSION_EVICT_IDLE_MS / 60_000} minutes; end sessions you no longer use (HTTP DELETE) or retry later`
    );
  }

  /** The caller a session belongs to, or undefined when there is no such session. */
  private ownerOf(key: string): string | undefined {
    let caller = this.known.get(key);
    if (caller === undefined) {
      caller = this.opts.store.getMcpSession(key)?.caller;
      if (caller !== undefined) this.known.set(key, caller);
    }
    return caller;
  }

  /** Deletes a session's row; its entry goes first, so a failed delete can only cost a store read later. */
  private drop(key: string): boolean {
    this.known.delete(key);
    this.touched.delete(key);
    return this.opts.store.deleteMcpSession(key);
  }

  private touch(key: string): void {
    const now = Date.now();
    if (now - (this.touched.get(key) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.touched.set(key, now);
    try {
      this.opts.store.touchMcpSession(key, new Date(now).toISOString());
    } catch (err) {
      // `last_seen` only orders evictions and the sweep: a full disk must not refuse the reads it still serves.
      if (!isDiskFull(err)) throw err;
    }
  }

  private channelOf(caller: string): Promise<SessionChannel> {
    let channel = this.sessionChannels.get(caller);
    if (!channel) {
      const c = new SessionChannel(this.opts.factory(caller, 'era2025'), (err) =>
        this.opts.logger.debug('mcp 2025-era message refused', { caller, error: redactError(err) }),
      );
      channel = c.server.connect(c).then(() => c);
      this.sessionChannels.set(caller, channel);
    }
    return channel;
  }

  private async serveEra2025(
    res: ServerResponse,
    caller: string,
    messages: JSONRPCMessage[],
    key: string,
  ): Promise<void> {
    const channel = await this.channelOf(caller);
    // The messages passed parseJSONRPCMessage: a method with an id is a request, one without is a notification.
    const requests = messages.filter((m): m is JSONRPCRequest => 'method' in m && 'id' in m);
    for (const m of messages) {
      if ('method' in m && !('id' in m)) {
        if (m.method === 'notifications/cancelled') channel.cancelled(key, m.params?.requestId, m.params?.reason);
        else channel.notify(m);
      }
      // A response from the client answers nothing: the hub sends no requests of its own.
    }
    if (!requests.length) {
      res.writeHead(202).end();
      return;
    }
    const exchange = new Exchange(res, requests.length);
    this.busy.set(key, (this.busy.get(key) ?? 0) + 1);
    const ids = requests.map((r, i) => channel.dispatch(key, r, exchange, i));
    res.once('close', () => {
      const n = (this.busy.get(key) ?? 1) - 1;
      if (n) this.busy.set(key, n);
      else this.busy.delete(key);
      // The client going away ends the exchange: its handlers are aborted, tasks are not (rule: tasks-outlive-clients).
      if (!exchange.finished) for (const id of ids) channel.abort(id, 'the client closed the connection');
    });
  }
}

/**
 * One caller's 2025-era server, connected once and kept: a Transport that hands each request to the server under an id
 * of its own (ids of different sessions, and of one session across requests, would collide) and routes the server's
 * answer back to the HTTP exchange that carried the request, under the client's id.
 */
class SessionChannel implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private next = 0;
  /** Requests the server is answering, by the id it sees. */
  private readonly pending = new Map<number, { exchange: Exchange; slot: number; id: RequestId; client: string }>();
  /** The same requests by session and client id, for `notifications/cancelled`. */
  private readonly byClientId = new Map<string, number>();

  readonly server: Server;
  private readonly report: (err: Error) => void;

  constructor(server: Server, report: (err: Error) => void) {
    this.server = server;
    this.report = report;
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.pending.clear();
    this.byClientId.clear();
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Only answers have somewhere to go: the hub's tools send no notifications while they run (the SDK's JSON response
    // mode drops them the same way), and there is no standalone stream.
    if (!('result' in message || 'error' in message)) return;
    const p = this.pending.get(message.id as number);
    if (!p) return;
    this.forget(message.id as number);
    p.exchange.answer(p.slot, { ...message, id: p.id } as JSONRPCResponse);
  }

  dispatch(session: string, request: JSONRPCRequest, exchange: Exchange, slot: number): number {
    const id = ++this.next;
    const client = `${session}\0${typeof request.id}:${request.id}`;
    this.pending.set(id, { exchange, slot, id: request.id, client });
    this.byClientId.set(client, id);
    this.deliver({ ...request, id });
    return id;
  }

  notify(message: JSONRPCMessage): void {
    this.deliver(message);
  }

  /** `notifications/cancelled` from a session: aborts exactly that session's request with that id. */
  cancelled(session: string, requestId: unknown, reason: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const id = this.byClientId.get(`${session}\0${typeof requestId}:${requestId}`);
    if (id !== undefined) this.abort(id, typeof reason === 'string' ? reason : undefined);
  }

  /** Aborts a request's handler; its exchange ends without an answer for it (the protocol sends none once aborted). */
  abort(id: number, reason: string | undefined): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.forget(id);
    this.deliver({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: id, ...(reason ? { reason } : {}) },
    });
    p.exchange.drop(p.slot);
  }

  private forget(id: number): void {
    const p = this.pending.get(id);
    this.pending.delete(id);
    if (p && this.byClientId.get(p.client) === id) this.byClientId.delete(p.client);
  }

  private deliver(message: JSONRPCMessage): void {
    try {
      this.onmessage?.(message);
    } catch (err) {
      this.report(err as Error);
    }
  }
}

/**
 * One 2025-era POST: its requests' answers, written as one JSON body once the last is in (a single answer as itself,
 * several as an array, as the SDK's transport does), or 202 when every request was cancelled.
 */
class Exchange {
  finished = false;
  private readonly res: ServerResponse;
  private readonly answers: Array<JSONRPCResponse | undefined>;
  private left: number;

  constructor(res: ServerResponse, count: number) {
    this.res = res;
    this.answers = new Array(count);
    this.left = count;
  }

  answer(slot: number, response: JSONRPCResponse): void {
    this.answers[slot] = response;
    this.settle();
  }

  drop(_slot: number): void {
    this.settle();
  }

  private settle(): void {
    if (--this.left > 0 || this.finished) return;
    this.finished = true;
    if (this.res.writableEnded || this.res.destroyed) return;
    const out = this.answers.filter((a) => a !== undefined);
    if (!out.length) {
      this.res.writeHead(202).end();
      return;
    }
    sendJson(this.res, 200, out.length === 1 ? out[0] : out);
  }
}

/** postMessages on a request, the refusal sent; undefined when it has been. */
function checkPost(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  initialize: boolean,
): JSONRPCMessage[] | undefined {
  const checked = postMessages(req.headers, body, initialize);
  if (Array.isArray(checked)) return checked;
  sendJson(res, checked.status, jsonRpcError(checked.code, checked.message));
  return undefined;
}

/**
 * Whether a request is 2025-era traffic, by the SDK's own classifier (the one its isLegacyRequest and createMcpHandler
 * run), fed from the node request: the body is parsed already and only three headers count, so no web Request is built.
 */
function isEra2025(req: IncomingMessage, body: unknown): boolean {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  };
  const inbound: InboundHttpRequest = { httpMethod: req.method ?? 'GET' };
  const version = header('mcp-protocol-version');
  const method = header('mcp-method');
  const name = header('mcp-name');
  if (version !== undefined) inbound.protocolVersionHeader = version;
  if (method !== undefined) inbound.mcpMethodHeader = method;
  if (name !== undefined) inbound.mcpNameHeader = name;
  if (body !== undefined) inbound.body = body;
  return classifyInboundRequest(inbound).kind === 'legacy';
}

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', id: null, error: { code, message } };
}
