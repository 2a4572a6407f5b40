// The one JSON-RPC correlation layer of the project: requests both ways, notifications, responses matched by id (ids
// may be 0 or strings), bounded pending maps, per-request timeouts and abort signals. It knows nothing about the
// transport: a MessageChannel carries whole parsed messages (bounded framing lives in the channel).

/** A framed, bidirectional message stream: JSON lines over stdio, WebSocket messages, … */
export interface MessageChannel {
  /** Starts delivering messages. `onClose` fires once: with an error when the channel broke, without when closed. */
  start(handlers: { onMessage: (message: unknown) => void; onClose: (error?: Error) => void }): void;
  /** Sends one serialised message; throws OutgoingBufferFullError when it would overflow the outgoing buffer. */
  send(text: string): void;
  /** Closes the channel; `onClose` then fires without an error. */
  close(): void;
}

export type JsonRpcId = string | number;

export class OutgoingBufferFullError extends Error {
  constructor(limit: number) {
    super(`the outgoing buffer is full (limit ${limit} bytes); the peer is not reading`);
    this.name = 'OutgoingBufferFullError';
  }
}

/**
 * Why a request failed, as a code callers branch on (never the message text): `closed` (the connection was already
 * closed), `overloaded` (too many pending requests), `send_failed`, `aborted` (by the caller's signal), `timeout` (no
 * answer in time), `disconnected` (the connection ended while it was pending), `server_error` (the peer answered with
 * an error: see `code`), `not_connected` (a client that has not connected yet).
 */
export type JsonRpcFailureReason =
  | 'closed'
  | 'overloaded'
  | 'send_failed'
  | 'aborted'
  | 'timeout'
  | 'disconnected'
  | 'server_error'
  | 'not_connected';

export interface JsonRpcRequestErrorOptions {
  dispatched: boolean;
  reason: JsonRpcFailureReason;
  code?: number;
  data?: unknown;
}

/** A request failure. `dispatched` says whether the request left this process (a timeout after dispatch proves nothing). */
export class JsonRpcRequestError extends Error {
  readonly dispatched: boolean;
  readonly reason: JsonRpcFailureReason;
  /** The peer's JSON-RPC error code, when it answered with an error. */
  readonly code: number | undefined;
  readonly data: unknown;
  readonly method: string;
  constructor(method: string, message: string, opts: JsonRpcRequestErrorOptions) {
    super(message);
    this.name = 'JsonRpcRequestError';
    this.method = method;
    this.dispatched = opts.dispatched;
    this.reason = opts.reason;
    this.code = opts.code;
    this.data = opts.data;
  }
}

export interface IncomingRequest {
  id: JsonRpcId;
  method: string;
  params: unknown;
  /** Aborted when the request is answered, cancelled by the peer, or the connection ends. */
  signal: AbortSignal;
}

/** Standard JSON-RPC error codes used by the peer itself. */
export const JSON_RPC_METHOD_NOT_FOUND = -32601;

export interface JsonRpcPeerOptions {
  channel: MessageChannel;
  /** Pending requests this side may have outstanding at once. */
  maxPendingOutgoing: number;
  /** Unanswered tracked requests from the peer; one more closes the connection (the peer is misbehaving). */
  maxPendingIncoming: number;
  /** Codex omits "jsonrpc" on the wire; MCP requires "2.0". */
  jsonrpcVersionField: boolean;
  /** Error classes thrown by request(); lets a protocol client expose its own named error type. */
  makeRequestError?: (method: string, message: string, opts: JsonRpcRequestErrorOptions) => JsonRpcRequestError;
  onNotification?: (method: string, params: unknown) => void;
  /**
   * A request from the peer, tracked until respond()/respondError(). Return false to have the peer answer
   * method-not-found at once.
   */
  onRequest?: (request: IncomingRequest) => boolean | undefined;
  /** Requests of these methods are neither tracked nor answered (another party owns the answer). */
  isIgnoredRequest?: (method: string) => boolean;
  /** Text of the method-not-found error (`method` is the request's method). */
  methodNotFoundMessage?: (method: string) => string;
  /** Describes a protocol violation that closes the connection (malformed message, too many pending requests). */
  describeViolation?: (what: 'malformed' | 'too_many_incoming', detail: string) => string;
  onClose?: (error?: Error) => void;
}

