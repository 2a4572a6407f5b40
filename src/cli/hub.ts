// Hub commands (rule: hub-commands): init, roots, doctor, serve, start, stop, health, examples, service. Every one
// finds the config through locate.ts, so they reach the same hub from any directory.
import { existsSync, fstatSync, openSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import type { HubConfig, RootsChange } from '../faces/hub/config.ts';
import type { PreflightRow, TargetLine } from '../faces/hub/preflight.ts';
import { type ConfigLocation, locateConfig } from '../faces/locate.ts';
import { isLogLevel } from '../lib/log.ts';
import { redactError } from '../lib/redact.ts';
import { control, healthOf } from './control.ts';
import { type HubAddress, hubConfigModule, loadHubAddress } from './hub-config.ts';
import { assertPortFree, portInUse, refuseSecondHub, runningHub, startFailure } from './hub-start.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);
const START_TIMEOUT_MS = 60_000;

export function registerHubCommands(program: Command): void {
  program.option(
    '--config <file>',
    'config file (default: $BATON_CONFIG, else $BATON_HOME/config.json, else the per-user config dir)',
  );
  const flag = () => program.opts<{ config?: string }>().config;
  const location = () => locateConfig({ flag: flag() });
  // The config code is loaded by the commands that read it, not at start (rule: lazy-commands).
  const config = async (): Promise<HubConfig> => (await hubConfigModule()).loadConfig(location());
  /** Commands that only talk to the running hub read its address, not the whole config. */
  const address = (): Promise<HubAddress> => loadHubAddress(flag());
  /** The user config is created on first use; a config named by --config or $BATON_CONFIG must already exist. */
  const ensureConfig = async (loc: ConfigLocation): Promise<void> => {
    if (existsSync(loc.configPath) || loc.source === 'flag' || loc.source === 'BATON_CONFIG') return;
    const { addRoots } = await hubConfigModule();
    addRoots({ location: loc, roots: [] });
    out(`created ${loc.configPath} (no project roots yet — run \`baton init\` in a project)`);
  };

  program
    .command('init')
    .description(
      "Authorise a project for delegation: creates the user's config (one random token per caller) if there is none, " +
        'else adds the project as a root. Never rewrites tokens.',
    )
    .option('--root <dir...>', 'project root to authorise (repeatable; default: the current directory)')
    .option('--port <port>', 'listen port of a new config', (v) => Number.parseInt(v, 10))
    .action(async (opts: { root?: string[]; port?: number }) => {
      const { addRoots, loadConfig } = await hubConfigModule();
      const { writeExamples } = await import('../faces/hub/examples.ts');
      const r = addRoots({ location: location(), roots: opts.root ?? [process.cwd()], port: opts.port });
      reportRoots(r);
      if (r.created) {
        out(`agents found: ${r.agents.length ? r.agents.join(', ') : 'none (edit "agents" in the config)'}`);
        const { tokensFile } = writeExamples(loadConfig(location()));
        out(`caller tokens: ${tokensFile} (export lines; source it where you start your clients)`);
        out('next: `baton connect claude|codex|gemini|opencode`, then `baton start`');
      } else if (opts.port !== undefined) {
        out(`--port ignored: ${r.path} already exists and keeps its port`);
      }
    });

  const roots = program.command('roots').description('List, add or remove the project roots agents may work in.');
  roots
    .command('list', { isDefault: true })
    .description('One authorised root per line.')
    .action(async () => {
      const { listRoots } = await hubConfigModule();
      const list = listRoots(location());
      if (!list.length) out('no project roots yet — run `baton init` in a project');
      for (const r of list) out(r);
    });
  roots
    .command('add <dir...>')
    .description('Authorise more project roots (a running hub picks them up).')
    .action(async (dirs: string[]) => {
      const { addRoots, listRoots } = await hubConfigModule();
      const loc = location();
      listRoots(loc); // the config must exist: `baton init` is the command that creates one
      reportRoots(addRoots({ location: loc, roots: dirs }));
    });
  roots
    .command('remove <dir>')
    .description('Stop authorising a root (a running hub refuses new work there at once).')
    .action(async (dir: string) => {
      const { removeRoot } = await hubConfigModule();
      const r = removeRoot(location(), dir);
      out(`removed root ${r.removed} from ${r.path}`);
      if (!r.roots.length) out('no roots left: agent_run is refused until you run `baton init` in a project');
      out('a running hub applies this without a restart');
    });

  program
    .command('doctor')
    .description(
      'Check each configured agent (binary, version, login, a real session where that costs no inference) and each connected client (registered, token set, hub answering).',
    )
    .action(async () => {
      const cfg = await config();
      const { createAgent } = await import('../agents/registry.ts');
      const { probeAgent } = await import('../agents/probe.ts');
      const targets = (await import('../faces/hub/targets.ts')).hubTargets(cfg, () => cfg.rootsReal);
      const { preflightLines, rowStatus, targetLines } = await import('../faces/hub/preflight.ts');
      const rows: PreflightRow[] = [];
      for (const [name, entry] of Object.entries(cfg.agents)) {
        const target = targets.ofAgent.get(name);
        const agent = createAgent(name, entry, { stateDir: cfg.stateDirPath, logger: quietLogger, target });
        // Under a deadline, with every process the probe started stopped afterwards.
        const probe = await probeAgent(agent, { timeoutMs: cfg.limits.probeTimeoutMs });
        const row: PreflightRow = { ...probe, name, kind: entry.kind, target: target?.name };
        const deep = (agent as { probeSession?: () => Promise<void> }).probeSession;
        if (probe.available && deep) {
          await deep.call(agent).then(
            () => {
              row.session = 'session ok';
            },
            (err) => {
              row.session = `session failed: ${redactError(err)}`;
              row.sessionFailed = true;
            },
          );
        }
        rows.push(row);
      }
      for (const line of preflightLines(rows)) out(line);
      for (const line of targetLines(await targets.checked(), rows)) out(line);
      // Any FAIL (an agent the config names but baton cannot run) is an error, even beside usable agents: the hub
      // would refuse every task for that agent. WARN (found, not logged in or no session) stays a warning.
      const failed = rows.filter((r) => rowStatus(r) === 'FAIL').length;
      const usable = rows.filter((r) => rowStatus(r) === 'ok').length;
      if (failed) out(`${failed} agent(s) FAIL: install them or remove them from the config (${cfg.path})`);
      const { checkClients } = await import('./doctor-clients.ts');
      const clients = await checkClients(cfg, process.env, process.cwd());
      out('clients:');
      if (!clients.length) out('  none connected here: `baton connect claude|codex|gemini|opencode`');
      for (const c of clients) out(`  ${c.line}`);
      process.exitCode = failed || !usable || clients.some((c) => !c.ok) ? 1 : 0;
    });

  program
    .command('serve')
    .description('Run the hub in the foreground (runs the doctor preflight before accepting work).')
    .option('--log-level <level>', 'debug | info | warn | error', logLevelArg)
    .option('--port <port>', 'override the configured port', portArg)
    .action(async (opts: { logLevel?: string; port?: number }) => {
      // Before anything else: no caller token or baton credential stays in the hub's environment (rule: hub-env-clean).
      const hubEnv = await import('../lib/hub-env.ts');
      hubEnv.execWithoutSecrets();
      hubEnv.takeHandover();
      // The daemon's collector settings go first: set after the server's modules load, they would come too late for
      // the young generation those imports grow (15 MiB committed, copied into every agent forked before the first
      // idle release).
      const { daemonHooks, tuneDaemonHeap, watchIdleMemory } = await import('../lib/idle-memory.ts');
      tuneDaemonHeap();
      (await import('../lib/json-stringify.ts')).useFastJsonStringify();
      const loc = location();
      // The first run creates the user config with no roots: which projects agents may touch is the user's call.
      await ensureConfig(loc);
      const { loadConfig } = await hubConfigModule();
      const cfg = loadConfig(loc);
      const { writeExamples } = await import('../faces/hub/examples.ts');
      const { tokensFile } = writeExamples(cfg);
      // A hub already running for this config, or a port taken by anything else, is said at once in one line, before
      // the preflight spends seconds probing agents.
      await refuseSecondHub(cfg);
      const port = opts.port ?? cfg.listen.port;
      await assertPortFree(cfg.listen.host, port);
      // Loaded here, not at the top: the server pulls in the engine and the MCP SDK, which other commands never need.
      const { Hub } = await import('../faces/hub/server.ts');
      const { preflightLines, targetLines } = await import('../faces/hub/preflight.ts');
      const hub = await Hub.start({
        config: cfg,
        logLevel: opts.logLevel as 'info' | undefined,
        stderrLogs: true,
        port: opts.port,
      }).catch((err) => {
        throw (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? portInUse(port) : err;
      });
      const record = await import('../faces/hub/listen-record.ts');
      record.writeListenRecord(cfg.stateDirPath, { host: cfg.listen.host, port: hub.port, pid: process.pid });
      const { agents } = hub.health();
      for (const line of [...preflightLines(agents), ...targetLines(hub.targetStatus(), agents)]) out(line);
      out(`baton hub listening on ${hub.url} (callers: ${Object.keys(cfg.callers).join(', ')})`);
      out(`dashboard: ${hub.url}/ui (log in with \`baton ui\`)`);
      out(`config: ${cfg.path}`);
      out(`caller tokens: ${tokensFile}`);
      out(
        hub.currentRoots.length
          ? `roots: ${hub.currentRoots.join(', ')}`
          : 'no project roots yet — run `baton init` in a project',
      );
      // Start-up garbage (and a burst's, later) is handed back once the daemon is idle, not kept for its lifetime.
      const stopWatching = watchIdleMemory(daemonHooks(() => hub.engine.roundsInFlight() > 0));
      const stop = () => void hub.close();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await hub.closed;
      record.removeListenRecord(cfg.stateDirPath);
      stopWatching();
    });

  program
    .command('start')
    .description('Start the hub in the background and wait until it answers.')
    .option('--log-level <level>', 'debug | info | warn | error', logLevelArg)
    .option('--port <port>', 'override the configured port (every command finds the hub there)', portArg)
    .action(async (opts: { logLevel?: string; port?: number }) => {
      const loc = location();
      await ensureConfig(loc);
      const { loadConfig } = await hubConfigModule();
      const cfg = loadConfig(loc);
      const running = await runningHub(cfg);
      if (running) {
        if (opts.port !== undefined && opts.port !== 0 && opts.port !== running.port) {
          throw new Error(
            `a hub for this config already runs on ${running.url} (pid ${running.pid}); \`baton stop\` it first to start one on port ${opts.port}`,
          );
        }
        out(`already running on ${running.url} (pid ${running.pid})`);
        return;
      }
      const port = opts.port ?? cfg.listen.port;
      await assertPortFree(cfg.listen.host, port);
      const { ensurePrivateDir } = await import('../lib/private-fs.ts');
      const { preflightLines, targetLines } = await import('../faces/hub/preflight.ts');
      const { readListenRecord } = await import('../faces/hub/listen-record.ts');
      const { spawn } = await import('node:child_process');
      ensurePrivateDir(cfg.stateDirPath);
      const daemonOut = join(cfg.stateDirPath, 'daemon.out');
      const log = openSync(daemonOut, 'a', 0o600);
      const logStart = fstatSync(log).size;
      // The child inherits this environment (secrets removed: rule hub-env-clean) and cwd, so it resolves the same
      // config; an explicit file is passed on.
      const config = flag() === undefined ? [] : ['--config', cfg.path];
      const serveFlags = [
        ...(opts.port === undefined ? [] : ['--port', String(opts.port)]),
        ...(opts.logLevel === undefined ? [] : ['--log-level', opts.logLevel]),
      ];
      const { daemonEnv } = await import('../lib/hub-env.ts');
      const child = spawn(process.execPath, [process.argv[1]!, ...config, 'serve', ...serveFlags], {
        detached: true,
        env: daemonEnv(),
        stdio: ['ignore', log, log],
      });
      child.unref();
      let exited = false;
      const exit = new Promise<void>((r) => child.once('exit', () => r()));
      void exit.then(() => {
        exited = true;
      });
      const until = Date.now() + START_TIMEOUT_MS;
      while (Date.now() < until) {
        if (exited) throw new Error(startFailure(daemonOut, logStart));
        // The child records where it listens once it does (the port may be 0: any free one).
        const rec = readListenRecord(cfg.stateDirPath);
        const addr = rec && rec.pid === child.pid ? { ...cfg, listen: { host: rec.host, port: rec.port } } : undefined;
        const h = addr && (await healthOf(addr).catch(() => null));
        if (h && addr) {
          const url = `http://${addr.listen.host}:${addr.listen.port}`;
          for (const line of preflightLines((h.agents ?? []) as PreflightRow[])) out(line);
          for (const line of targetLines((h.targets ?? []) as TargetLine[], (h.agents ?? []) as PreflightRow[]))
            out(line);
          out(`started on ${url} (pid ${h.pid})`);
          out(`dashboard: ${url}/ui (log in with \`baton ui\`)`);
          return;
        }
        await Promise.race([exit, new Promise((r) => setTimeout(r, 200))]);
      }
      throw new Error(`the hub did not answer within ${START_TIMEOUT_MS / 1000} s; see ${daemonOut}`);
    });

  program
    .command('stop')
    .description(
      'Stop the hub through its authenticated local control endpoint; refused while tasks are queued or running.',
    )
    .option('--force', 'stop anyway: queued and running tasks end as interrupted (and are listed)')
    .action(async (opts: { force?: boolean }) => {
      const cfg = await address();
      // rule: stop-refuses-work — the hub decides (it knows what runs at that moment) and names the tasks.
      const res = await control(cfg, 'POST', `/control/stop${opts.force ? '?force=1' : ''}`).catch(() => null);
      if (!res) {
        out('not running');
        return;
      }
      const body = (await res.json().catch(() => ({}))) as {
        error?: string;
        tasks?: StopTask[];
        interrupted?: StopTask[];
      };
      if (res.status === 409) {
        throw new Error(
          [
            `not stopped: ${body.error ?? 'tasks are still running'}:`,
            ...(body.tasks ?? []).map(stopTaskLine),
            'wait for them, cancel them (`baton tasks cancel ID`), or interrupt them with `baton stop --force`',
          ].join('\n'),
        );
      }
      if (res.status !== 202) throw new Error(`stop refused: ${body.error ?? `HTTP ${res.status}`}`);
      if (body.interrupted?.length) {
        out(`interrupting ${body.interrupted.length} task(s):`);
        for (const t of body.interrupted) out(stopTaskLine(t));
      }
      const until = Date.now() + START_TIMEOUT_MS;
      while (Date.now() < until && (await healthOf(cfg).catch(() => null)))
        await new Promise((r) => setTimeout(r, 100));
      out('stopped');
    });

  program
    .command('health')
    .description('Version, uptime, agents and queue depth of the running hub.')
    .action(async () => {
      const cfg = await address();
      const h = await healthOf(cfg).catch((err) => {
        throw new Error(
          `the hub is not answering on http://${cfg.listen.host}:${cfg.listen.port}: ${redactError(err)}`,
        );
      });
      out(JSON.stringify(h, null, 2));
    });

  program
    .command('examples')
    .description("Write client snippets and a private tokens.env in the config's connections/ dir (prints no token).")
    .action(async () => {
      const cfg = await config();
      const { writeExamples } = await import('../faces/hub/examples.ts');
      const { dir, files } = writeExamples(cfg);
      out(`wrote ${files.length} files under ${dir}:`);
      for (const f of files) out(`  ${f}`);
      out(`source ${join(dir, 'tokens.env')} in the environment that launches your clients`);
    });

  function reportRoots(r: RootsChange): void {
    if (r.created) {
      out(
        r.added.length
          ? `created ${r.path} with root ${r.added.join(', ')}`
          : `created ${r.path} (no project roots yet — run \`baton init\` in a project)`,
      );
      return;
    }
    for (const a of r.added) out(`added root ${a} to ${r.path}`);
    for (const a of r.already) out(`${a} is already a root of ${r.path}; nothing changed`);
    if (r.added.length) out('a running hub applies this without a restart');
  }

  const service = program
    .command('service')
    .description('Install the hub as a user service (launchd / systemd --user).');
  for (const action of ['install', 'uninstall'] as const) {
    service
      .command(action)
      .option('--dry-run', 'print what would be done')
      .action(async (opts: { dryRun?: boolean }) => {
        const cfg = await config();
        const { serviceFiles } = await import('../faces/hub/service.ts');
        const plan = serviceFiles(cfg, process.argv[1]!);
        const steps = action === 'install' ? plan.install : plan.uninstall;
        if (opts.dryRun) {
          for (const s of steps) out(s.describe);
          return;
        }
        // A failed install leaves nothing behind: the unit file is put back as it was (removed if it was new).
        const before = action === 'install' && existsSync(plan.file) ? readFileSync(plan.file, 'utf8') : undefined;
        // The dirs the unit file's write will create, innermost first: removed again (when empty) after a failure.
        const created: string[] = [];
        for (let d = dirname(plan.file); !existsSync(d) && d !== dirname(d); d = dirname(d)) created.push(d);
        try {
          for (const s of steps) {
            out(s.describe.split('\n')[0]!);
            await s.run();
          }
        } catch (err) {
          if (action !== 'install') throw err;
          if (before === undefined) {
            rmSync(plan.file, { force: true });
            for (const d of created) {
              try {
                rmdirSync(d);
              } catch {
                break;
              }
            }
          } else writeFileSync(plan.file, before);
          const undone = before === undefined ? `${plan.file} was removed` : `${plan.file} was put back`;
          const hint =
            process.platform === 'darwin'
              ? 'run it from a logged-in user session'
              : 'a systemd user session is needed (log in to one, or `loginctl enable-linger $USER`)';
          throw new Error(`${(err as Error).message}; ${hint}, or run \`baton start\` instead; ${undone}`);
        }
        if (action === 'uninstall') out('config and task data were kept');
      });
  }
}

const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

interface StopTask {
  taskId: string;
  caller?: string;
  agent: string;
  state: string;
  round: number;
}

const stopTaskLine = (t: StopTask) => `  ${t.taskId}  ${t.caller ?? '-'}  ${t.agent}  ${t.state} (round ${t.round})`;

function logLevelArg(value: string): string {
  if (!isLogLevel(value)) throw new InvalidArgumentError('--log-level must be debug, info, warn or error');
  return value;
}

function portArg(value: string): number {
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535) throw new InvalidArgumentError('--port must be a port number 0-65535');
  return n;
}
