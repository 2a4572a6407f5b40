// The browser provider's core: an honest JSON-RPC proxy between the MCP client (stdio) and a local chrome-devtools-mcp.
// Native frames pass byte-for-byte; baton only steps in where P-BR says so: lazily leasing a remote Chrome on the first
// browser tool call, checking each browser result against the lease generation it ran under, idle/shutdown release,
// and restarting the downstream (with the client's initialize replayed) when it must point at a new local CDP port.
import type { Readable, Writable } from 'node:stream';
import { readJsonLines, readLines, writeJsonLine } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import { pickFreeLoopbackPort } from '../../../lib/net.ts';
import type { ChildGroup } from '../../../lib/process-group.ts';
import { spawnGroup } from '../../../lib/process-group.ts';
import { redact } from '../../../lib/redact.ts';
import { type DownstreamCommand, downstreamArgs, probeBrowserIdentity } from './downstream.ts';
import {
  HELPER_EXIT_SOFTWARE,
  HELPER_EXIT_TEMPFAIL,
  HELPER_EXIT_UNAVAILABLE,
  type HelperRun,
  IDLE_RELEASE_BOUND_MS,
  LeaseRecordError,
  parseLeaseRecord,
  runHelper,
  SHUTDOWN_RELEASE_BOUND_MS,
  STATUS_TIMEOUT_MS,
} from './lease-helper.ts';

/** Frame bounds (SE-5). Screenshots come back base64 in one frame, so the downstream side is roomier. */
export const MAX_CLIENT_FRAME_BYTES = 8 * 1024 * 1024;
export const MAX_DOWNSTREAM_FRAME_BYTES = 32 * 1024 * 1024;
/** Exit 75 (loopback bind race): retries with a fresh port after the first attempt. */
export const MAX_BIND_RACE_RETRIES = 3;
/** A downstream that keeps dying without answering anything is not restarted forever. */
const MAX_CONSECUTIVE_DOWNSTREAM_RESTARTS = 3;
/** Bound on the replayed initialize of a restarted downstream (npx resolution can be slow). */
const REPLAY_TIMEOUT_MS = 120_000;
const DOWNSTREAM_STOP_GRACE_MS = 3_000;
const HELPER_MESSAGE_MAX_CHARS = 8_000;

export const GUI_NOT_VERIFIED = 'GUI not verified — no browser box available';
const LEASE_REPLACED_TEXT =
  'browser_lease_replaced: the leased browser was replaced; its state (pages, cookies, storage) is lost and the ' +
  'outcome of this call is unknown. Check the browser state (for example with list_pages) instead of blindly ' +
  'retrying; the next browser call leases a fresh browser.';

const JSONRPC_INTERNAL_ERROR = -32603;
const JSONRPC_INVALID_REQUEST = -32600;

type RpcId = string | number;

interface RpcMessage {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

interface BrowserCall {
  id: RpcId;
  key: string;
  raw: Buffer;
  /** The lease generation the call was dispatched under. */
  lease?: Lease;
}

interface PendingRequest {
  kind: 'browser' | 'other';
  id: RpcId;
  key: string;
  raw: Buffer;
  call?: BrowserCall;
}

interface Downstream {
  serial: number;
  port: number;
  group: ChildGroup;
  /** Has run a browser tool call: its CDP connection belongs to one lease and is never reused for another. */
  dirty: boolean;
  dead: boolean;
  ready: boolean;
  readyPromise: Promise<void>;
  settleReady: (err?: Error) => void;
  /** Id key of the replayed client initialize whose result must not reach the client a second time. */
  replayKey?: string;
  /** Client requests this process owes a response to. */
  pending: Map<string, PendingRequest>;
  /** This process's own requests (roots/list...) awaiting the client's response. */
  serverRequests: Set<string>;
  detachReader: () => void;
}

interface Lease {
  generation: string;
  port: number;
  browserUrl: string;
  browserId?: string;
  statusCheck?: Promise<number | null>;
}

/** A browser call that cannot run, answered as one MCP tool error. */
class LeaseFailure extends Error {
  readonly code: string;
  readonly content: string[];
  readonly details: Record<string, unknown>;
  constructor(code: string, content: string[], details: Record<string, unknown> = {}) {
    super(content.join('\n'));
    this.code = code;
    this.content = content;
    this.details = details;
  }
}

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
  private downstream?: Downstream;
  private downstreamSerial = 0;
  private consecutiveRestarts = 0;
  /** Client frames held while the current downstream replays initialize. */
  private backlog: { raw: Buffer; pending?: PendingRequest }[] = [];
  private clientInitialize?: { raw: Buffer; key: string };
  private clientInitialized?: Buffer;

