// The local chrome-devtools-mcp processes behind the browser proxy. One is current at a time; it owns the client's
// open requests it was sent, is replaced (with the client's initialize replayed) when it must point at a new local CDP
// port, and is restarted on the same port when it dies. Frames the client sends while a replacement replays
// initialize are held in a backlog and flushed once it is ready.

import { isObject } from '../../../lib/json-value.ts';
import { readJsonLines, readLines } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import { type ChildGroup, spawnGroup } from '../../../lib/process-group.ts';
import { redact } from '../../../lib/redact.ts';
import { type DownstreamCommand, downstreamArgs } from './downstream.ts';
import {
  asRpcId,
  type BrowserCall,
  idKey,
  JSONRPC_INTERNAL_ERROR,
  NEWLINE,
  type PendingRequest,
  type ProxyIo,
  type RpcMessage,
} from './rpc.ts';

/**
 * Screenshots come back base64 in one frame, so the downstream side is roomier than the client's (rule:
 * bounded-frames).
 */
const MAX_DOWNSTREAM_FRAME_BYTES = 32 * 1024 * 1024;
/** A downstream that keeps dying without answering anything is not restarted forever. */
const MAX_CONSECUTIVE_DOWNSTREAM_RESTARTS = 3;
/** Bound on the replayed initialize of a restarted downstream (npx resolution can be slow). */
const REPLAY_TIMEOUT_MS = 120_000;
export const DOWNSTREAM_STOP_GRACE_MS = 3_000;

export interface Downstream {
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

export interface DownstreamsOptions {
  command: DownstreamCommand;
  allowedUrlPatterns: string[];
  env?: NodeJS.ProcessEnv;
  log: Logger;
  io: ProxyIo;
  /** Anything arrived from the downstream (the lease's idle timer restarts). */
  onActivity(): void;
  /** A browser call's answer, or `undefined` when its process died before answering. */
  onBrowserResult(call: BrowserCall, msg: RpcMessage | undefined, raw: Buffer | undefined): void;
  /** The held lease's local CDP port: a dead downstream is restarted on it. */
  leasePort(): number | undefined;
}

export class Downstreams {
  private readonly opts: DownstreamsOptions;
  private current?: Downstream;
  private serial = 0;
  private consecutiveRestarts = 0;
  /** Client frames held while the current downstream replays initialize. */
  private backlog: { raw: Buffer; pending?: PendingRequest }[] = [];
  private clientInitialize?: { raw: Buffer; key: string };
  private clientInitialized?: Buffer;

  constructor(opts: DownstreamsOptions) {
    this.opts = opts;
  }

  /** The live process, if any (it may still be replaying initialize). */
  get live(): Downstream | undefined {
    return this.current;
  }

  /** Starts the first process on `port`; rejects when its command cannot be spawned. */
  async start(port: number): Promise<void> {
    const first = this.spawn(port);
    this.current = first;
    await new Promise<void>((resolve, reject) => {
      first.group.child.once('spawn', resolve);
      first.group.child.once('error', (err) =>
        reject(new Error(`cannot start chrome-devtools-mcp (${this.opts.command.file}): ${err.message}`)),
      );
    });
  }

  /** The client's own initialize and initialized, kept to replay to a replacement process. */
  noteClientInitialize(raw: Buffer, key: string): void {
    this.clientInitialize ??= { raw, key };
  }

  noteClientInitialized(raw: Buffer): void {
    this.clientInitialized ??= raw;
  }

  /** Replaces the current process with a fresh one pointed at `port`, replaying the client's initialize. */
  async restart(port: number): Promise<void> {
    const old = this.current;
    if (old) this.retire(old, 'restarted for a new browser lease');
    const ds = this.spawn(port);
    this.current = ds;
    await ds.readyPromise;
  }

  /**
   * Takes a process out of service: its open correlations are voided before any replacement can reuse ids; the
   * client gets one answer for every request it still owed.
   */
  retire(ds: Downstream, why: string): void {
    if (ds.dead) return;
    ds.dead = true;
    ds.detachReader();
    ds.settleReady(new Error(`chrome-devtools-mcp could not be (re)started: ${why}`));
    const owed = [...ds.pending.values()];
    ds.pending.clear();
    ds.serverRequests.clear();
    ds.replayKey = undefined;
    void ds.group.stop(DOWNSTREAM_STOP_GRACE_MS);
    if (this.opts.io.shuttingDown()) return;
    // Frames held for a replay that never completed are answered rather than left hanging.
    if (!ds.ready && this.current === ds) this.failBacklog(`chrome-devtools-mcp could not be restarted (${why})`);
    for (const p of owed) {
      if (p.kind === 'browser') this.opts.onBrowserResult(p.call!, undefined, undefined);
      else
        this.opts.io.replyError(
          p.id,
          JSONRPC_INTERNAL_ERROR,
          `chrome-devtools-mcp stopped before answering (${why}); the request may be retried`,
        );
    }
  }

  /** A client request for the current process (held while it replays initialize). */
  sendRequest(pending: PendingRequest): void {
    const ds = this.current;
    if (!ds || ds.dead) {
      this.opts.io.replyError(pending.id, JSONRPC_INTERNAL_ERROR, 'chrome-devtools-mcp is not running; restart baton');
      return;
    }
    if (!ds.ready) {
      this.backlog.push({ raw: pending.raw, pending });
      return;
    }
    ds.pending.set(pending.key, pending);
    this.write(ds, pending.raw);
  }

