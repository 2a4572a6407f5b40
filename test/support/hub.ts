// Runs a real hub daemon (`baton serve`) as a child process with a config the test writes, and connects the official
// MCP SDK client to it over Streamable HTTP. Every hub and CLI a test starts gets BATON_HOME inside the test's temp
// dir, so no test reads or writes the real user's baton config.
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type ChildGroup, spawnGroup } from '../../src/lib/process-group.ts';
import { REPO_ROOT } from './bins.ts';
import { WaitBudget } from './poll.ts';

/** The hub's tools, sorted: what every caller's tools/list must name, whichever era and client asks. */
export const HUB_TOOL_NAMES = [
  'agent_agents',
  'agent_cancel',
  'agent_continue',
  'agent_list',
  'agent_respond',
  'agent_result',
  'agent_run',
  'agent_status',
  'agent_wait',
];

export const TEST_CALLERS = {
  alice: 'alice-token-0123456789abcdef0123456789abcdef',
  bob: 'bob-token-0123456789abcdef0123456789abcdef00',
};
export const CONTROL_TOKEN = 'control-token-0123456789abcdef0123456789abcd';

export interface HubSetup {
  dir: string;
  roots: string[];
  agents: Record<string, Record<string, unknown>>;
  /** Execution targets by name (the config's `targets`). */
  targets?: Record<string, Record<string, unknown>>;
  callers?: Record<
    string,
    { token: string; agents?: string[]; limits?: Record<string, number>; approvals?: Record<string, string> }
  >;
  limits?: { idleTimeoutMs?: number; hardTimeoutMs?: number; cancelGraceMs?: number } & Record<string, unknown>;
  /** Listen port (default 0: any free port). */
  port?: number;
  /** Start the hub with BATON_HOME only, no --config: how a user's `baton serve` finds its config. */
  byHome?: boolean;
}

/** The BATON_HOME of a test's hub: `<dir>/baton-home` (config.json, connections/, state/). */
export function batonHome(dir: string): string {
  return join(dir, 'baton-home');
}

/**
 * Env that keeps a spawned baton inside `dir`: BATON_HOME there (it wins over the XDG dirs, which stay as they are so
 * the agent CLIs a hub starts see the environment they always did) and no inherited BATON_CONFIG.
 */
export function isolatedEnv(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, BATON_HOME: batonHome(dir), BATON_CONFIG: '', ...extra };
}

/** Writes `<dir>/baton-home/config.json` (unless it exists) and returns its path. */
export function writeHubConfig(setup: HubSetup): string {
  const home = batonHome(setup.dir);
  const path = join(home, 'config.json');
  if (existsSync(path)) return path;
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const callers = setup.callers ?? Object.fromEntries(Object.entries(TEST_CALLERS).map(([c, token]) => [c, { token }]));
  const config = {
    version: 1,
    listen: { host: '127.0.0.1', port: setup.port ?? 0 },
    roots: setup.roots,
    control: { token: CONTROL_TOKEN },
    callers,
    agents: setup.agents,
    ...(setup.targets ? { targets: setup.targets } : {}),
    limits: { idleTimeoutMs: 120_000, hardTimeoutMs: 600_000, cancelGraceMs: 3_000, ...setup.limits },
    logLevel: 'debug',
  };
  writeFileSync(path, JSON.stringify(config, null, 2), { mode: 0o600 });
  return path;
}

export interface RunningHub {
  url: string;
  configPath: string;
  stateDir: string;
  group: ChildGroup;
  output(): string;
  /** Graceful stop (SIGTERM → the hub stops its rounds and exits). */
  stop(): Promise<void>;
  /** SIGKILL of the daemon process only; its agent children live in their own groups and survive. */
  kill(): Promise<void>;
}