type ErrorFactory = (
  message: string,
  dispatched: boolean,
  reason: JsonRpcFailureReason,
  code?: number,
  data?: unknown,
) => Error;

interface PendingOutgoing {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  cleanup: () => void;
  fail: ErrorFactory;
}

interface PendingIncoming {
  id: JsonRpcId;
  controller: AbortController;
}

const idKey = (id: JsonRpcId) => `${typeof id}:${id}`;

export class JsonRpcPeer {
  private readonly opts: JsonRpcPeerOptions;
  private readonly outgoing = new Map<string, PendingOutgoing>();
  private readonly incoming = new Map<string, PendingIncoming>();
  private nextId = 0;
  private closed = false;
  private started = false;

  constructor(opts: JsonRpcPeerOptions) {
    this.opts = opts;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get pendingOutgoingCount(): number {
    return this.outgoing.size;
  }

  get pendingIncomingCount(): number {
    return this.incoming.size;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.opts.channel.start({
      onMessage: (message) => this.receive(message),
      onClose: (error) => this.shutdown(error),
    });
  }

  request(method: string, params: unknown, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<unknown> {
    const fail: ErrorFactory = (message, dispatched, reason, code, data) =>
      (this.opts.makeRequestError ?? ((m, msg, o) => new JsonRpcRequestError(m, msg, o)))(method, message, {
        dispatched,
        reason,
        code,
        data,
      });
    if (this.closed) return Promise.reject(fail('the connection is closed', false, 'closed'));
    if (opts.signal?.aborted)
      return Promise.reject(fail('the request was aborted before it was sent', false, 'aborted'));
    if (this.outgoing.size >= this.opts.maxPendingOutgoing) {
      return Promise.reject(
        fail(
          `too many pending requests (limit ${this.opts.maxPendingOutgoing}); wait for some to finish`,
          false,
          'overloaded',
        ),
      );
    }
    const id = this.nextId++;
    const key = idKey(id);
    return new Promise<unknown>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        this.outgoing.delete(key);
        cleanup();
        reject(fail('the request was aborted after it was sent; its outcome is unknown', true, 'aborted'));
      };
      const cleanup = () => {
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      // Registered before sending: an in-process peer may answer synchronously.
      this.outgoing.set(key, { cleanup, resolve, reject, fail });
      try {
        this.send({ id, method, params });
      } catch (err) {
        this.outgoing.delete(key);
        reject(fail(`the request could not be sent: ${(err as Error).message}`, false, 'send_failed'));
        return;
      }
      if (!this.outgoing.has(key)) return; // already answered
      if (opts.timeoutMs !== undefined) {
        const timeoutMs = opts.timeoutMs;
        timer = setTimeout(() => {
          this.outgoing.delete(key);
          cleanup();
          reject(fail(`no response within ${timeoutMs} ms; the request may still take effect`, true, 'timeout'));
        }, timeoutMs);
      }
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.closed) throw new Error('the connection is closed');
    this.send(params === undefined ? { method } : { method, params });
  }

  /** Answers a tracked incoming request; false when the id is unknown, expired or already answered. */
  respond(id: JsonRpcId, result: unknown): boolean {
    return this.answer(id, { id, result });
  }

  respondError(id: JsonRpcId, code: number, message: string, data?: unknown): boolean {
    return this.answer(id, { id, error: data === undefined ? { code, message } : { code, message, data } });
  }

  /** Stops tracking an incoming request without answering it (the peer resolved it elsewhere); aborts its signal. */
  forgetIncoming(id: JsonRpcId, reason = 'resolved'): boolean {
    const pending = this.incoming.get(idKey(id));
    if (!pending) return false;
    this.incoming.delete(idKey(id));
    pending.controller.abort(reason);
    return true;
  }

  close(): void {
    if (this.closed) return;
    // Settle everything first, so the channel's own close report finds the peer already closed.
    this.shutdown(undefined);
    this.opts.channel.close();
  }

  /** Closes because of a protocol violation; onClose receives the error. */
  fail(error: Error): void {
    if (this.closed) return;
    this.shutdown(error);
    this.opts.channel.close();
  }

  private answer(id: JsonRpcId, message: Record<string, unknown>): boolean {
    if (this.closed) return false;
    const pending = this.incoming.get(idKey(id));
    if (!pending) return false;
    this.incoming.delete(idKey(id));
    pending.controller.abort('answered');
    try {
      this.send(message);
    } catch (err) {
      this.fail(err as Error);
      return false;
    }
    return true;
  }

  private send(message: Record<string, unknown>): void {
    const framed = this.opts.jsonrpcVersionField ? { jsonrpc: '2.0', ...message } : message;
    this.opts.channel.send(JSON.stringify(framed));
  }

  private receive(message: unknown): void {
    if (this.closed) return;
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.violation('malformed', 'a message that is not a JSON object');
      return;
    }
    const msg = message as Record<string, unknown>;
    const hasId = typeof msg.id === 'number' || typeof msg.id === 'string';
    if (typeof msg.method === 'string') {
      if (hasId) {
        this.receiveRequest(msg.id as JsonRpcId, msg.method, msg.params);
        return;
      }
      if (msg.id !== undefined && msg.id !== null) {
        this.violation('malformed', 'a request with an invalid id');
        return;
      }
      this.opts.onNotification?.(msg.method, msg.params);
      return;
    }
    if (hasId && ('result' in msg || 'error' in msg)) {
      this.receiveResponse(msg.id as JsonRpcId, msg);
      return;
    }
    // An error response without an id (e.g. a parse error report) cannot be correlated; it is not ours to act on.
    if ('error' in msg && (msg.id === null || msg.id === undefined)) return;
    this.violation('malformed', 'a message that is neither a request, a notification nor a response');
  }

