// Shared setup of the Codex provider tests: `bin/baton.js mcp --provider codex` spawned under this Node and driven by
// the official MCP SDK client over stdio (v2 at either protocol era, or v1), with a real Codex binary pointed at the
// suite's Responses mock.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { MOCK_MODEL, MOCK_STREAM_IDLE_MS, type ResponsesMock } from '../../../mock-models/responses.ts';
import { NODE_CACHE_ENV, REPO_ROOT } from '../../../support/bins.ts';
import { codexTestDir } from '../../../support/codex.ts';
import { type ClientEra, type StdioClient, spawnStdioClient } from '../../../support/stdio-client.ts';

export const PLANTED_SECRET = 'sk-planted-CODEX-SECRET-91c4e2';
export const OTHER_MODEL = 'mock-model-b';

export interface Layout {
  root: string;
  /** The directory the provider is started in (tmp/codex-homes/ lives here). */
  launchDir: string;
  workspace: string;
  /** The user's own Codex home (auth.json, config.toml). */
  userHome: string;
  home: string;
  cleanup(): void;
}

export function makeLayout(prefix = 'baton-codex-provider-'): Layout {
  const root = codexTestDir(prefix);
  const layout = {
    root,
    launchDir: join(root, 'launch'),
    workspace: join(root, 'ws'),
    userHome: join(root, 'user-codex'),
    home: join(root, 'home'),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
  for (const d of [layout.launchDir, layout.workspace, layout.userHome, layout.home]) mkdirSync(d, { recursive: true });
  writeFileSync(join(layout.userHome, 'auth.json'), JSON.stringify({ OPENAI_API_KEY: PLANTED_SECRET }), {
    mode: 0o600,
  });
  return layout;
}

/**
 * The mock provider table as the provider's `--codex-model-provider` flag. Codex's own stream idle timeout ends a turn
 * whose model goes silent (as an error result, not a protocol error), so a test timing baton's idle deadline against a
 * stalled model passes a longer one; a later flag replaces an earlier one.
 */
export function mockProviderFlag(mock: ResponsesMock, streamIdleTimeoutMs = MOCK_STREAM_IDLE_MS): string {
  return JSON.stringify({
    id: 'mock',
    name: 'Mock Responses',
    baseUrl: mock.baseUrl,
    requiresOpenaiAuth: false,
    requestMaxRetries: 0,
    streamMaxRetries: 0,
    streamIdleTimeoutMs,
  });
}

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** Resolves once the provider answers a request (ping on 2025, tools/list on 2026-07-28, which has no ping). */
  responsive(): Promise<void>;
  close(): Promise<void>;
}

/** The provider's argv and environment, for any client. */
export function providerLaunch(
  codexBin: string,
  layout: Layout,
  mock: ResponsesMock,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): { command: string; args: string[]; env: Record<string, string>; cwd: string } {
  return {
    command: process.execPath,
    args: [
      join(REPO_ROOT, 'bin/baton.js'),
      'mcp',
      '--provider',
      'codex',
      '--codex-command',
      codexBin,
      '--codex-model-provider',
      mockProviderFlag(mock),
      '--codex_models',
      `${MOCK_MODEL},${OTHER_MODEL}`,
      '--model',
      MOCK_MODEL,
      ...extraArgs,
    ],
    env: {
      PATH: process.env.PATH ?? '',
      ...NODE_CACHE_ENV,
      HOME: layout.home,
      CODEX_HOME: layout.userHome,
      LANG: 'C.UTF-8',
      RUST_LOG: 'error',
      ...extraEnv,
    },
    cwd: layout.launchDir,
  };
}

/** The provider driven by the SDK v2 client; `era` picks the protocol (default: 2026-07-28, what new clients speak). */
export async function connectProvider(
  codexBin: string,
  layout: Layout,
  mock: ResponsesMock,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
  era: ClientEra = '2026-07-28',
): Promise<Connected> {
  const c: StdioClient = await spawnStdioClient(providerLaunch(codexBin, layout, mock, extraArgs, extraEnv), era);
  return {
    client: c.client,
    transport: c.transport,
    stderr: c.stderr,
    call: (name, args) => c.client.callTool({ name, arguments: args }, { timeout: 120_000 }),
    responsive: c.responsive,
    close: c.close,
  };
}

export const textOf = (res: CallToolResult): string => (res.content[0] as { text: string }).text;

/** Pids of live processes whose CODEX_HOME lies under `dir` (Codex and whatever it runs). */
export function codexProcessesUnder(dir: string): number[] {
  return livePids((pid) => {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8');
    return env.split('\0').some((kv) => kv.startsWith('CODEX_HOME=') && kv.includes(dir));
  });
}

/** Pids of live processes whose command line contains `marker`. */
export function processesRunning(marker: string): number[] {
  return livePids((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(marker));
}

function livePids(match: (pid: string) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (match(entry)) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}
