// CodexAppServerClient (rule: app-server-client): the Codex app-server JSON-RPC protocol over an explicit WebSocket
// URL, a Unix socket (WebSocket handshake over the socket path) or caller-owned JSONL stdio streams. It never
// discovers, spawns or stops a server, never retries, and never grants or declines a permission on its own.
import type { Readable, Writable } from 'node:stream';
import type { InitializeParams } from '../generated/codex/InitializeParams.ts';
import type { InitializeResponse } from '../generated/codex/InitializeResponse.ts';
import { registerSecret } from '../lib/redact.ts';
import { jsonLinesChannel, openWebSocket, webSocketChannel } from './channels.ts';
import {
  type JsonRpcFailureReason,
  type JsonRpcId,
  JsonRpcPeer,
  JsonRpcRequestError,
  type JsonRpcRequestErrorOptions,
  type MessageChannel,
} from './json-rpc-peer.ts';

export type { JsonRpcFailureReason };

/** Inbound message limit: default, and the range callers may set. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
export const MIN_MAX_MESSAGE_BYTES = 1024;
export const MAX_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** Bytes queued for writing before a send is refused. */
export const MAX_OUTGOING_BUFFER_BYTES = 4 * 1024 * 1024;
/** Pending requests in each direction. */
export const MAX_PENDING_REQUESTS = 256;
/** handshakeTimeoutMs / initializeTimeoutMs: default and range. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 5_000;
export const MIN_STARTUP_TIMEOUT_MS = 1;
export const MAX_STARTUP_TIMEOUT_MS = 120_000;
/** initialize result limits. */
export const MAX_CODEX_HOME_BYTES = 4096;
export const MAX_PLATFORM_FIELD_LENGTH = 64;
const MAX_REQUEST_TIMEOUT_MS = 2_147_483_647;

export type CodexAppServerTransport =
  | { type: 'websocket'; url: string; token?: string }
  | { type: 'unix'; socketPath: string }
  | { type: 'stdio'; readable: Readable; writable: Writable };

export interface CodexClientInfo {
  name: string;
  title?: string | null;
  version: string;
}

export interface CodexServerRequest {
  /** The connection-scoped request id (may be 0); answer with respond() or rejectRequest(). */
  id: JsonRpcId;
  method: string;
  params: unknown;
  /** Aborted when the request is answered, resolved by the server (`serverRequest/resolved`) or disconnected. */
  signal: AbortSignal;
}

export interface CodexAppServerClientOptions {
  transport: CodexAppServerTransport;
  clientInfo: CodexClientInfo;
  experimentalApi?: boolean;
  onNotification?: (notification: { method: string; params: unknown }) => void;
  /** Return immediately; answer later with respond()/rejectRequest(). Without a handler every request gets method-not-supported. */
  onServerRequest?: (request: CodexServerRequest) => void;
  /** Fires once when the connection ends: with the reason, or without one after close(). */
  onClose?: (error?: Error) => void;
  /** Server requests another client answers: never passed on, answered or tracked. */
  ignoredServerRequestMethods?: readonly string[];
  maxMessageBytes?: number;
  handshakeTimeoutMs?: number;
  initializeTimeoutMs?: number;
}

/**
 * A failed request. `dispatched` is true when it reached the wire: its effect is then unknown unless `code` is set.
 * The peer's request error with the Codex method in its message; `reason` says why (see JsonRpcFailureReason).
 */
export class CodexAppServerRequestError extends JsonRpcRequestError {
  constructor(method: string, message: string, opts: JsonRpcRequestErrorOptions) {
    super(method, `Codex app-server request ${method} failed: ${message}`, opts);
    this.name = 'CodexAppServerRequestError';
  }
}

type State = 'new' | 'connecting' | 'connected' | 'closed';

export class CodexAppServerClient {
  /** The server's Codex version, read from its initialize user agent; undefined when not reported. */
  serverVersion: string | undefined;
  /** The server's absolute $CODEX_HOME (Codex ≥ 0.120). */
  serverCodexHome: string | undefined;
  /** e.g. unix or windows (Codex ≥ 0.115). */
  serverPlatformFamily: string | undefined;
  /** e.g. linux, macos or windows (Codex ≥ 0.115). */
  serverPlatformOs: string | undefined;