export async function startHub(
  t: Pick<TestContext, 'after'>,
  setup: HubSetup,
  env: NodeJS.ProcessEnv = {},
): Promise<RunningHub> {
  const configPath = writeHubConfig(setup);
  const config = setup.byHome ? [] : ['--config', configPath];
  const group = spawnGroup(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), ...config, 'serve'], {
    cwd: setup.dir,
    env: isolatedEnv(setup.dir, env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  group.child.stdout!.on('data', (d) => {
    out += d;
  });
  group.child.stderr!.on('data', (d) => {
    out += d;
  });
  const stop = async () => {
    if (group.child.exitCode === null && group.child.signalCode === null) {
      group.child.kill('SIGTERM');
      await Promise.race([group.exited, new Promise((r) => setTimeout(r, 20_000).unref())]);
    }
    await group.stop(2_000);
  };
  t.after(stop);
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const m = /baton hub listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        group.child.stdout!.off('data', onData);
        resolve(m[1]!);
      }
    };
    group.child.stdout!.on('data', onData);
    group.exited.then((e) => reject(new Error(`hub exited (${e.code ?? e.signal}) before listening:\n${out}`)));
  });
  return {
    url,
    configPath,
    stateDir: join(batonHome(setup.dir), 'state'),
    group,
    output: () => out,
    stop,
    kill: async () => {
      group.child.kill('SIGKILL');
      await once(group.child, 'exit').catch(() => {});
    },
  };
}

/**
 * Writes a copy of the hub's config at `path` with the port the hub really listens on (it was started on port 0), so a
 * CLI run with `--config <path>` reaches it.
 */
export function writeCliConfig(hub: RunningHub, path: string): string {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const config = JSON.parse(readFileSync(hub.configPath, 'utf8'));
  config.listen.port = Number(new URL(hub.url).port);
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in its own process group to its end (then stops what it left behind), its output in pipes. */
export async function runGroup(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  const g = spawnGroup(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  g.child.stdout!.on('data', (d) => {
    stdout += d;
  });
  g.child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const exit = await g.exited;
  await g.stop(1_000);
  return { code: exit.code, stdout, stderr };
}

export async function connectCaller(
  t: Pick<TestContext, 'after'>,
  hub: RunningHub,
  caller: string,
  token = TEST_CALLERS[caller as keyof typeof TEST_CALLERS],
): Promise<Client> {
  // The SDK v1 client is loaded here, not at the top: importing it costs a test process ~0.15 CPU s, and many files
  // take this module only for startHub, isolatedEnv or runGroup.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  const client = new Client({ name: `test-${caller}`, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp/${caller}`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return client;
}

/** Calls a tool and returns its structuredContent; a tool error is thrown with its text. */
export async function call<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<T> {
  const res = (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult;
  if (res.isError) {
    const text = res.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
    throw Object.assign(new Error(text), { structured: res.structuredContent });
  }
  return res.structuredContent as T;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

/** Follows a task with agent_wait (from cursor `from`) until it is terminal; returns the final wait answer and the events seen. */
export async function followToEnd(
  client: Client,
  taskId: string,
  from = 0,
): Promise<{ state: string; events: Array<Record<string, unknown>>; last: Record<string, unknown> }> {
  const budget = new WaitBudget(`task ${taskId} to end`);
  let after = from;
  const events: Array<Record<string, unknown>> = [];
  for (;;) {
    const w = await call<{
      state: string;
      events: Array<Record<string, unknown>>;
      nextCursor: number;
      hasMore: boolean;
    }>(client, 'agent_wait', { taskId, after, timeoutMs: budget.left(20_000) });
    events.push(...w.events);
    after = w.nextCursor;
    if (TERMINAL.has(w.state) && !w.hasMore) return { state: w.state, events, last: w };
  }
}

/** Follows a task until an event matching `match` arrives. */
export async function waitForEvent(
  client: Client,
  taskId: string,
  match: (e: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const budget = new WaitBudget(`a matching event of task ${taskId}`);
  let after = 0;
  for (;;) {
    const w = await call<{ events: Array<Record<string, unknown>>; nextCursor: number }>(client, 'agent_wait', {
      taskId,
      after,
      timeoutMs: budget.left(20_000),
    });
    const hit = w.events.find(match);
    if (hit) return hit;
    after = w.nextCursor;
  }
}
