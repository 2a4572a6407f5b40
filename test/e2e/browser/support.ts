// Shared pieces for the browser provider tests: the test lease helper ("box"), a local page server, and a baton
// spawned through the official MCP SDK v2 client over stdio (2025 era by default: chrome-devtools-mcp asks the client
// for its roots, a server→client request the 2026-07-28 era no longer has).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { REPO_ROOT } from '../../support/bins.ts';
import { type ClientEra, type Launch, spawnStdioClient } from '../../support/stdio-client.ts';

export const LEASE_HELPER = join(REPO_ROOT, 'test', 'fixtures', 'browser-lease-helper.ts');
const BATON = join(REPO_ROOT, 'bin', 'baton.js');

export interface Box {
  dir: string;
  /** acquire/status/release argv lists, in call order. */
  calls(): string[][];
  /** Scripts the next outcomes of a helper command. */
  control(outcomes: Record<string, unknown[]>): void;
  /** Replaces the leased Chromium with a fresh one (new generation) on the same port. */
  replace(): Promise<void>;
}

export function makeBox(root: string, name: string): Box {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const callsPath = join(dir, 'calls.jsonl');
  return {
    dir,
    calls: () =>
      existsSync(callsPath)
        ? readFileSync(callsPath, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => (JSON.parse(l) as { argv: string[] }).argv)
        : [],
    control: (outcomes) => writeFileSync(join(dir, 'control.json'), JSON.stringify(outcomes)),
    replace: async () => {
      const { spawnSync } = await import('node:child_process');
      const r = spawnSync(process.execPath, [LEASE_HELPER, 'replace'], {
        env: { ...process.env, BATON_TEST_BOX_DIR: dir },
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`replace failed: ${r.stderr}`);
    },
  };
}

export const PAGE_HTML = `<!doctype html><html><head><title>baton test page</title></head><body>
<h1>Lease test</h1>
<button type="button" onclick="document.getElementById('out').textContent = 'Button was pressed'">Press me</button>
<p id="out">Nothing pressed yet</p>
</body></html>`;

export async function startPageServer(t: Pick<TestContext, 'after'>): Promise<{ url: string; port: number }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE_HTML);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}/`, port };
}

export interface BatonClient {
  client: Client;
  transport: StdioClientTransport;
  /** How many roots/list requests reached the client (one per downstream initialize). */
  rootsRequests(): number;
  /** Initialize results the client received after its own handshake (must stay 0). */
  lateInitializeResults(): number;
  stderr(): string;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** `baton mcp --provider browser` for `box`, as the test client spawns it. */
export function batonLaunch(box: Box, extraArgs: string[], opts: { withoutLeaseCommand?: boolean } = {}): Launch {
  const lease = opts.withoutLeaseCommand
    ? []
    : ['--browser-lease-command', JSON.stringify([process.execPath, LEASE_HELPER])];
  return {
    command: process.execPath,
    args: [BATON, 'mcp', '--provider', 'browser', ...lease, ...extraArgs],
    env: {
      ...(process.env as Record<string, string>),
      BATON_TEST_BOX_DIR: box.dir,
      CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1',
      CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1',
    },
  };
}

export async function startBaton(
  box: Box,
  extraArgs: string[],
  opts: { withoutLeaseCommand?: boolean; era?: ClientEra } = {},
): Promise<BatonClient> {
  let roots = 0;
  const legacy = (opts.era ?? '2025') === '2025';
  const { client, transport, stderr } = await spawnStdioClient(batonLaunch(box, extraArgs, opts), opts.era ?? '2025', {
    ...(legacy ? { capabilities: { roots: {} } } : {}),
    configure: (c) => {
      if (!legacy) return;
      c.setRequestHandler('roots/list', () => {
        roots++;
        return { roots: [{ uri: `file://${box.dir}`, name: 'box' }] };
      });
    },
  });
  // Any initialize result after connect would be a duplicate leaked from a replayed initialize.
  let lateInitializeResults = 0;
  const deliver = transport.onmessage;
  transport.onmessage = (msg) => {
    const result = (msg as { result?: unknown }).result;
    if (result && typeof result === 'object' && 'protocolVersion' in result) lateInitializeResults++;
    deliver?.(msg);
  };
  return {
    lateInitializeResults: () => lateInitializeResults,
    client,
    transport,
    rootsRequests: () => roots,
    stderr,
    call: (name, args = {}) => client.callTool({ name, arguments: args }),
    close: () => client.close(),
  };
}

export function text(result: CallToolResult): string {
  return result.content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n');
}

/** Pids whose command line mentions `needle` (a test's box dir): leftovers of this suite. */
export function processesMentioning(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(needle)) found.push(Number(entry));
    } catch {}
  }
  return found;
}

/** Direct children of a process, from /proc (listed per thread of the parent). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const listed = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (listed) out.push(...listed.split(/\s+/).map(Number));
    }
  } catch {}
  return out;
}
