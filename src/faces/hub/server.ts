// The hub daemon (rules: hub-commands, caller-endpoints, crash-durability, tasks-outlive-clients): one durable local
// service on Streamable HTTP, one MCP endpoint per caller.
import { createHash, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { type FSWatcher, statSync, watch } from 'node:fs';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { Server } from '@modelcontextprotocol/server';
import type { Agent, AgentProbe } from '../../agents/agent.ts';
import { probeAgent } from '../../agents/probe.ts';
import { createAgent } from '../../agents/registry.ts';
import {
  DEFAULT_EVENT_PAGE,
  Engine,
  EngineError,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  OPERATOR,
} from '../../core/engine.ts';
import { DaemonLease } from '../../core/lease.ts';
import { probeGroupRecorder } from '../../core/recovery.ts';
import { isDiskFull, Store, StoreFullError } from '../../core/store.ts';
import { backupInto, listBackups } from '../../core/store-backup.ts';
import { createLogger, type Logger, type LogLevel } from '../../lib/log.ts';
import { readBodyText } from '../../lib/net.ts';
import { ensurePrivateDir } from '../../lib/private-fs.ts';
import { redactDeep, redactError } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import { httpStatus, reportable } from '../errors.ts';
import { serveTasks, type TaskBackend } from '../mcp-tasks.ts';
import { serveTools, type ToolDef } from '../mcp-tools.ts';
import { budgetOf, type HubConfig, loadConfig, reachableAgents } from './config.ts';
import { jsonRpcError, McpEndpoint, type McpEra, sendJson } from './mcp-endpoint.ts';
import { type HubTargets, hubTargets } from './targets.ts';
import { hubTaskBackend } from './tasks.ts';
import { hubTools } from './tools.ts';
import { Dashboard } from './ui/dashboard.ts';

/** Largest JSON-RPC request body the hub reads (rule: bounded-frames). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** `baton tasks list` page size unless `limit` says otherwise. */
const DEFAULT_CONTROL_LIST = 50;

export interface HubOptions {
  config: HubConfig;
  logLevel?: LogLevel;
  /** Log to stderr too (the foreground `serve`); the state dir log is always written. */
  stderrLogs?: boolean;
  /** Skip the agent probes of the preflight (tests that start many hubs). */
  skipPreflight?: boolean;
  /** Listen on this port instead of the configured one (`serve --port`). */
  port?: number;
}

export interface AgentHealth extends AgentProbe {}

export class Hub {
  readonly config: HubConfig;
  readonly logger: Logger;
  readonly engine: Engine;
  readonly agents: Map<string, Agent>;
  /** The execution targets by name, and the one each agent runs on. */
  readonly targets: HubTargets;
  private readonly store: Store;
  private readonly lease: DaemonLease;
  private readonly http: HttpServer;
  private readonly endpoint: McpEndpoint;
  /** Each caller's tools, built once: a 2026-07-28 server instance is made per request and only binds them. */
  private readonly tools = new Map<string, ToolDef[]>();
  private readonly taskBackends = new Map<string, TaskBackend>();
  private readonly callerTokens: Map<string, Buffer>;
  private readonly controlToken: Buffer;
  private readonly dashboard: Dashboard;
  private readonly startedAt = Date.now();
  private probes: AgentHealth[] = [];
  private allowed: { hosts: Set<string>; origins: Set<string> } | undefined;
  /** Authorised roots (real paths); replaced when the config file changes. */
  private roots: string[];
  private configStamp: string | null;
  private watcher: FSWatcher | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private backupTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  /** Resolves when the hub has shut down (e.g. via `baton stop`). */
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  private constructor(opts: HubOptions, lease: DaemonLease) {
    this.config = opts.config;
    this.lease = lease;
    this.roots = opts.config.rootsReal;
    this.configStamp = stampOf(opts.config.path);
    const stateDir = opts.config.stateDirPath;
    this.logger = createLogger({
      level: opts.logLevel ?? opts.config.logLevel,
      file: join(stateDir, 'baton.log'),
      stderr: opts.stderrLogs ?? false,
      component: 'hub',
    });
    this.store = new Store(join(stateDir, 'baton.db'));
    this.targets = hubTargets(opts.config, () => this.roots);
    this.agents = new Map(
      Object.entries(opts.config.agents).map(([name, entry]) => [
        name,
        createAgent(name, entry, { stateDir, logger: this.logger, target: this.targets.ofAgent.get(name) }),
      ]),
    );
    this.engine = new Engine({
      store: this.store,
      agents: this.agents,
      reachable: (caller) => reachableAgents(opts.config, caller),
      // Checked at every admission, so a root added a moment ago is honoured even before the watcher fires.
      roots: () => {
        this.refreshConfig();
        return this.roots;
      },
      privateDirs: opts.config.privateDirs,
      targetOf: (agent) => this.targets.ofAgent.get(agent),
      stateDir,
      logger: this.logger,
      ...opts.config.limits,
      agentMaxRunning: opts.config.agentMaxRunning,
      budgetOf: (caller) => budgetOf(opts.config, caller),
    });
    this.callerTokens = new Map(Object.entries(opts.config.callers).map(([c, v]) => [c, digest(v.token)]));
    this.controlToken = digest(opts.config.control.token);
    this.dashboard = new Dashboard({
      engine: this.engine,
      tokenMatches: (token) => timingSafeEqual(digest(token), this.controlToken),
      logger: this.logger,
    });
    this.endpoint = new McpEndpoint({
      store: this.store,
      logger: this.logger,
      maxBodyBytes: MAX_BODY_BYTES,
      factory: (caller, era) => this.mcpServer(caller, era),
    });
    // node:http through getBuiltinModule, not an ESM import: that would read every export, WebSocket's lazy getter
    // included, and load Node's bundled undici at every start (rule: lazy-commands).
    const { createServer } = process.getBuiltinModule('node:http');
    this.http = createServer((req, res) => {
      this.route(req, res).catch((err) => {
        this.logger.error('request failed', { error: redactError(err) });
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.end();
      });
    });
    this.closed = new Promise((r) => {
      this.resolveClosed = r;
    });
  }

  /** Takes the state-dir lease, recovers from a previous crash, runs the preflight and starts listening. */
  static async start(opts: HubOptions): Promise<Hub> {
    try {
      return await Hub.startOnce(opts);
    } catch (err) {
      // Whichever write hit the full disk first (lease, store, marker, recovery), the operator reads one clear reason.
      if (isDiskFull(err) && !(err instanceof StoreFullError))
        throw new StoreFullError(`the hub cannot start: no space left for its state dir ${opts.config.stateDirPath}`);
      throw err;
    }
  }

  private static async startOnce(opts: HubOptions): Promise<Hub> {
    const stateDir = ensurePrivateDir(opts.config.stateDirPath);
    const lease = DaemonLease.acquire(stateDir);
    let hub: Hub;
    try {
      hub = new Hub(opts, lease);
    } catch (err) {
      lease.release();
      throw err;
    }
    try {
      const recovered = await hub.engine.recover();
      if (recovered.interrupted || recovered.stoppedGroups)
        hub.logger.warn('recovered after an unclean stop', recovered);
      if (!opts.skipPreflight) await hub.preflight();
      for (const t of hub.targetStatus())
        if (t.warning || t.error) hub.logger.warn('execution target cannot fence as configured', { ...t });
      hub.watchConfig();
      hub.http.listen(opts.port ?? opts.config.listen.port, opts.config.listen.host);
      await once(hub.http, 'listening');
    } catch (err) {
      await hub.close();
      throw err;
    }
    hub.sweepTimer = setInterval(() => hub.endpoint.sweep(), 3_600_000);
    hub.sweepTimer.unref();
    hub.scheduleBackup(true);
    hub.logger.info('hub listening', { url: hub.url, agents: [...hub.agents.keys()], roots: hub.roots });
    if (!hub.roots.length) hub.logger.warn('no project roots yet: run `baton init` in a project');
    return hub;
  }

  /**
   * Online backups every `backups.intervalHours`: the next one is due an interval after the newest copy,
   * at once when a store with tasks has none. An empty store is not copied.
   */
  private scheduleBackup(atStart: boolean): void {
    const { intervalHours, keep } = this.config.backups;
    if (!intervalHours || this.closing) return;
    const interval = intervalHours * 3_600_000;
    const stateDir = this.config.stateDirPath;
    const newest = listBackups(stateDir)[0];
    const hasTasks = () => Object.values(this.store.stats()).some((n) => n > 0);
    const delay = newest ? newest.mtimeMs + interval - Date.now() : atStart && hasTasks() ? 0 : interval;
    this.backupTimer = setTimeout(
      () => {
        if (this.closing) return;
        if (hasTasks()) {
          try {
            const b = backupInto(this.store.db, stateDir, keep);
            this.logger.info('backup written', { path: b.path, bytes: b.size, keep });
          } catch (err) {
            this.logger.error('backup failed', { error: redactError(err) });
          }
        }
        this.scheduleBackup(false);
      },
      Math.min(Math.max(0, delay), 2 ** 31 - 1),
    );
    this.backupTimer.unref();
  }

  /** Roots the hub authorises right now (real paths). */
  get currentRoots(): readonly string[] {
    return this.roots;
  }

  /** Watches the config's dir: editors and `baton roots` replace the file by rename, which a file watch would miss. */
  private watchConfig(): void {
    const name = basename(this.config.path);
    try {
      this.watcher = watch(dirname(this.config.path), { persistent: false }, (_event, file) => {
        if (file === null || file === name) this.refreshConfig();
      });
      this.watcher.on('error', (err) => {
        this.logger.warn('config watch stopped; root changes apply at the next agent_run', { error: redactError(err) });
      });
    } catch (err) {
      this.logger.warn('cannot watch the config; root changes apply at the next agent_run', {
        error: redactError(err),
      });
    }
  }

  /**
   * Re-reads the config when its file changed (inode, size or mtime). Only roots apply live; a config that fails
   * validation keeps the previous roots, and changes to anything else are logged as needing a restart.
   */
  refreshConfig(): void {
    const stamp = stampOf(this.config.path);
    if (stamp === this.configStamp) return;
    this.configStamp = stamp;
    let next: HubConfig;
    try {
      next = loadConfig(this.config.location);
    } catch (err) {
      this.logger.warn('config change refused; keeping the previous roots', { reason: redactError(err) });
      return;
    }
    if (next.rootsReal.join('\0') !== this.roots.join('\0')) {
      this.roots = next.rootsReal;
      this.logger.info('roots reloaded', { roots: this.roots });
    }
    const changed = RESTART_KEYS.filter((k) => JSON.stringify(next[k]) !== JSON.stringify(this.config[k]));
    if (changed.length)
      this.logger.warn('config changes that need a restart (`baton stop`, `baton start`)', { changed });
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://${this.config.listen.host}:${this.port}`;
  }

  /** Doctor preflight (rule: free-probes): version and login of every configured agent, without spending inference. */
  async preflight(): Promise<AgentHealth[]> {
    this.probes = await Promise.all(
      [...this.agents.values()].map((agent) =>
        probeAgent(agent, {
          timeoutMs: this.config.limits.probeTimeoutMs,
          ...probeGroupRecorder(this.store, this.logger),
        }),
      ),
    );
    // A probe reports what the agent printed (version, login, an error): agent text like any other, redacted once here.
    this.probes = this.probes.map((p) => redactDeep(p) as AgentHealth);
    for (const p of this.probes) {
      if (p.available) this.logger.info('agent ready', { agent: p.name, version: p.version, login: p.login });
      else this.logger.warn('agent unavailable', { agent: p.name, detail: p.detail });
    }
    return this.probes;
  }

  /** Each target an agent uses (and `local`), with its fence and any warning; the warnings are logged too. */
  targetStatus() {
    return this.targets.status();
  }

  health() {
    return {
      ok: true,
      version: BATON_VERSION,
      pid: process.pid,
      uptimeSeconds: Math.round((Date.now() - this.startedAt) / 1000),
      url: this.url,
      stateDir: this.config.stateDirPath,
      config: this.config.path,
      roots: this.roots,
      agents: [...this.agents.keys()].map((name) => ({
        ...(this.probes.find((p) => p.name === name) ?? { name, kind: this.agents.get(name)!.kind, available: null }),
        target: this.targets.ofAgent.get(name)?.name,
      })),
      // What each target fences, and the one-line warning with its fix where it cannot.
      targets: this.targetStatus(),
      ...this.engine.health(),
    };
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweepTimer);
      clearTimeout(this.backupTimer);
      this.watcher?.close();
      this.dashboard.close();
      await this.engine.close();
      await this.endpoint.close();
      this.http.closeAllConnections();
      if (this.http.listening) await new Promise<void>((r) => this.http.close(() => r()));
      this.store.close();
      this.lease.release();
      this.logger.info('hub stopped');
      this.resolveClosed();
    })();
    return this.closing;
  }

  // ------------------------------------------------------------ HTTP

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    // DNS-rebinding defence (rules: caller-endpoints, http-auth): only our own loopback host names and no foreign
    // browser origin.
    if (!this.hostAllowed(req.headers.host)) return sendJson(res, 403, { error: 'host not allowed' });
    const origin = req.headers.origin;
    if (origin !== undefined && !this.originAllowed(origin)) return sendJson(res, 403, { error: 'origin not allowed' });

    if (url.pathname === '/healthz') return sendJson(res, 200, { ok: true });
    if (url.pathname.startsWith('/control/')) return this.control(req, res, url);
    if (url.pathname === '/ui' || url.pathname.startsWith('/ui/')) return this.dashboard.handle(req, res, url);
    const m = /^\/mcp\/([a-z][a-z0-9-]{0,39})\/?$/.exec(url.pathname);
    if (m) return this.mcp(req, res, m[1]!);
    return sendJson(res, 404, { error: 'not found' });
  }

  private async control(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const failure = bearerFailure(req, this.controlToken);
    if (failure) {
      this.logger.warn('unauthorized request', { endpoint: 'control', path: url.pathname, reason: failure });
      return unauthorized(res);
    }
    const path = url.pathname;
    if (path === '/control/tasks' || path.startsWith('/control/tasks/')) return this.controlTasks(req, res, url);
    if (path === '/control/health' && req.method === 'GET') return sendJson(res, 200, this.health());
    if (path === '/control/usage' && req.method === 'GET') return this.controlUsage(res, url);
    if (path === '/control/stop' && req.method === 'POST') return this.controlStop(res, url);
    return sendJson(res, 404, { error: 'not found' });
  }

  /**
   * Stopping interrupts every queued and running round (rule: stop-refuses-work): refused with the list of those tasks
   * unless `force=1`, and the answer to a forced stop names what it interrupted.
   */
  private controlStop(res: ServerResponse, url: URL): void {
    const force = url.searchParams.get('force');
    if (force !== null && force !== '0' && force !== '1') {
      sendJson(res, 400, { error: 'force must be 0 or 1' });
      return;
    }
    const unfinished = this.engine.unfinished();
    if (unfinished.length && force !== '1') {
      sendJson(res, 409, {
        error: `${unfinished.length} task(s) still queued or running; a stop would interrupt them`,
        tasks: unfinished,
      });
      return;
    }
    sendJson(res, 202, { stopping: true, interrupted: unfinished });
    setImmediate(() => void this.close());
  }

  /** The operator's view of every caller's tasks (rule: tasks-command): list, status, long-poll, result and cancel. */
  /** Usage per caller and agent over UTC days `from`..`to` (default today), optionally of one `caller`. */
  private controlUsage(res: ServerResponse, url: URL): void {
    const q = url.searchParams;
    try {
      const caller = q.get('caller') ?? undefined;
      const totals = this.engine.usageTotals(caller ?? OPERATOR, q.get('from') ?? undefined, q.get('to') ?? undefined);
      sendJson(res, 200, totals);
    } catch (err) {
      const reported = reportable(err);
      if (!reported) throw err;
      sendJson(res, httpStatus(reported.code), { error: redactError(reported) });
    }
  }

  private async controlTasks(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const q = url.searchParams;
    const int = (name: string, fallback: number) => {
      const raw = q.get(name);
      if (raw === null || raw === '') return fallback;
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < 0) throw new EngineError('invalid', `${name} must be a whole number ≥ 0`);
      return n;
    };
    try {
      if (url.pathname === '/control/tasks' && req.method === 'GET') {
        const limit = Math.min(Math.max(1, int('limit', DEFAULT_CONTROL_LIST)), MAX_LIST_PAGE);
        const order = q.get('order') ?? 'oldest';
        if (order !== 'oldest' && order !== 'newest')
          throw new EngineError('invalid', 'order must be oldest or newest');
        return sendJson(res, 200, this.engine.list(OPERATOR, q.get('cursor') ?? undefined, limit, order));
      }
      const m = /^\/control\/tasks\/([A-Za-z0-9_-]{1,64})(\/wait|\/cancel|\/result)?$/.exec(url.pathname);
      if (!m && /^\/control\/tasks\/[^/]+(\/wait|\/cancel|\/result)?$/.test(url.pathname)) {
        return sendJson(res, 404, { error: 'no task with that id (ids look like t-XXXXXXXXXXXX)' });
      }
      if (!m) return sendJson(res, 404, { error: 'not found' });
      const id = m[1]!;
      if (!m[2] && req.method === 'GET') {
        const limit = Math.min(Math.max(1, int('limit', DEFAULT_EVENT_PAGE)), MAX_EVENT_PAGE);
        return sendJson(res, 200, this.engine.status(OPERATOR, id, int('after', 0), limit));
      }
      if (m[2] === '/wait' && req.method === 'GET') {
        // The long-poll ends early when the client goes away.
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        const view = await this.engine.wait(OPERATOR, id, int('after', 0), int('timeoutMs', MAX_WAIT_MS), gone.signal);
        return sendJson(res, 200, view);
      }
      if (m[2] === '/result' && req.method === 'GET') {
        return sendJson(res, 200, this.engine.result(OPERATOR, id, int('offset', 0)));
      }
      if (m[2] === '/cancel' && req.method === 'POST') return sendJson(res, 200, this.engine.cancel(OPERATOR, id));
      return sendJson(res, 405, { error: `method ${req.method} not allowed here` });
    } catch (err) {
      const reported = reportable(err);
      if (reported) return sendJson(res, httpStatus(reported.code), { error: redactError(reported) });
      throw err;
    }
  }

  private async mcp(req: IncomingMessage, res: ServerResponse, caller: string): Promise<void> {
    const expected = this.callerTokens.get(caller);
    // Unknown callers get the same answer as a wrong token: the endpoint list is not probeable. The log, which only
    // the operator reads, says which it was so a misconfigured client can be fixed.
    const failure = expected ? bearerFailure(req, expected) : 'unknown caller';
    if (failure) {
      this.logger.warn('unauthorized request', { endpoint: 'mcp', caller, reason: failure });
      return unauthorized(res);
    }

    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBodyText(req, MAX_BODY_BYTES);
      if (text === null)
        return sendJson(res, 413, jsonRpcError(-32600, `request body exceeds ${MAX_BODY_BYTES} bytes`));
      try {
        body = JSON.parse(text);
      } catch {
        return sendJson(res, 400, jsonRpcError(-32700, 'parse error: the body is not JSON'));
      }
    }
    await this.endpoint.handle(req, res, caller, body);
  }

  /**
   * A server instance for `caller`: one per request in the 2026-07-28 era, one for all of the caller's 2025-era sessions
   * (both eras share the tools; rule: hub-tools).
   */
  private mcpServer(caller: string, era: McpEra): Server {
    let tools = this.tools.get(caller);
    if (!tools) {
      tools = hubTools(this.engine, caller);
      this.tools.set(caller, tools);
    }
    // logging/setLevel is a 2025-era request (deprecated in 2026-07-28); the hub sends no log messages either way.
    const server = new Server(
      { name: 'baton-hub', version: BATON_VERSION },
      { capabilities: era === 'era2025' ? { tools: {}, logging: {} } : { tools: {} } },
    );
    // The Tasks extension is a 2026-07-28 extension: a 2025-era session keeps the plain tools (rule: tool-handles).
    let backend = this.taskBackends.get(caller);
    if (era === 'era2026' && !backend) {
      backend = hubTaskBackend(this.engine, caller);
      this.taskBackends.set(caller, backend);
    }
    serveTools(server, tools, era === 'era2026' ? { intercept: serveTasks(server, backend!) } : {});
    return server;
  }

  private hostAllowed(host: string | undefined): boolean {
    return host !== undefined && this.loopback().hosts.has(host);
  }

  private originAllowed(origin: string): boolean {
    return this.loopback().origins.has(origin);
  }

  /** The Host and Origin values the hub accepts, built once it listens (its port is fixed from then on). */
  private loopback(): { hosts: Set<string>; origins: Set<string> } {
    if (!this.allowed) {
      const hosts = ['127.0.0.1', 'localhost', '[::1]', this.config.listen.host].map((n) => `${n}:${this.port}`);
      this.allowed = { hosts: new Set(hosts), origins: new Set(hosts.map((h) => `http://${h}`)) };
    }
    return this.allowed;
  }
}

