// The browser provider's core: an honest JSON-RPC proxy between the MCP client (stdio) and a local chrome-devtools-mcp.
// Native frames pass byte-for-byte; baton only steps in where rule `leased-browser` says so. This file routes the
// client's frames; the local chrome-devtools-mcp processes are downstream-process.ts's, the browser lease and the
// checks of each browser result against it are lease-manager.ts's.
import type { Readable, Writable } from 'node:stream';
import { isObject } from '../../../lib/json-value.ts';
import { readJsonLines, writeJsonLine } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import { pickFreeLoopbackPort } from '../../../lib/net.ts';
import type { ChildGroup } from '../../../lib/process-group.ts';
import type { DownstreamCommand } from './downstream.ts';
import { DOWNSTREAM_STOP_GRACE_MS, Downstreams } from './downstream-process.ts';
import { SHUTDOWN_RELEASE_BOUND_MS } from './lease-helper.ts';
import { LeaseManager } from './lease-manager.ts';
import { asRpcId, idKey, JSONRPC_INVALID_REQUEST, NEWLINE, type ProxyIo, type RpcId, type RpcMessage } from './rpc.ts';

/** Client frame bound (rule: bounded-frames). */
const MAX_CLIENT_FRAME_BYTES = 8 * 1024 * 1024;

export interface BrowserProxyOptions {
  /** Operator's lease helper argv; without it every browser call fails closed. */
  leaseCommand?: string[];
  downstream: DownstreamCommand;
  viewport: string;
  appPort?: number;
  allowedUrlPatterns: string[];
  /** 0 disables idle release. */
  idleTimeoutMs: number;
  acquireTimeoutMs: number;
  sessionId: string;
  input: Readable;
  output: Writable;
  log: Logger;
  env?: NodeJS.ProcessEnv;
}

export class BrowserProxy {
  private readonly opts: BrowserProxyOptions;
  private readonly downstreams: Downstreams;
  private readonly leases: LeaseManager;
  private readonly groups = new Set<ChildGroup>();
  private readonly abort = new AbortController();
  private shuttingDown = false;
  private shutdownPromise?: Promise<void>;
  private detachClient?: () => void;

  /** Resolves once a shutdown (stdin closed, signal, unusable stream) has stopped and reaped everything. */
  readonly closed: Promise<void>;
  private markClosed: () => void = () => {};

  constructor(opts: BrowserProxyOptions) {
    this.opts = opts;
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
    const io: ProxyIo = {
      shuttingDown: () => this.shuttingDown,
      writeClient: (raw) => this.writeClient(raw),
      replyError: (id, code, message) => this.replyError(id, code, message),
      replyToolError: (id, content, structured) => this.replyToolError(id, content, structured),
      track: (group, running) => (running ? this.groups.add(group) : this.groups.delete(group)),
    };
    this.downstreams = new Downstreams({
      command: opts.downstream,
      allowedUrlPatterns: opts.allowedUrlPatterns,
      env: opts.env,
      log: opts.log,
      io,
      onActivity: () => this.leases.rearmIdleTimer(),
      onBrowserResult: (call, msg, raw) => void this.leases.onBrowserResult(call, msg, raw),
      leasePort: () => this.leases.port,
    });
    this.leases = new LeaseManager({
      leaseCommand: opts.leaseCommand,
      viewport: opts.viewport,
      appPort: opts.appPort,
      idleTimeoutMs: opts.idleTimeoutMs,
      acquireTimeoutMs: opts.acquireTimeoutMs,
      sessionId: opts.sessionId,
      log: opts.log,
      io,
      downstreams: this.downstreams,
      signal: this.abort.signal,
    });
  }

