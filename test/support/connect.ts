// Shared setup of the `baton connect` tests: one hub per test file whose only agent is the scripted ACP agent, callers
// named after the four clients, a PATH holding only the real client binaries from npm (and Node), and a runner for
// child processes with a deadline.
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { before, type TestContext } from 'node:test';
import { tokenEnvName } from '../../src/faces/hub/examples.ts';
import { bins, REPO_ROOT } from './bins.ts';
import { type Ran, type RunningHub, startHub, writeCliConfig } from './hub.ts';
import { SCRIPTED_ACP_AGENT } from './scripted-agent.ts';
import { fileHooks, tempDir } from './tmp.ts';

export const CLIENT_TOKENS = {
  claude: 'claude-token-0123456789abcdef0123456789abcdef',
  codex: 'codex-token-0123456789abcdef0123456789abcdef00',
  gemini: 'gemini-token-0123456789abcdef0123456789abcdef',
  opencode: 'opencode-token-0123456789abcdef0123456789abcd',
} as const;
export type Client = keyof typeof CLIENT_TOKENS;

export interface ConnectHub {
  hub: RunningHub;
  /** A copy of the hub's config with the port it really listens on (the hub itself was started on port 0). */
  configPath: string;
  /** The one authorised root, used as the client's project dir. */
  project: string;
}

export async function startConnectHub(t: Pick<TestContext, 'after'>, dir: string): Promise<ConnectHub> {
  const project = join(dir, 'project');
  mkdirSync(project, { recursive: true });
  const hub = await startHub(t, {
    dir,
    roots: [project],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], cancelGraceMs: 1_000 } },
    callers: Object.fromEntries(Object.entries(CLIENT_TOKENS).map(([c, token]) => [c, { token }])),
  });
  const configPath = writeCliConfig(hub, join(dir, 'connect-config', 'config.json'));
  return { hub, configPath, project };
}

/** A bin dir with the four real clients under their usual names, then Node 24 and the system dirs: nothing else. */
export function clientPath(dir: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const [name, target] of [
    ['claude', bins.claude()],
    ['codex', bins.codex()],
    ['gemini', bins.gemini()],
    ['opencode', bins.opencode()],
  ] as const) {
    symlinkSync(target, join(bin, name));
  }
  return [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':');
}

export function tokenEnv(client: Client): Record<string, string> {
  return { [tokenEnvName(client)]: CLIENT_TOKENS[client] };
}

/** Runs a command to its end; kills it (and fails) when `timeoutMs` passes. */
export function run(
  argv: string[],
  opts: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs?: number; input?: string },
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.stdin.end(opts.input ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${argv.slice(0, 3).join(' ')} did not finish within ${opts.timeoutMs ?? 120_000} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, opts.timeoutMs ?? 120_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `baton --config <config> connect …` with the given env (the test's isolated HOME and client dirs). */
export function batonConnect(
  configPath: string,
  args: string[],
  opts: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<Ran> {
  return run([process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'connect', ...args], opts);
}

/** The fixture every client test file shares: its temp dir, one hub with the four callers, and a PATH holding only the
 * real clients. Filled in by a `before` hook, so read its fields inside tests. */
export interface ConnectSuite {
  dir: string;
  setup: ConnectHub;
  PATH: string;
}

export function connectSuite(client: string): ConnectSuite {
  const suite = {} as ConnectSuite;
  before(async () => {
    suite.dir = tempDir(fileHooks, `baton-connect-${client}-`);
    suite.setup = await startConnectHub(fileHooks, suite.dir);
    suite.PATH = clientPath(suite.dir);
  });
  return suite;
}
