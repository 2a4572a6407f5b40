// The hub daemon (rules: hub-commands, crash-durability, tasks-outlive-clients): one durable local service on
// Streamable HTTP, one MCP endpoint per caller. This module is its lifecycle: it builds the parts, takes the state-dir
// lease, recovers, runs the preflight, listens and stops. Requests go through routes.ts (the control endpoint is
// control.ts, the dashboard ui/); the live config (config-watch.ts) and the backups (backup-schedule.ts) run beside it.
import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/server';
import type { Agent, AgentProbe } from '../../agents/agent.ts';
import { probeAgent } from '../../agents/probe.ts';
import { createAgent } from '../../agents/registry.ts';
import { Engine } from '../../core/engine.ts';
import { DaemonLease } from '../../core/lease.ts';
import { probeGroupRecorder } from '../../core/recovery.ts';
import { isDiskFull, Store, StoreFullError } from '../../core/store.ts';
import { createLogger, type Logger, type LogLevel } from '../../lib/log.ts';
import { ensurePrivateDir } from '../../lib/private-fs.ts';
import { redactDeep } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import { serveTasks, type TaskBackend } from '../mcp-tasks.ts';
import { serveTools, type ToolDef } from '../mcp-tools.ts';
import { BackupSchedule } from './backup-schedule.ts';
import { approvalPolicyOf, budgetOf, type HubConfig, reachableAgents } from './config.ts';
import { ConfigWatch } from './config-watch.ts';
import { ControlApi } from './control.ts';
import { digest, tokenMatches } from './http-auth.ts';
import { McpEndpoint, type McpEra } from './mcp-endpoint.ts';
import { HubRouter, MAX_BODY_BYTES } from './routes.ts';
import { type HubTargets, hubTargets } from './targets.ts';
import { hubTaskBackend } from './tasks.ts';
import { hubTools } from './tools.ts';
import { Dashboard } from './ui/dashboard.ts';

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