  private readonly options: CodexAppServerClientOptions;
  private readonly maxMessageBytes: number;
  private readonly handshakeTimeoutMs: number;
  private readonly initializeTimeoutMs: number;
  private readonly ignored: ReadonlySet<string>;
  private peer: JsonRpcPeer | undefined;
  private state: State = 'new';
  private closeRequested = false;
  private closeReported = false;

  constructor(options: CodexAppServerClientOptions) {
    validateTransport(options?.transport);
    validateClientInfo(options.clientInfo);
    this.maxMessageBytes = integerOption(
      'maxMessageBytes',
      options.maxMessageBytes,
      DEFAULT_MAX_MESSAGE_BYTES,
      MIN_MAX_MESSAGE_BYTES,
      MAX_MAX_MESSAGE_BYTES,
    );
    this.handshakeTimeoutMs = integerOption(
      'handshakeTimeoutMs',
      options.handshakeTimeoutMs,
      DEFAULT_STARTUP_TIMEOUT_MS,
      MIN_STARTUP_TIMEOUT_MS,
      MAX_STARTUP_TIMEOUT_MS,
    );
    this.initializeTimeoutMs = integerOption(
      'initializeTimeoutMs',
      options.initializeTimeoutMs,
      DEFAULT_STARTUP_TIMEOUT_MS,
      MIN_STARTUP_TIMEOUT_MS,
      MAX_STARTUP_TIMEOUT_MS,
    );
    const ignored = options.ignoredServerRequestMethods ?? [];
    if (!Array.isArray(ignored) || ignored.some((m) => typeof m !== 'string' || !m)) {
      throw new TypeError('ignoredServerRequestMethods must be an array of method names');
    }
    this.ignored = new Set(ignored);
    // The bearer token must never surface in baton's own logs or errors.
    if (options.transport.type === 'websocket') registerSecret(options.transport.token);
    this.options = { ...options, transport: { ...options.transport } as CodexAppServerTransport };
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  /** Opens the transport, runs initialize → initialized and records what the server reported. Call once. */
  async connect(): Promise<void> {
    if (this.state !== 'new') throw new Error('CodexAppServerClient.connect() can be called only once per client');
    this.state = 'connecting';
    let channel: MessageChannel;
    const limits = { maxMessageBytes: this.maxMessageBytes, maxOutgoingBytes: MAX_OUTGOING_BUFFER_BYTES };
    const transport = this.options.transport;
    try {
      if (transport.type === 'stdio') {
        channel = jsonLinesChannel(transport.readable, transport.writable, limits);
      } else {
        const endpoint =
          transport.type === 'websocket'
            ? { type: 'url' as const, url: transport.url, token: transport.token }
            : { type: 'unix' as const, socketPath: transport.socketPath };
        const ws = await openWebSocket(endpoint, {
          maxMessageBytes: this.maxMessageBytes,
          handshakeTimeoutMs: this.handshakeTimeoutMs,
        });
        if (this.closeRequested) {
          ws.terminate();
          throw new Error('the client was closed while connecting');
        }
        channel = webSocketChannel(ws, limits);
      }
    } catch (err) {
      this.state = 'closed';
      throw new Error(`Could not connect to the Codex app-server: ${(err as Error).message}`);
    }
    const peer = new JsonRpcPeer({
      channel,
      maxPendingOutgoing: MAX_PENDING_REQUESTS,
      maxPendingIncoming: MAX_PENDING_REQUESTS,
      jsonrpcVersionField: false,
      makeRequestError: (method, message, opts) => new CodexAppServerRequestError(method, message, opts),
      onNotification: (method, params) => this.handleNotification(method, params),
      onRequest: (request) => {
        if (!this.options.onServerRequest) return false;
        this.options.onServerRequest(request);
        return true;
      },
      isIgnoredRequest: (method) => this.ignored.has(method),
      methodNotFoundMessage: (method) => `Method not supported by this client: ${method}`,
      describeViolation: (what, detail) =>
        what === 'too_many_incoming'
          ? `Codex app-server sent ${detail}; closing the connection`
          : `Codex app-server sent ${detail}`,
      onClose: (error) => this.handleClose(error),
    });
    this.peer = peer;
    peer.start();
    if (this.closeRequested) peer.close();
    const params: InitializeParams = {
      clientInfo: {
        name: this.options.clientInfo.name,
        title: this.options.clientInfo.title ?? null,
        version: this.options.clientInfo.version,
      },
      capabilities: this.options.experimentalApi ? { experimentalApi: true, requestAttestation: false } : null,
    };
    let result: unknown;
    try {
      result = await peer.request('initialize', params, { timeoutMs: this.initializeTimeoutMs });
    } catch (err) {
      peer.close();
      this.state = 'closed';
      if (err instanceof JsonRpcRequestError && err.reason === 'timeout') {
        throw new Error(`Codex app-server did not answer initialize within ${this.initializeTimeoutMs} ms`);
      }
      throw err;
    }
    try {
      this.readInitializeResult(result);
      peer.notify('initialized');
    } catch (err) {
      peer.fail(err as Error);
      this.state = 'closed';
      throw err;
    }
    if (peer.isClosed) {
      this.state = 'closed';
      throw new Error('the Codex app-server connection closed during initialize');
    }
    this.state = 'connected';
  }

  /** Sends one request and resolves with its result, unvalidated. No retries. */
  request(method: string, params?: unknown, timeoutMs?: number, signal?: AbortSignal): Promise<unknown> {
    if (typeof method !== 'string' || !method) {
      return Promise.reject(new TypeError('request method must be a non-empty string'));
    }
    if (
      timeoutMs !== undefined &&
      !(Number.isInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_REQUEST_TIMEOUT_MS)
    ) {
      return Promise.reject(new RangeError(`timeoutMs must be an integer from 1 to ${MAX_REQUEST_TIMEOUT_MS}`));
    }
    if (this.state !== 'connected' || !this.peer) {
      return Promise.reject(
        new CodexAppServerRequestError(
          method,
          this.state === 'closed' ? 'the connection is closed' : 'the client is not connected; call connect() first',
          { dispatched: false, reason: this.state === 'closed' ? 'closed' : 'not_connected' },
        ),
      );
    }
    return this.peer.request(method, params, { timeoutMs, signal });
  }

  /** Answers a server request; false when its id is unknown, answered, resolved or from a closed connection. */
  respond(id: JsonRpcId, result: unknown): boolean {
    return this.peer?.respond(id, result) ?? false;
  }

  rejectRequest(id: JsonRpcId, code: number, message: string): boolean {
    if (!Number.isInteger(code)) throw new TypeError('rejectRequest code must be an integer JSON-RPC error code');
    return this.peer?.respondError(id, code, String(message)) ?? false;
  }

  /** Closes this connection only: ends stdio streams / the WebSocket; never touches any process. */
  close(): void {
    this.closeRequested = true;
    if (this.peer) this.peer.close();
    else if (this.state === 'new') {
      this.state = 'closed';
      this.reportClose(undefined);
    }
  }

  private handleNotification(method: string, params: unknown): void {
    if (method === 'serverRequest/resolved') {
      const requestId = (params as { requestId?: unknown } | null)?.requestId;
      if (typeof requestId === 'number' || typeof requestId === 'string') this.peer?.forgetIncoming(requestId);
    }
    this.options.onNotification?.({ method, params });
  }

  private handleClose(error: Error | undefined): void {
    this.state = 'closed';
    this.reportClose(error);
  }

  private reportClose(error: Error | undefined): void {
    if (this.closeReported) return;
    this.closeReported = true;
    this.options.onClose?.(error);
  }

  private readInitializeResult(result: unknown): void {
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      throw new Error('Codex server returned an invalid initialize result');
    }
    const r = result as Partial<Record<keyof InitializeResponse, unknown>>;
    const family = optionalPlatformField(r.platformFamily, 'platformFamily');
    const os = optionalPlatformField(r.platformOs, 'platformOs');
    const codexHome = r.codexHome === undefined || r.codexHome === null ? undefined : r.codexHome;
    if (codexHome !== undefined && !isValidCodexHome(codexHome, family)) invalidField('codexHome');
    this.serverVersion = versionFromUserAgent(r.userAgent);
    this.serverCodexHome = codexHome as string | undefined;
    this.serverPlatformFamily = family;
    this.serverPlatformOs = os;
  }
}

