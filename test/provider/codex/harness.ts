// Shared setup of the Codex provider tests: `bin/baton.js mcp --provider codex` spawned under this Node and driven by
// the official MCP SDK client over stdio, with a real Codex binary pointed at the suite's Responses mock.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MOCK_MODEL, type ResponsesMock } from '../../mock-models/responses.ts';
import { NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';

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
  const root = mkdtempSync(join(tmpdir(), prefix));
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

export function mockProviderFlag(mock: ResponsesMock): string {
  return JSON.stringify({
    id: 'mock',
    name: 'Mock Responses',
    baseUrl: mock.baseUrl,
    requiresOpenaiAuth: false,
    requestMaxRetries: 0,
    streamMaxRetries: 0,
    streamIdleTimeoutMs: 20_000,
  });
}

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  call(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

export async function connectProvider(
  codexBin: string,
  layout: Layout,
  mock: ResponsesMock,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<Connected> {
  const transport = new StdioClientTransport({
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
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const client = new Client({ name: 'baton-test', version: '0' });
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => stderr,
    call: (name, args) =>
      client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }) as Promise<CallToolResult>,
    close: () => client.close(),
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