/** Config keys a running hub does not re-apply (roots do apply). */
const RESTART_KEYS = ['listen', 'stateDir', 'control', 'callers', 'agents', 'limits', 'logLevel', 'backups'] as const;

function stampOf(path: string): string | null {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Why a request was refused, for the log (never the token itself). */
type AuthFailure =
  | 'missing authorization header'
  | 'not a Bearer header'
  | 'unexpanded env-var placeholder'
  | 'wrong token';

/** Constant-time bearer check (rule: http-auth): compares fixed-length digests. Returns null when the token matches. */
function bearerFailure(req: IncomingMessage, expected: Buffer): AuthFailure | null {
  const header = req.headers.authorization;
  if (!header) return 'missing authorization header';
  const m = /^Bearer ([^\s]+)$/i.exec(header);
  // A bare "Bearer" is what clients send when the env var holding the token was empty.
  if (!m) return 'not a Bearer header';
  if (timingSafeEqual(digest(m[1]!), expected)) return null;
  // A client that did not expand its config's env reference sends it literally.
  return /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(m[1]!) ? 'unexpanded env-var placeholder' : 'wrong token';
}

function unauthorized(res: ServerResponse): void {
  res.setHeader('www-authenticate', 'Bearer realm="baton"');
  sendJson(res, 401, { error: 'missing or invalid bearer token' });
}
