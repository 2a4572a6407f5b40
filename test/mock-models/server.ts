// The shared base of every scripted mock model server: a loopback HTTP server that records each request and hands it to
// a wire-format-specific handler. Tests await requests (event-driven), never sleep.
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** Parsed JSON when the body was JSON, else the raw text. */
  body: unknown;
  rawBody: string;
}

export type MockHandler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export class MockModelServer {
  readonly requests: RecordedRequest[] = [];
  private readonly server: Server;
  private readonly emitter = new EventEmitter();
  private readonly open = new Set<ServerResponse>();
  private port = 0;

  private constructor(handler: MockHandler) {
    this.server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = rawBody;
      try {
        body = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {}
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        rawBody,
      };
      this.requests.push(recorded);
      this.emitter.emit('request', recorded);
      this.open.add(res);
      res.once('close', () => this.open.delete(res));
      try {
        await handler(recorded, res);
      } catch (err) {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      }
    });
  }

  static async start(handler: MockHandler): Promise<MockModelServer> {
    const mock = new MockModelServer(handler);
    mock.server.listen(0, '127.0.0.1');
    await once(mock.server, 'listening');
    mock.port = (mock.server.address() as AddressInfo).port;
    return mock;
  }

  /** e.g. http://127.0.0.1:PORT */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Resolves with the first recorded request (past or future) that matches. */
  waitForRequest(match: (r: RecordedRequest) => boolean, timeoutMs = 30_000): Promise<RecordedRequest> {
    const seen = this.requests.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.emitter.off('request', onReq);
        reject(new Error(`mock model server: no matching request within ${timeoutMs} ms`));
      }, timeoutMs);
      const onReq = (r: RecordedRequest) => {
        if (!match(r)) return;
        clearTimeout(timer);
        this.emitter.off('request', onReq);
        resolve(r);
      };
      this.emitter.on('request', onReq);
    });
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Starts an SSE response. */
export function beginSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

/** Writes one SSE event (`event:` line only when named). */
export function writeSse(res: ServerResponse, data: unknown, event?: string): void {
  res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
}

/** A promise a test resolves by hand: lets a scripted step stall until the test says so. */
export class Gate {
  readonly promise: Promise<void>;
  open!: () => void;
  constructor() {
    this.promise = new Promise((r) => {
      this.open = r;
    });
  }
}

/** A scripted step, or a function that builds it from the request it answers (for a model that reads tool results). */
export type Scripted<Step> = Step | ((req: RecordedRequest) => Step);

/**
 * A queue of scripted steps consumed one per model request, in order; when the queue runs dry every further request
 * gets the fallback.
 */
export class Script<Step extends object> {
  private readonly steps: Scripted<Step>[] = [];
  private readonly fallback: Scripted<Step>;
  constructor(fallback: Scripted<Step>) {
    this.fallback = fallback;
  }
  push(...steps: Scripted<Step>[]): this {
    this.steps.push(...steps);
    return this;
  }
  next(req?: RecordedRequest): Step {
    const s = this.steps.shift() ?? this.fallback;
    if (typeof s !== 'function') return s;
    if (!req) throw new Error('a step built from the request needs the request');
    return s(req);
  }
  /** Drops the steps nobody asked for, so they cannot answer a later test's request. */
  clear(): void {
    this.steps.length = 0;
  }
}
