// One typed client for the OpenCode server's HTTP API. Request and response shapes come from @opencode-ai/sdk's
// generated types (the same OpenAPI document the server serves at GET /doc); nothing here guesses a shape.
// Every request is bounded by a timeout, redirects are never followed, and credentials never reach an error message.
import { Readable } from 'node:stream';
import type {
  Event,
  GlobalHealthResponses,
  PermissionReplyData,
  PermissionReplyResponses,
  QuestionRejectResponses,
  SessionAbortResponses,
  SessionCreateData,
  SessionCreateResponses,
  SessionGetResponses,
  SessionListData,
  SessionListResponses,
  SessionMessagesData,
  SessionMessagesResponses,
  SessionPromptAsyncData,
  SessionPromptData,
  SessionPromptResponses,
  SessionStatusResponses,
} from '@opencode-ai/sdk/v2/types';
import { isObject } from '../../lib/json-value.ts';
import { readLines } from '../../lib/jsonl.ts';
import { redact, registerSecret } from '../../lib/redact.ts';

export type {
  Event as OpenCodeEvent,
  Message,
  Part,
  Session,
} from '@opencode-ai/sdk/v2/types';

/** Default bound of one request that does not run a model turn. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Largest response body read into memory (a long chat's message list stays well below). */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** Largest single SSE line of the event stream. */
export const MAX_EVENT_LINE_BYTES = 8 * 1024 * 1024;
const MAX_ERROR_BODY_CHARS = 500;

export interface OpenCodeClientOptions {
  /** Server origin, e.g. http://127.0.0.1:4096/ */
  baseUrl: string;
  username?: string;
  password?: string;
  /** Bound of requests that name none (default 30 s). */
  requestTimeoutMs?: number;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** Overrides the client's default bound for this request. */
  timeoutMs?: number;
}

type Query = Record<string, string | number | boolean | undefined>;
type Body<D extends { body?: unknown }> = NonNullable<D['body']>;
type Q<D extends { query?: unknown }> = NonNullable<D['query']>;

export type OpenCodeErrorKind = 'http' | 'timeout' | 'aborted' | 'redirect' | 'network' | 'protocol';

export class OpenCodeRequestError extends Error {
  readonly kind: OpenCodeErrorKind;
  readonly status: number | undefined;
  constructor(kind: OpenCodeErrorKind, message: string, status?: number) {
    super(redact(message));
    this.name = 'OpenCodeRequestError';
    this.kind = kind;
    this.status = status;
  }
}

export class OpenCodeClient {
  readonly baseUrl: string;
  private readonly authorization: string | undefined;
  private readonly secrets: string[];
  private readonly requestTimeoutMs: number;

  constructor(opts: OpenCodeClientOptions) {
    this.baseUrl = opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.secrets = [];
    if (opts.password) {
      const basic = Buffer.from(`${opts.username ?? 'opencode'}:${opts.password}`).toString('base64');
      this.authorization = `Basic ${basic}`;
      this.secrets.push(opts.password, basic);
      registerSecret(opts.password);
      registerSecret(basic);
    }
  }

  health(opts?: RequestOptions) {
    return this.json<GlobalHealthResponses[200]>('GET', '/global/health', {}, undefined, opts);
  }

  listSessions(query: Q<SessionListData>, opts?: RequestOptions) {
    return this.json<SessionListResponses[200]>('GET', '/session', query, undefined, opts);
  }

  getSession(sessionId: string, query: { directory?: string }, opts?: RequestOptions) {
    return this.json<SessionGetResponses[200]>('GET', `/session/${seg(sessionId)}`, query, undefined, opts);
  }

  createSession(body: Body<SessionCreateData>, query: { directory?: string }, opts?: RequestOptions) {
    return this.json<SessionCreateResponses[200]>('POST', '/session', query, body, opts);
  }

  listMessages(sessionId: string, query: Q<SessionMessagesData>, opts?: RequestOptions) {
    return this.json<SessionMessagesResponses[200]>(
      'GET',
      `/session/${seg(sessionId)}/message`,
      query,
      undefined,
      opts,
    );
  }