function invalidField(field: string): never {
  throw new Error(`Codex server returned an invalid initialize ${field}`);
}

const PLATFORM_FIELD = /^[a-z][a-z0-9_]*$/;

function optionalPlatformField(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > MAX_PLATFORM_FIELD_LENGTH || !PLATFORM_FIELD.test(value)) {
    invalidField(field);
  }
  return value;
}

// C0, DEL and C1 controls.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function isValidCodexHome(value: unknown, family: string | undefined): boolean {
  if (typeof value !== 'string' || !value) return false;
  if (!value.isWellFormed() || CONTROL_CHARACTER.test(value)) return false;
  if (Buffer.byteLength(value, 'utf8') > MAX_CODEX_HOME_BYTES) return false;
  const posix = value.startsWith('/');
  const windows =
    /^[A-Za-z]:[\\/]/.test(value) || // drive
    /^\\\\\?\\/.test(value) || // verbatim \\?\
    /^\\\\[^\\/?]+[\\/][^\\/]+/.test(value); // UNC \\server\share
  if (family === 'windows') return windows;
  if (family === undefined) return posix || windows;
  return posix;
}

// The user agent starts with `<originator>/<version>`; anything else is not a Codex user agent.
const USER_AGENT_VERSION = /^[^\s/]+(?:\/[^\s/]+)*\/([0-9A-Za-z.+-]{1,64})(?:\s|$)/;