  /** Starts chrome-devtools-mcp at once (pointed at a reserved loopback port) and begins reading the client. */
  async start(): Promise<void> {
    await this.downstreams.start(await pickFreeLoopbackPort());
    this.detachClient = readJsonLines(this.opts.input, {
      maxLineBytes: MAX_CLIENT_FRAME_BYTES,
      onMessage: (msg, raw) => this.onClientFrame(msg, raw),
      onMalformed: () =>
        writeJsonLine(this.opts.output, {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32700, message: 'Parse error: the frame is not valid JSON' },
        }),
      onError: (err) => {
        this.opts.log.error('client stream is no longer usable; shutting down', { error: err.message });
        void this.shutdown();
      },
      onEnd: () => void this.shutdown(),
    });
  }

  /** Stops everything: aborts helpers, releases a held lease (bounded), stops and reaps every child group. */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= this.doShutdown().finally(() => this.markClosed());
    return this.shutdownPromise;
  }

  // ---------------------------------------------------------------- client side

  private onClientFrame(value: unknown, raw: Buffer): void {
    if (this.shuttingDown) return;
    if (!isObject(value)) {
      this.replyError(null, JSONRPC_INVALID_REQUEST, 'Invalid Request: expected one JSON-RPC object per line');
      return;
    }
    const msg = value as RpcMessage;
    const id = asRpcId(msg.id);
    if (typeof msg.method === 'string') {
      if (id === undefined) this.onClientNotification(msg.method, msg, raw);
      else this.onClientRequest(msg.method, id, raw);
      return;
    }
    if (id !== undefined && ('result' in msg || 'error' in msg)) {
      if (!this.downstreams.forwardClientResponse(idKey(id), raw))
        this.opts.log.debug('dropping a client response whose downstream request is gone', { id });
      return;
    }
    this.opts.log.warn('dropping a client frame that is neither request, notification nor response');
  }

  private onClientRequest(method: string, id: RpcId, raw: Buffer): void {
    const key = idKey(id);
    if (method === 'initialize') this.downstreams.noteClientInitialize(raw, key);
    if (method === 'tools/call') {
      this.leases.enqueue({ id, key, raw });
      return;
    }
    this.downstreams.sendRequest({ kind: 'other', id, key, raw });
  }

  private onClientNotification(method: string, msg: RpcMessage, raw: Buffer): void {
    if (method === 'notifications/initialized') this.downstreams.noteClientInitialized(raw);
    if (method === 'notifications/cancelled' && isObject(msg.params)) {
      const requestId = asRpcId((msg.params as { requestId?: unknown }).requestId);
      if (requestId !== undefined && this.leases.cancel(idKey(requestId))) return;
    }
    this.downstreams.sendFrame(raw);
  }

  private writeClient(raw: Buffer): void {
    if (this.shuttingDown) return;
    this.opts.output.write(Buffer.concat([raw, NEWLINE]));
  }

  private replyError(id: RpcId | null, code: number, message: string): void {
    if (this.shuttingDown) return;
    writeJsonLine(this.opts.output, { jsonrpc: '2.0', id, error: { code, message } });
  }

  private replyToolError(id: RpcId, content: string[], structured: Record<string, unknown>): void {
    if (this.shuttingDown) return;
    writeJsonLine(this.opts.output, {
      jsonrpc: '2.0',
      id,
      result: {
        content: content.map((text) => ({ type: 'text', text })),
        structuredContent: structured,
        isError: true,
      },
    });
  }

  // ---------------------------------------------------------------- shutdown

  private async doShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.leases.stopAccepting();
    this.detachClient?.();
    this.abort.abort();
    const ds = this.downstreams.live;
    if (ds) this.downstreams.retire(ds, 'shutting down');
    // An acquire in flight was just aborted; if it still produced a lease, that lease is released too.
    const work = await this.leases.releaseForShutdown();
    if (ds) work.push(ds.group.exited);
    let boundTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(work),
      new Promise((r) => {
        boundTimer = setTimeout(r, SHUTDOWN_RELEASE_BOUND_MS + DOWNSTREAM_STOP_GRACE_MS);
      }),
    ]);
    clearTimeout(boundTimer);
    // Whatever is still tracked (an idle release past the shutdown bound...) is stopped and reaped.
    await Promise.allSettled([...this.groups].map((g) => g.stop(DOWNSTREAM_STOP_GRACE_MS)));
  }
}