  /** Sends a message and waits for the assistant's reply (the request lasts as long as the turn). */
  sendMessage(sessionId: string, body: Body<SessionPromptData>, query: { directory?: string }, opts?: RequestOptions) {
    return this.json<SessionPromptResponses[200]>('POST', `/session/${seg(sessionId)}/message`, query, body, opts);
  }

  /** Queues a message and returns at once (204); follow the turn on the event stream. */
  async promptAsync(
    sessionId: string,
    body: Body<SessionPromptAsyncData>,
    query: { directory?: string },
    opts?: RequestOptions,
  ): Promise<void> {
    await this.request('POST', `/session/${seg(sessionId)}/prompt_async`, query, body, opts);
  }

  abort(sessionId: string, query: { directory?: string }, opts?: RequestOptions) {
    return this.json<SessionAbortResponses[200]>('POST', `/session/${seg(sessionId)}/abort`, query, undefined, opts);
  }

  /** Answers a permission request the server is waiting on (baton only ever rejects). */
  replyPermission(
    requestId: string,
    body: Body<PermissionReplyData>,
    query: { directory?: string },
    opts?: RequestOptions,
  ) {
    return this.json<PermissionReplyResponses[200]>('POST', `/permission/${seg(requestId)}/reply`, query, body, opts);
  }

  rejectQuestion(requestId: string, query: { directory?: string }, opts?: RequestOptions) {
    return this.json<QuestionRejectResponses[200]>(
      'POST',
      `/question/${seg(requestId)}/reject`,
      query,
      undefined,
      opts,
    );
  }

  sessionStatus(query: { directory?: string }, opts?: RequestOptions) {
    return this.json<SessionStatusResponses[200]>('GET', '/session/status', query, undefined, opts);
  }