function versionFromUserAgent(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !value.isWellFormed() || CONTROL_CHARACTER.test(value)) invalidField('userAgent');
  const m = USER_AGENT_VERSION.exec(value as string);
  if (!m) invalidField('userAgent');
  return m[1];
}

function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function validateClientInfo(info: unknown): void {
  const i = info as Partial<CodexClientInfo> | undefined;
  if (!i || typeof i.name !== 'string' || !i.name || typeof i.version !== 'string' || !i.version) {
    throw new TypeError('clientInfo must have a non-empty name and version');
  }
  if (i.title !== undefined && i.title !== null && typeof i.title !== 'string') {
    throw new TypeError('clientInfo.title must be a string when given');
  }
}

function validateTransport(transport: unknown): void {
  const t = transport as Partial<Record<string, unknown>> | undefined;
  switch (t?.type) {
    case 'websocket': {
      let url: URL;
      try {
        url = new URL(String(t.url));
      } catch {
        throw new TypeError('transport.url must be a ws:// or wss:// URL');
      }
      if (typeof t.url !== 'string' || (url.protocol !== 'ws:' && url.protocol !== 'wss:')) {
        throw new TypeError('transport.url must be a ws:// or wss:// URL');
      }
      if (url.username || url.password || url.hash) {
        throw new TypeError(
          'transport.url must not contain user info or a fragment; pass the token as transport.token',
        );
      }
      if (t.token !== undefined && (typeof t.token !== 'string' || !t.token || /[\r\n]/.test(t.token))) {
        throw new TypeError('transport.token must be a non-empty single-line string when given');
      }
      return;
    }
    case 'unix':
      if (typeof t.socketPath !== 'string' || !t.socketPath.startsWith('/') || t.socketPath.includes('\0')) {
        throw new TypeError('transport.socketPath must be an absolute filesystem path');
      }
      return;
    case 'stdio': {
      const r = t.readable as Readable | undefined;
      const w = t.writable as Writable | undefined;
      if (!r || typeof r.on !== 'function' || !w || typeof w.write !== 'function') {
        throw new TypeError('transport.readable and transport.writable must be streams');
      }
      return;
    }
    default:
      throw new TypeError("transport.type must be 'websocket', 'unix' or 'stdio'");
  }
}