/** How long a stopping hub waits for the answers of MCP requests still in flight once every round has ended. */
const MCP_DRAIN_MS = 3_000;

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
  private readonly dashboard: Dashboard;
  private readonly configWatch: ConfigWatch;
  private readonly backups: BackupSchedule;
  private readonly startedAt = Date.now();
  private probes: AgentHealth[] = [];
  private sweepTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  /** MCP requests whose answer is not written yet, and who to tell when none is left. */
  private mcpInFlight = 0;
  private mcpDrained: (() => void) | undefined;
  /** Resolves when the hub has shut down (e.g. via `baton stop`). */
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  private constructor(opts: HubOptions, lease: DaemonLease) {
    this.config = opts.config;
    this.lease = lease;
    const stateDir = opts.config.stateDirPath;
    this.logger = createLogger({
      level: opts.logLevel ?? opts.config.logLevel,
      file: join(stateDir, 'baton.log'),
      stderr: opts.stderrLogs ?? false,
      component: 'hub',
    });
    this.configWatch = new ConfigWatch(opts.config, this.logger);
    this.store = new Store(join(stateDir, 'baton.db'));
    this.targets = hubTargets(opts.config, () => this.configWatch.roots);
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
        this.configWatch.refresh();
        return this.configWatch.roots;
      },
      privateDirs: opts.config.privateDirs,
      targetOf: (agent) => this.targets.ofAgent.get(agent),
      targetNamed: (name) => this.targets.byName.get(name),
      stateDir,
      logger: this.logger,
      ...opts.config.limits,
      agentMaxRunning: opts.config.agentMaxRunning,
      budgetOf: (caller) => budgetOf(opts.config, caller),
      approvalPolicy: (caller, agent) => approvalPolicyOf(opts.config, caller, agent),
    });
    this.backups = new BackupSchedule({
      store: this.store,
      stateDir,
      backups: opts.config.backups,
      logger: this.logger,
    });
    const controlToken = digest(opts.config.control.token);
    this.dashboard = new Dashboard({
      engine: this.engine,
      tokenMatches: (token) => tokenMatches(token, controlToken),
      logger: this.logger,
      targets: () => this.targets.status(),
    });
    this.endpoint = new McpEndpoint({
      store: this.store,
      logger: this.logger,
      maxBodyBytes: MAX_BODY_BYTES,
      factory: (caller, era) => this.mcpServer(caller, era),
    });
    const router = new HubRouter({
      logger: this.logger,
      listenHost: opts.config.listen.host,
      port: () => this.port,
      callerTokens: new Map(Object.entries(opts.config.callers).map(([c, v]) => [c, digest(v.token)])),
      control: new ControlApi({
        engine: this.engine,
        logger: this.logger,
        controlToken,
        health: () => this.health(),
        stop: () => void this.close(),
      }),
      dashboard: this.dashboard,
      endpoint: this.endpoint,
    });
    // node:http through getBuiltinModule, not an ESM import: that would read every export, WebSocket's lazy getter
    // included, and load Node's bundled undici at every start (rule: lazy-commands).
    const { createServer } = process.getBuiltinModule('node:http');
    this.http = createServer((req, res) => {
      if (req.url?.startsWith('/mcp/')) this.countMcp(res);
      void router.handle(req, res);
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
      hub.configWatch.start();
      hub.http.listen(opts.port ?? opts.config.listen.port, opts.config.listen.host);
      await once(hub.http, 'listening');
    } catch (err) {
      await hub.close();
      throw err;
    }
    hub.sweepTimer = setInterval(() => hub.endpoint.sweep(), 3_600_000);
    hub.sweepTimer.unref();
    hub.backups.start();
    hub.logger.info('hub listening', { url: hub.url, agents: [...hub.agents.keys()], roots: hub.currentRoots });
    if (!hub.currentRoots.length) hub.logger.warn('no project roots yet: run `baton init` in a project');
    return hub;
  }

  /** Roots the hub authorises right now (real paths). */
  get currentRoots(): readonly string[] {
    return this.configWatch.roots;
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
      mcpRequestsInFlight: this.mcpInFlight,
      url: this.url,
      stateDir: this.config.stateDirPath,
      config: this.config.path,
      roots: this.configWatch.roots,
      agents: [...this.agents.keys()].map((name) => ({
        ...(this.probes.find((p) => p.name === name) ?? { name, kind: this.agents.get(name)!.kind, available: null }),
        target: this.targets.ofAgent.get(name)?.name,
      })),
      // What each target fences, and the one-line warning with its fix where it cannot.
      targets: this.targetStatus(),
      ...this.engine.health(),
    };
  }

  private countMcp(res: { once(event: 'close', fn: () => void): unknown }): void {
    this.mcpInFlight += 1;
    res.once('close', () => {
      this.mcpInFlight -= 1;
      if (this.mcpInFlight === 0) this.mcpDrained?.();
    });
  }

  private async drainMcp(): Promise<void> {
    if (this.mcpInFlight === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((r) => {
        this.mcpDrained = r;
      }),
      new Promise<void>((r) => {
        timer = setTimeout(r, MCP_DRAIN_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweepTimer);
      this.backups.stop();
      this.configWatch.close();
      this.dashboard.close();
      await this.engine.close();
      // The shared SSH connections go with the hub (their masters would otherwise linger for ControlPersist).
      await Promise.allSettled([...this.targets.byName.values()].map((t) => t.remote?.close()));
      // The engine has just interrupted every round: the agent_wait calls parked on them woke with that, and their
      // answers go out before the sessions and connections close (bounded: a client may hold a request open).
      await this.drainMcp();
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

  /**
   * A server instance for `caller`: one per request in the 2026-07-28 era, one for all of the caller's 2025-era sessions
   * (both eras share the tools; rule: hub-tools).
   */
  private mcpServer(caller: string, era: McpEra): Server {
    let tools = this.tools.get(caller);
    if (!tools) {
      tools = hubTools(this.engine, caller, (agent) => {
        const target = this.targets.ofAgent.get(agent);
        return target && { target: target.name, fence: target.status().fence };
      });
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
}