  private lease?: Lease;
  private readonly browserQueue: BrowserCall[] = [];
  private acquiring?: Promise<void>;
  private releasing?: Promise<void>;
  private inFlightBrowserCalls = 0;
  private idleTimer?: NodeJS.Timeout;

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
  }

  /** Starts chrome-devtools-mcp at once (pointed at a reserved loopback port) and begins reading the client. */
  async start(): Promise<void> {
    const port = await pickFreeLoopbackPort();
    const first = this.spawnDownstream(port);
    this.downstream = first;
    await new Promise<void>((resolve, reject) => {
      first.group.child.once('spawn', resolve);
      first.group.child.once('error', (err) =>
        reject(new Error(`cannot start chrome-devtools-mcp (${this.opts.downstream.file}): ${err.message}`)),
      );
    });
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
      this.onClientResponse(id, raw);
      return;
    }
    this.opts.log.warn('dropping a client frame that is neither request, notification nor response');
  }

  private onClientRequest(method: string, id: RpcId, raw: Buffer): void {
    const key = idKey(id);
    if (method === 'initialize' && !this.clientInitialize) this.clientInitialize = { raw, key };
    if (method === 'tools/call') {
      this.enqueueBrowserCall({ id, key, raw });
      return;
    }
    this.sendRequest({ kind: 'other', id, key, raw });
  }

  private onClientNotification(method: string, msg: RpcMessage, raw: Buffer): void {
    if (method === 'notifications/initialized' && !this.clientInitialized) this.clientInitialized = raw;
    if (method === 'notifications/cancelled' && isObject(msg.params)) {
      const requestId = asRpcId((msg.params as { requestId?: unknown }).requestId);
      if (requestId !== undefined && this.cancelBrowserCall(idKey(requestId))) return;
    }
    this.sendFrame(raw);
  }

  /** The client answering a downstream request: only the live downstream's own open requests are correlated. */
  private onClientResponse(id: RpcId, raw: Buffer): void {
    const ds = this.downstream;
    const key = idKey(id);
    if (ds && !ds.dead && ds.serverRequests.delete(key)) {
      this.writeDownstream(ds, raw);
      return;
    }
    this.opts.log.debug('dropping a client response whose downstream request is gone', { id });
  }

  /** A cancelled browser call: dropped from the queue, or forwarded and no longer awaited. */
  private cancelBrowserCall(key: string): boolean {
    const queued = this.browserQueue.findIndex((c) => c.key === key);
    if (queued !== -1) {
      this.browserQueue.splice(queued, 1);
      return true;
    }
    const ds = this.downstream;
    const pending = ds?.pending.get(key);
    if (ds && pending?.kind === 'browser') {
      ds.pending.delete(key);
      this.settleBrowserCall();
    }
    return false;
  }

  // ---------------------------------------------------------------- downstream side

  private spawnDownstream(port: number): Downstream {
    const { file, args } = this.opts.downstream;
    const group = spawnGroup(
      file,
      [...args, ...downstreamArgs(`http://127.0.0.1:${port}`, this.opts.allowedUrlPatterns)],
      { stdio: ['pipe', 'pipe', 'pipe'], env: this.opts.env ?? process.env },
    );
    let settleReady: (err?: Error) => void = () => {};
    const readyPromise = new Promise<void>((resolve, reject) => {
      settleReady = (err) => (err ? reject(err) : resolve());
    });
    readyPromise.catch(() => {});
    const ds: Downstream = {
      serial: ++this.downstreamSerial,
      port,
      group,
      dirty: false,
      dead: false,
      ready: false,
      readyPromise,
      settleReady,
      pending: new Map(),
      serverRequests: new Set(),
      detachReader: () => {},
    };
    this.groups.add(group);
    void group.exited.then(() => {
      this.groups.delete(group);
      this.onDownstreamExit(ds);
    });
    group.child.stdin?.on('error', () => {});
    // chrome-devtools-mcp's diagnostics go to our stderr line by line, redacted (SE-1) and bounded (SE-5).
    if (group.child.stderr) {
      readLines(group.child.stderr, {
        maxLineBytes: 64 * 1024,
        onLine: (line) => process.stderr.write(`${redact(line.toString('utf8'))}\n`),
        onError: () => group.child.stderr?.resume(),
      });
    }
    if (group.child.stdout) {
      ds.detachReader = readJsonLines(group.child.stdout, {
        maxLineBytes: MAX_DOWNSTREAM_FRAME_BYTES,
        onMessage: (msg, raw) => this.onDownstreamFrame(ds, msg, raw),
        onMalformed: () => this.opts.log.warn('chrome-devtools-mcp wrote a line that is not JSON; ignored'),
        onError: (err) => {
          this.opts.log.error('chrome-devtools-mcp output is no longer usable; restarting it', { error: err.message });
          void group.stop(DOWNSTREAM_STOP_GRACE_MS);
        },
      });
    }
    this.opts.log.debug('chrome-devtools-mcp started', { serial: ds.serial, port, pid: group.pgid });

    if (this.clientInitialize) {
      // A replacement process: give it the client's own initialize (same id, same roots capability) and
      // `initialized`; its initialize result is swallowed, the client already has one.
      ds.replayKey = this.clientInitialize.key;
      this.writeDownstream(ds, this.clientInitialize.raw);
      const timer = setTimeout(() => {
        this.opts.log.error('restarted chrome-devtools-mcp did not answer the replayed initialize in time');
        this.retireDownstream(ds, 'replay timed out');
      }, REPLAY_TIMEOUT_MS);
      readyPromise.finally(() => clearTimeout(timer)).catch(() => {});
    } else {
      ds.ready = true;
      settleReady();
    }
    return ds;
  }

  private onDownstreamFrame(ds: Downstream, value: unknown, raw: Buffer): void {
    // Responses owed by a dead or replaced process are dropped; its correlations are already void.
    if (ds.dead) return;
    this.consecutiveRestarts = 0;
    this.rearmIdleTimer();
    if (!isObject(value)) return;
    const msg = value as RpcMessage;
    const id = asRpcId(msg.id);
    if (typeof msg.method === 'string') {
      if (id !== undefined) ds.serverRequests.add(idKey(id));
      this.writeClient(raw);
      return;
    }
    if (id === undefined) return;
    const key = idKey(id);
    if (ds.replayKey === key) {
      ds.replayKey = undefined;
      this.onReplayedInitializeResult(ds, msg);
      return;
    }
    const pending = ds.pending.get(key);
    if (!pending) {
      this.opts.log.debug('dropping a downstream response nobody awaits', { id });
      return;
    }
    ds.pending.delete(key);
    if (pending.kind === 'browser') void this.onBrowserResult(pending.call!, msg, raw);
    else this.writeClient(raw);
  }

  private onReplayedInitializeResult(ds: Downstream, msg: RpcMessage): void {
    if (msg.error !== undefined) {
      this.opts.log.error('restarted chrome-devtools-mcp refused the replayed initialize');
      this.retireDownstream(ds, 'replayed initialize refused');
      return;
    }
    if (this.clientInitialized) this.writeDownstream(ds, this.clientInitialized);
    ds.ready = true;
    ds.settleReady();
    this.flushBacklog();
  }

  private onDownstreamExit(ds: Downstream): void {
    if (ds.dead) return;
    this.opts.log.warn('chrome-devtools-mcp exited unexpectedly', { serial: ds.serial });
    this.retireDownstream(ds, 'chrome-devtools-mcp exited');
    if (this.shuttingDown || this.downstream !== ds) return;
    // A command that cannot even be spawned (ENOENT...) will not start on a retry either.
    const cannotSpawn = ds.group.pgid === -1;
    if (cannotSpawn || ++this.consecutiveRestarts > MAX_CONSECUTIVE_DOWNSTREAM_RESTARTS) {
      const why = cannotSpawn ? 'chrome-devtools-mcp could not be started' : 'chrome-devtools-mcp keeps exiting';
      this.opts.log.error(`${why}; not restarting it`);
      this.downstream = undefined;
      this.failBacklog(`${why}; fix --browser_command / BATON_BROWSER_COMMAND and restart baton`);
      return;
    }
    // Same port: a held lease stays valid; the fresh process connects to the same leased browser.
    this.downstream = this.spawnDownstream(this.lease?.port ?? ds.port);
  }

  /**
   * Takes a downstream out of service: its open correlations are voided before any replacement can reuse ids; the
   * client gets one answer for every request it still owed.
   */
  private retireDownstream(ds: Downstream, why: string): void {
    if (ds.dead) return;
    ds.dead = true;
    ds.detachReader();
    ds.settleReady(new Error(`chrome-devtools-mcp could not be (re)started: ${why}`));
    const owed = [...ds.pending.values()];
    ds.pending.clear();
    ds.serverRequests.clear();
    ds.replayKey = undefined;
    void ds.group.stop(DOWNSTREAM_STOP_GRACE_MS);
    if (this.shuttingDown) return;
    // Frames held for a replay that never completed are answered rather than left hanging.
    if (!ds.ready && this.downstream === ds) this.failBacklog(`chrome-devtools-mcp could not be restarted (${why})`);
    for (const p of owed) {
      if (p.kind === 'browser') void this.onBrowserResult(p.call!, undefined, undefined);
      else
        this.replyError(
          p.id,
          JSONRPC_INTERNAL_ERROR,
          `chrome-devtools-mcp stopped before answering (${why}); the request may be retried`,
        );
    }
  }

  /** Replaces the current downstream with a fresh one pointed at `port`, replaying the client's initialize. */
  private async restartDownstream(port: number): Promise<void> {
    const old = this.downstream;
    if (old) this.retireDownstream(old, 'restarted for a new browser lease');
    const ds = this.spawnDownstream(port);
    this.downstream = ds;
    await ds.readyPromise;
  }

  // ---------------------------------------------------------------- routing helpers

  private sendRequest(pending: PendingRequest): void {
    const ds = this.downstream;
    if (!ds || ds.dead) {
      this.replyError(pending.id, JSONRPC_INTERNAL_ERROR, 'chrome-devtools-mcp is not running; restart baton');
      return;
    }
    if (!ds.ready) {
      this.backlog.push({ raw: pending.raw, pending });
      return;
    }
    ds.pending.set(pending.key, pending);
    this.writeDownstream(ds, pending.raw);
  }

  private sendFrame(raw: Buffer): void {
    const ds = this.downstream;
    if (!ds || ds.dead) return;
    if (!ds.ready) this.backlog.push({ raw });
    else this.writeDownstream(ds, raw);
  }

  private flushBacklog(): void {
    const items = this.backlog.splice(0);
    for (const item of items) {
      if (item.pending) this.sendRequest(item.pending);
      else this.sendFrame(item.raw);
    }
  }

  private failBacklog(message: string): void {
    for (const item of this.backlog.splice(0)) {
      if (item.pending) this.replyError(item.pending.id, JSONRPC_INTERNAL_ERROR, message);
    }
  }

  private writeDownstream(ds: Downstream, raw: Buffer): void {
    ds.group.child.stdin?.write(Buffer.concat([raw, NEWLINE]));
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

  // ---------------------------------------------------------------- browser calls and the lease

  private enqueueBrowserCall(call: BrowserCall): void {
    if (!this.opts.leaseCommand) {
      this.replyToolError(call.id, [GUI_NOT_VERIFIED, 'No --browser_lease_command is configured for this server.'], {
        code: 'browser_unavailable',
      });
      return;
    }
    this.browserQueue.push(call);
    this.pumpBrowserQueue();
  }

  /** FIFO: calls run in arrival order; while a lease is being prepared every call waits on that one attempt. */
  private pumpBrowserQueue(): void {
    while (!this.acquiring && !this.shuttingDown && this.browserQueue.length) {
      const ds = this.downstream;
      if (this.lease && ds && !ds.dead && ds.ready && ds.port === this.lease.port) {
        this.dispatchBrowserCall(this.browserQueue.shift()!, ds, this.lease);
        continue;
      }
      this.acquiring = this.prepareBrowser().then(
        () => {
          this.acquiring = undefined;
          this.pumpBrowserQueue();
        },
        (err: unknown) => {
          this.acquiring = undefined;
          const failure =
            err instanceof LeaseFailure
              ? err
              : new LeaseFailure('browser_lease_failed', [
                  `Could not prepare the browser: ${redact(err instanceof Error ? err.message : String(err))}`,
                ]);
          // Every call that shared this attempt gets its outcome; later calls start a new attempt.
          for (const call of this.browserQueue.splice(0)) {
            this.replyToolError(call.id, failure.content, { code: failure.code, ...failure.details });
          }
        },
      );
    }
  }

  private dispatchBrowserCall(call: BrowserCall, ds: Downstream, lease: Lease): void {
    call.lease = lease;
    ds.dirty = true;
    ds.pending.set(call.key, { kind: 'browser', id: call.id, key: call.key, raw: call.raw, call });
    this.inFlightBrowserCalls++;
    this.disarmIdleTimer();
    this.writeDownstream(ds, call.raw);
  }

  /** Ensures a lease and a ready downstream pointed at its port. */
  private async prepareBrowser(): Promise<void> {
    if (this.releasing) await this.releasing;
    if (this.lease) {
      const ds = this.downstream;
      if (ds && !ds.dead && ds.port === this.lease.port) await ds.readyPromise;
      else await this.restartDownstream(this.lease.port);
      return;
    }
    const command = this.opts.leaseCommand!;
    const current = this.downstream;
    // A downstream that never ran a browser call is already pointed at a reserved port; one that did is replaced.
    let port = current && !current.dead && !current.dirty ? current.port : await pickFreeLoopbackPort();
    for (let attempt = 0; ; attempt++) {
      const ds = this.downstream;
      if (!ds || ds.dead || ds.dirty || ds.port !== port) await this.restartDownstream(port);
      else await ds.readyPromise;
      const args = ['acquire', '--session', this.opts.sessionId, '--local-cdp-port', String(port)];
      args.push('--viewport', this.opts.viewport);
      if (this.opts.appPort !== undefined) args.push('--app-port', String(this.opts.appPort));
      const run = await this.helper(command, args, this.opts.acquireTimeoutMs);
      if (run.code === 0 && !run.timedOut && !run.aborted) {
        if (run.truncated) throw invalidRecord(new LeaseRecordError('output too large'));
        let record: ReturnType<typeof parseLeaseRecord>;
        try {
          record = parseLeaseRecord(run.stdout, port);
        } catch (err) {
          throw invalidRecord(err as Error);
        }
        const lease: Lease = { generation: record.generation, port, browserUrl: record.browserUrl };
        this.lease = lease;
        if (this.shuttingDown) throw new LeaseFailure('browser_shutting_down', ['baton is shutting down']);
        lease.browserId = await probeBrowserIdentity(lease.browserUrl);
        this.opts.log.info('browser lease acquired', { port });
        this.rearmIdleTimer();
        return;
      }
      if (this.shuttingDown) throw new LeaseFailure('browser_shutting_down', ['baton is shutting down']);
      if (run.code === HELPER_EXIT_TEMPFAIL) {
        if (attempt >= MAX_BIND_RACE_RETRIES) {
          throw new LeaseFailure('browser_port_race', [
            `The lease helper reported a loopback port race (exit 75) ${attempt + 1} times in a row; no browser is ` +
              'leased. Free loopback ports on this machine or retry later.',
          ]);
        }
        this.opts.log.info('lease helper lost a loopback bind race; retrying on a new port', { port });
        port = await pickFreeLoopbackPort();
        continue;
      }
      if (run.code === HELPER_EXIT_UNAVAILABLE) {
        const preflight = helperMessage(run);
        throw new LeaseFailure(
          'browser_unavailable',
          preflight ? [GUI_NOT_VERIFIED, preflight] : [GUI_NOT_VERIFIED],
          preflight ? { helperMessage: preflight } : {},
        );
      }
      if (run.code === HELPER_EXIT_SOFTWARE) {
        throw new LeaseFailure('browser_lease_unknown', [
          'The lease helper failed internally (exit 70): whether a browser was leased is unknown. No browser call ' +
            'was made; retrying the call starts a new acquire.',
          ...optional(helperMessage(run)),
        ]);
      }
      throw new LeaseFailure('browser_lease_failed', [
        `The lease helper failed (${describeExit(run)}); no browser call was made.`,
        ...optional(helperMessage(run)),
      ]);
    }
  }

  /**
   * Every browser result is checked against the lease it ran under: a result from a lease baton no longer holds, or
   * from a browser whose identity changed, is never passed off as the lease's; a failure asks the helper for status.
   * `msg` is undefined when the downstream died before answering.
   */
  private async onBrowserResult(
    call: BrowserCall,
    msg: RpcMessage | undefined,
    raw: Buffer | undefined,
  ): Promise<void> {
    try {
      const lease = call.lease!;
      if (this.lease !== lease) {
        this.replyLeaseReplaced(call, msg);
        return;
      }
      const failed = !msg || msg.error !== undefined || (isObject(msg.result) && msg.result.isError === true);
      let browserChanged = false;
      if (!failed) {
        const identity = await probeBrowserIdentity(lease.browserUrl);
        if (identity && lease.browserId && identity !== lease.browserId) browserChanged = true;
        else {
          lease.browserId ??= identity;
          this.writeClient(raw!);
          return;
        }
      }
      const status = await this.leaseStatus(lease);
      if (status === HELPER_EXIT_UNAVAILABLE || browserChanged) {
        if (this.lease === lease) this.dropLease();
        this.replyLeaseReplaced(call, msg);
        return;
      }
      // Status 0 (lease fine) or 70/other (unknown): the native error stands as it is.
      if (raw) this.writeClient(raw);
      else
        this.replyToolError(
          call.id,
          ['chrome-devtools-mcp stopped while this browser call ran; its outcome is unknown.'],
          { code: 'browser_call_interrupted' },
        );
    } finally {
      this.settleBrowserCall();
    }
  }

  private replyLeaseReplaced(call: BrowserCall, native: RpcMessage | undefined): void {
    const nativeError = native ? nativeErrorText(native) : [];
    this.replyToolError(call.id, [LEASE_REPLACED_TEXT, ...nativeError], {
      code: 'browser_lease_replaced',
      browserReplaced: true,
      stateLost: true,
      outcome: 'unknown',
    });
  }

  private settleBrowserCall(): void {
    this.inFlightBrowserCalls = Math.max(0, this.inFlightBrowserCalls - 1);
    this.rearmIdleTimer();
  }

  /** One status check per lease at a time; concurrent failures share it. */
  private leaseStatus(lease: Lease): Promise<number | null> {
    lease.statusCheck ??= this.helper(
      this.opts.leaseCommand!,
      ['status', '--session', this.opts.sessionId, '--generation', lease.generation],
      STATUS_TIMEOUT_MS,
    )
      .then((run) => (run.timedOut || run.aborted ? null : run.code))
      .finally(() => {
        lease.statusCheck = undefined;
      });
    return lease.statusCheck;
  }

  /** The helper said this generation is gone: forget it without a release (there is nothing left to release). */
  private dropLease(): void {
    this.lease = undefined;
    this.disarmIdleTimer();
    this.opts.log.info('browser lease replaced; the next browser call leases a fresh browser');
  }

  private rearmIdleTimer(): void {
    this.disarmIdleTimer();
    if (!this.lease || this.opts.idleTimeoutMs <= 0 || this.inFlightBrowserCalls > 0 || this.shuttingDown) return;
    this.idleTimer = setTimeout(() => this.releaseIdleLease(), this.opts.idleTimeoutMs);
  }

  private disarmIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private releaseIdleLease(): void {
    const lease = this.lease;
    if (!lease || this.inFlightBrowserCalls > 0 || this.acquiring || this.shuttingDown) return;
    this.lease = undefined;
    this.opts.log.info('browser idle; releasing the lease');
    this.releasing = this.release(lease, 'idle', IDLE_RELEASE_BOUND_MS).finally(() => {
      this.releasing = undefined;
    });
  }

  private async release(lease: Lease, reason: 'idle' | 'shutdown', boundMs: number): Promise<void> {
    const args = ['release', '--session', this.opts.sessionId, '--generation', lease.generation, '--reason', reason];
    // Release is best-effort cost control; it is not aborted by shutdown, only bounded.
    const run = await this.helper(this.opts.leaseCommand!, args, boundMs, false);
    if (run.code !== 0) this.opts.log.warn('lease release did not succeed', { reason, exit: describeExit(run) });
  }

  private helper(command: string[], args: string[], timeoutMs: number, abortable = true): Promise<HelperRun> {
    return runHelper(command, args, {
      timeoutMs,
      signal: abortable ? this.abort.signal : undefined,
      track: (group, running) => (running ? this.groups.add(group) : this.groups.delete(group)),
    });
  }

  // ---------------------------------------------------------------- shutdown

  private async doShutdown(): Promise<void> {
    this.shuttingDown = true;
    this.disarmIdleTimer();
    this.detachClient?.();
    this.browserQueue.splice(0);
    this.abort.abort();
    const ds = this.downstream;
    if (ds) this.retireDownstream(ds, 'shutting down');
    // An acquire in flight was just aborted; if it still produced a lease, that lease is released below.
    await this.acquiring?.catch(() => {});
    const work: Promise<unknown>[] = [];
    if (this.releasing) work.push(this.releasing);
    const lease = this.lease;
    this.lease = undefined;
    if (lease) work.push(this.release(lease, 'shutdown', SHUTDOWN_RELEASE_BOUND_MS));
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

const NEWLINE = Buffer.from('\n');

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asRpcId(v: unknown): RpcId | undefined {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? v : undefined;
}

/** Distinguishes 1 from "1", as JSON-RPC does. */
function idKey(id: RpcId): string {
  return JSON.stringify(id);
}

function optional(text: string | undefined): string[] {
  return text ? [text] : [];
}

/** The helper's own explanation (its dev-server preflight error, say), passed on verbatim apart from redaction. */
function helperMessage(run: HelperRun): string | undefined {
  const text = run.stderr.trim() || (run.code !== 0 ? run.stdout.toString('utf8').trim() : '');
  if (!text) return undefined;
  return redact(text.length > HELPER_MESSAGE_MAX_CHARS ? `${text.slice(0, HELPER_MESSAGE_MAX_CHARS)}…` : text);
}

function describeExit(run: HelperRun): string {
  if (run.timedOut) return 'timed out';
  if (run.aborted) return 'stopped by shutdown';
  if (run.signal) return `killed by ${run.signal}`;
  return `exit ${run.code}`;
}

function invalidRecord(err: Error): LeaseFailure {
  return new LeaseFailure('browser_lease_invalid', [`${err.message}. No browser call was made.`]);
}

/** The text of a native error result or JSON-RPC error, kept alongside the enrichment. */
function nativeErrorText(msg: RpcMessage): string[] {
  if (isObject(msg.error)) return [`native error: ${String(msg.error.message ?? 'unknown error')}`];
  if (isObject(msg.result) && msg.result.isError === true && Array.isArray(msg.result.content)) {
    return msg.result.content
      .filter(
        (c): c is { type: 'text'; text: string } => isObject(c) && c.type === 'text' && typeof c.text === 'string',
      )
      .map((c) => `native error: ${c.text}`);
  }
  return [];
}