  private receiveRequest(id: JsonRpcId, method: string, params: unknown): void {
    if (this.opts.isIgnoredRequest?.(method)) return;
    const key = idKey(id);
    if (this.incoming.has(key)) {
      this.violation('malformed', `a second request with the pending id ${id}`);
      return;
    }
    if (this.incoming.size >= this.opts.maxPendingIncoming) {
      this.violation('too_many_incoming', `more than ${this.opts.maxPendingIncoming} unanswered requests`);
      return;
    }
    const controller = new AbortController();
    this.incoming.set(key, { id, controller });
    let handled: boolean | undefined = false;
    try {
      if (this.opts.onRequest) handled = this.opts.onRequest({ id, method, params, signal: controller.signal });
    } catch {
      handled = false;
    }
    if (handled === false && this.incoming.has(key)) {
      const text = this.opts.methodNotFoundMessage?.(method) ?? `method not supported: ${method}`;
      this.respondError(id, JSON_RPC_METHOD_NOT_FOUND, text);
    }
  }

  private receiveResponse(id: JsonRpcId, msg: Record<string, unknown>): void {
    const key = idKey(id);
    const pending = this.outgoing.get(key);
    // A late response to a request that timed out or was aborted: nothing waits for it.
    if (!pending) return;
    this.outgoing.delete(key);
    pending.cleanup();
    if ('error' in msg) {
      const error = (msg.error ?? {}) as Record<string, unknown>;
      const code = typeof error.code === 'number' ? error.code : undefined;
      const text = typeof error.message === 'string' ? error.message : 'the peer returned an error without a message';
      pending.reject(pending.fail(text, true, 'server_error', code, error.data));
      return;
    }
    pending.resolve(msg.result);
  }

  private violation(what: 'malformed' | 'too_many_incoming', detail: string): void {
    const text = this.opts.describeViolation?.(what, detail) ?? `protocol violation: the peer sent ${detail}`;
    this.fail(new Error(text));
  }

  private shutdown(error: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    const reason = error ? `the connection closed (${error.message})` : 'the connection was closed';
    for (const pending of this.outgoing.values()) {
      pending.cleanup();
      pending.reject(pending.fail(`${reason}; the request may still take effect`, true, 'disconnected'));
    }
    this.outgoing.clear();
    for (const pending of this.incoming.values()) pending.controller.abort('disconnected');
    this.incoming.clear();
    this.opts.onClose?.(error);
  }
}