  /**
   * The server's event stream (GET /event) for one directory. Yields parsed events until `signal` aborts or the server
   * ends the stream. `opened` resolves once the server answered, so callers can subscribe before they act.
   */
  events(query: { directory?: string }, signal: AbortSignal): { opened: Promise<void>; events: AsyncIterable<Event> } {
    let markOpened!: () => void;
    let failOpened!: (err: unknown) => void;
    const opened = new Promise<void>((res, rej) => {
      markOpened = res;
      failOpened = rej;
    });
    opened.catch(() => {});
    const self = this;
    async function* iterate(): AsyncGenerator<Event> {
      // The stream itself is long-lived; only reaching the server is bounded by the request timeout.
      const connect = new AbortController();
      const connectTimer = setTimeout(() => connect.abort(), self.requestTimeoutMs);
      let res: Response;
      try {
        res = await self.send(
          'GET',
          '/event',
          query,
          undefined,
          { signal: AbortSignal.any([signal, connect.signal]), timeoutMs: 0 },
          'text/event-stream',
        );
      } catch (err) {
        const e = connect.signal.aborted
          ? new OpenCodeRequestError('timeout', `GET /event did not answer within ${self.requestTimeoutMs} ms`)
          : err;
        failOpened(e);
        throw e;
      } finally {
        clearTimeout(connectTimer);
      }
      markOpened();
      if (!res.body) return;
      const stream = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
      const queue: Event[] = [];
      let pending = '';
      let wake: (() => void) | undefined;
      let ended = false;
      let failure: Error | undefined;
      const notify = () => {
        wake?.();
        wake = undefined;
      };
      readLines(stream, {
        maxLineBytes: MAX_EVENT_LINE_BYTES,
        onLine: (line) => {
          const text = line.toString('utf8');
          if (!text.startsWith('data:')) return;
          // OpenCode writes one data line per event; a value split over several lines is joined until it parses.
          pending = pending ? `${pending}\n${text.slice(5).trimStart()}` : text.slice(5).trimStart();
          if (pending.length > MAX_EVENT_LINE_BYTES) pending = '';
          let value: unknown;
          try {
            value = JSON.parse(pending);
          } catch {
            return;
          }
          pending = '';
          // An event is an object; other JSON (null, a number, an array) is no event, and is skipped.
          if (!isObject(value)) return;
          queue.push(value as Event);
          notify();
        },
        onError: (err) => {
          failure = err;
          stream.destroy();
          notify();
        },
        onEnd: () => {
          ended = true;
          notify();
        },
      });
      stream.on('error', (err) => {
        failure ??= err;
        notify();
      });
      stream.on('close', () => {
        ended = true;
        notify();
      });
      const onAbort = () => stream.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        for (;;) {
          while (queue.length) yield queue.shift()!;
          if (failure && !signal.aborted)
            throw new OpenCodeRequestError('protocol', `event stream failed: ${failure.message}`);
          if (ended || signal.aborted) return;
          await new Promise<void>((r) => {
            wake = r;
          });
        }
      } finally {
        signal.removeEventListener('abort', onAbort);
        stream.destroy();
      }
    }
    return { opened, events: iterate() };
  }

  private async json<T>(method: string, path: string, query: Query, body: unknown, opts?: RequestOptions): Promise<T> {
    const res = await this.request(method, path, query, body, opts);
    let text: string;
    try {
      text = await readBounded(res, opts?.signal);
    } catch (err) {
      if (err instanceof OpenCodeRequestError) throw err;
      // The bound (or the caller) cut the body off mid-read: the same outcome as while waiting for the headers.
      if (opts?.signal?.aborted) throw new OpenCodeRequestError('aborted', `${method} ${path} was cancelled`);
      throw new OpenCodeRequestError(
        (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError' ? 'timeout' : 'network',
        `${method} ${path} failed while reading the answer: ${(err as Error).message}`,
      );
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new OpenCodeRequestError('protocol', `${method} ${path} returned a body that is not JSON`);
    }
  }

  private async request(
    method: string,
    path: string,
    query: Query,
    body: unknown,
    opts: RequestOptions = {},
  ): Promise<Response> {
    const res = await this.send(method, path, query, body, opts, 'application/json');
    return res;
  }

  private async send(
    method: string,
    path: string,
    query: Query,
    body: unknown,
    opts: RequestOptions,
    accept: string,
  ): Promise<Response> {
    const url = new URL(path.slice(1), this.baseUrl);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const timeoutMs = opts.timeoutMs ?? this.requestTimeoutMs;
    const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length ? AbortSignal.any(signals) : undefined;
    const headers: Record<string, string> = { accept };
    if (this.authorization) headers.authorization = this.authorization;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal,
      });
    } catch (err) {
      if (timeout?.aborted && !opts.signal?.aborted)
        throw new OpenCodeRequestError(
          'timeout',
          `${method} ${path} timed out after ${Math.round(timeoutMs / 1000)} s`,
        );
      if (opts.signal?.aborted) throw new OpenCodeRequestError('aborted', `${method} ${path} was cancelled`);
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new OpenCodeRequestError(
        'network',
        `${method} ${path} could not reach the OpenCode server at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      );
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => {});
      throw new OpenCodeRequestError(
        'redirect',
        `${method} ${path} answered with a redirect (${res.status}); redirects are never followed`,
        res.status,
      );
    }
    if (!res.ok) {
      const text = await readBounded(res, opts.signal).catch(() => '');
      const hint = res.status === 401 ? ' (check OPENCODE_SERVER_PASSWORD / OPENCODE_SERVER_USERNAME)' : '';
      throw new OpenCodeRequestError(
        'http',
        `${method} ${path} failed with HTTP ${res.status}${hint}${text ? `: ${redact(text, this.secrets).slice(0, MAX_ERROR_BODY_CHARS)}` : ''}`,
        res.status,
      );
    }
    return res;
  }
}

function seg(id: string): string {
  return encodeURIComponent(id);
}

async function readBounded(res: Response, signal?: AbortSignal): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      if (signal?.aborted) throw new OpenCodeRequestError('aborted', 'request was cancelled');
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_RESPONSE_BYTES)
        throw new OpenCodeRequestError('protocol', `response body exceeds ${MAX_RESPONSE_BYTES} bytes`);
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks).toString('utf8');
}