  /** A client notification for the current process. */
  sendFrame(raw: Buffer): void {
    const ds = this.current;
    if (!ds || ds.dead) return;
    if (!ds.ready) this.backlog.push({ raw });
    else this.write(ds, raw);
  }

  /** A browser call to a ready process: it now belongs to that call's lease. */
  dispatchBrowserCall(ds: Downstream, call: BrowserCall): void {
    ds.dirty = true;
    ds.pending.set(call.key, { kind: 'browser', id: call.id, key: call.key, raw: call.raw, call });
    this.write(ds, call.raw);
  }

  /** The client answering a downstream request: only the live process's own open requests are correlated. */
  forwardClientResponse(key: string, raw: Buffer): boolean {
    const ds = this.current;
    if (ds && !ds.dead && ds.serverRequests.delete(key)) {
      this.write(ds, raw);
      return true;
    }
    return false;
  }

  /** Stops awaiting a forwarded browser call the client cancelled; true when one was open. */
  forgetBrowserCall(key: string): boolean {
    const ds = this.current;
    const pending = ds?.pending.get(key);
    if (ds && pending?.kind === 'browser') {
      ds.pending.delete(key);
      return true;
    }
    return false;
  }

  private spawn(port: number): Downstream {
    const { file, args } = this.opts.command;
    const group = spawnGroup(
      file,
      [...args, ...downstreamArgs(`http://127.0.0.1:${port}`, this.opts.allowedUrlPatterns)],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: this.opts.env ?? process.env,
      },
    );
    let settleReady: (err?: Error) => void = () => {};
    const readyPromise = new Promise<void>((resolve, reject) => {
      settleReady = (err) => (err ? reject(err) : resolve());
    });
    readyPromise.catch(() => {});
    const ds: Downstream = {
      serial: ++this.serial,
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
    this.opts.io.track(group, true);
    void group.exited.then(() => {
      this.opts.io.track(group, false);
      this.onExit(ds);
    });
    group.child.stdin?.on('error', () => {});
    // chrome-devtools-mcp's diagnostics go to our stderr line by line, redacted (rule: no-secrets-out) and bounded
    // (rule: bounded-frames).
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
        onMessage: (msg, raw) => this.onFrame(ds, msg, raw),
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
      this.write(ds, this.clientInitialize.raw);
      const timer = setTimeout(() => {
        this.opts.log.error('restarted chrome-devtools-mcp did not answer the replayed initialize in time');
        this.retire(ds, 'replay timed out');
      }, REPLAY_TIMEOUT_MS);
      readyPromise.finally(() => clearTimeout(timer)).catch(() => {});
    } else {
      ds.ready = true;
      settleReady();
    }
    return ds;
  }

  private onFrame(ds: Downstream, value: unknown, raw: Buffer): void {
    // Responses owed by a dead or replaced process are dropped; its correlations are already void.
    if (ds.dead) return;
    this.consecutiveRestarts = 0;
    this.opts.onActivity();
    if (!isObject(value)) return;
    const msg = value as RpcMessage;
    const id = asRpcId(msg.id);
    if (typeof msg.method === 'string') {
      if (id !== undefined) ds.serverRequests.add(idKey(id));
      this.opts.io.writeClient(raw);
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
    if (pending.kind === 'browser') this.opts.onBrowserResult(pending.call!, msg, raw);
    else this.opts.io.writeClient(raw);
  }

  private onReplayedInitializeResult(ds: Downstream, msg: RpcMessage): void {
    if (msg.error !== undefined) {
      this.opts.log.error('restarted chrome-devtools-mcp refused the replayed initialize');
      this.retire(ds, 'replayed initialize refused');
      return;
    }
    if (this.clientInitialized) this.write(ds, this.clientInitialized);
    ds.ready = true;
    ds.settleReady();
    this.flushBacklog();
  }

  private onExit(ds: Downstream): void {
    if (ds.dead) return;
    this.opts.log.warn('chrome-devtools-mcp exited unexpectedly', { serial: ds.serial });
    this.retire(ds, 'chrome-devtools-mcp exited');
    if (this.opts.io.shuttingDown() || this.current !== ds) return;
    // A command that cannot even be spawned (ENOENT...) will not start on a retry either.
    const cannotSpawn = ds.group.pgid === -1;
    if (cannotSpawn || ++this.consecutiveRestarts > MAX_CONSECUTIVE_DOWNSTREAM_RESTARTS) {
      const why = cannotSpawn ? 'chrome-devtools-mcp could not be started' : 'chrome-devtools-mcp keeps exiting';
      this.opts.log.error(`${why}; not restarting it`);
      this.current = undefined;
      this.failBacklog(`${why}; fix --browser-command / BATON_BROWSER_COMMAND and restart baton`);
      return;
    }
    // Same port: a held lease stays valid; the fresh process connects to the same leased browser.
    this.current = this.spawn(this.opts.leasePort() ?? ds.port);
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
      if (item.pending) this.opts.io.replyError(item.pending.id, JSONRPC_INTERNAL_ERROR, message);
    }
  }

  private write(ds: Downstream, raw: Buffer): void {
    ds.group.child.stdin?.write(Buffer.concat([raw, NEWLINE]));
  }
}
