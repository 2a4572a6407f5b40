// Every stdio provider on the raw wire, in both protocol eras: a 2026-07-28 opening (`server/discover`, then
// stateless requests carrying the `_meta` envelope) and a 2025 opening (`initialize`). stdout carries JSON-RPC lines
// only, bad input is -32602 in both eras, and stdin EOF ends the process with 0. No tool runs an agent here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { bins, NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { tempDir } from '../../support/tmp.ts';

const MODERN = '2026-07-28';
const envelope = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

interface Provider {
  name: string;
  args: string[];
  tool: string;
}

const providers = (home: string): Provider[] => [
  {
    name: 'codex',
    args: ['--codex-command', bins.codex(), '--user-codex-home', join(home, 'user-codex')],
    tool: 'codex',
  },
  { name: 'claude', args: ['--claude-command', bins.claude()], tool: 'claude_code' },
  { name: 'gemini', args: [], tool: 'gemini' },
];

/** Writes `frames` and closes stdin, then returns every stdout line parsed, and the exit code. */
async function exchange(
  provider: Provider,
  home: string,
  frames: object[],
): Promise<{ lines: Array<Record<string, unknown>>; code: number | null }> {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin/baton.js'), 'mcp', '--provider', provider.name, ...provider.args],
    { env: { PATH: process.env.PATH ?? '', ...NODE_CACHE_ENV, HOME: home }, cwd: home, stdio: 'pipe' },
  );
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  child.stderr.resume();
  const exited = once(child, 'exit');
  const answered = (id: unknown) =>
    stdout.split('\n').some((line) => line.startsWith('{') && line.endsWith('}') && JSON.parse(line).id === id);
  const gone = exited.then(() => {
    throw new Error(`${provider.name} exited early; stdout: ${stdout}`);
  });
  gone.catch(() => {});
  // Each answer is awaited before the next frame goes out, so EOF never races a request still being read.
  for (const frame of frames) {
    child.stdin.write(`${JSON.stringify(frame)}\n`);
    const id = (frame as { id?: unknown }).id;
    while (id !== undefined && !answered(id)) await Promise.race([once(child.stdout, 'data'), gone]);
  }
  child.stdin.end();
  const [code] = (await exited) as [number | null];
  const lines = stdout.split('\n').filter(Boolean);
  // Stdio hygiene: every line on stdout is one JSON-RPC 2.0 message.
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const msg of parsed) assert.equal(msg.jsonrpc, '2.0', `not JSON-RPC: ${JSON.stringify(msg)}`);
  return { lines: parsed, code };
}

const byId = (lines: Array<Record<string, unknown>>, id: number) => lines.find((l) => l.id === id)!;
const errorOf = (msg: Record<string, unknown>) => msg.error as { code: number; message: string };

for (const era of ['2026-07-28', '2025'] as const) {
  test(`every provider on the raw ${era} wire: answers, -32602 for bad input, nothing else on stdout`, async (t) => {
    const root = tempDir(t, 'baton-stdio-eras-');
    for (const provider of providers(root)) {
      const home = join(root, `${provider.name}-${era}`);
      mkdirSync(join(home, 'user-codex'), { recursive: true });
      const meta = era === MODERN ? { _meta: envelope } : {};
      const opening =
        era === MODERN
          ? [{ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { ...meta } }]
          : [
              {
                jsonrpc: '2.0',
                id: 1,
                method: 'initialize',
                params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
              },
              { jsonrpc: '2.0', method: 'notifications/initialized' },
            ];
      const { lines, code } = await exchange(provider, home, [
        ...opening,
        { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { ...meta } },
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { ...meta, name: provider.tool, arguments: { prompt: 42 } },
        },
        {
          jsonrpc: '2.0',
          id: 4,
          method: 'tools/call',
          params: { ...meta, name: provider.tool, arguments: JSON.parse('{"prompt":"p","__proto__":{"x":1}}') },
        },
      ]);
      const what = `${provider.name} (${era})`;
      assert.equal(code, 0, `${what} exits 0 on stdin EOF`);
      const opened = byId(lines, 1).result as Record<string, unknown>;
      if (era === MODERN) assert.ok((opened.supportedVersions as string[]).includes(MODERN), what);
      else assert.equal(opened.protocolVersion, '2025-06-18', what);
      const tools = (byId(lines, 2).result as { tools: Array<{ name: string }> }).tools;
      assert.ok(
        tools.some((tool) => tool.name === provider.tool),
        what,
      );
      assert.equal(errorOf(byId(lines, 3)).code, -32602, what);
      assert.match(errorOf(byId(lines, 3)).message, /prompt/, what);
      assert.equal(errorOf(byId(lines, 4)).code, -32602, what);
      assert.match(errorOf(byId(lines, 4)).message, /__proto__/, what);
    }
  });
}

test('a client frame over 8 MiB ends the provider (exit 0, said on stderr) instead of leaving it deaf', async (t) => {
  const home = tempDir(t, 'baton-stdio-oversized-');
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin/baton.js'), 'mcp', '--provider', 'claude', '--claude-command', bins.claude()],
    { env: { PATH: process.env.PATH ?? '', ...NODE_CACHE_ENV, HOME: home }, cwd: home, stdio: 'pipe' },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  const exited = once(child, 'exit');
  // The provider may stop reading before the last chunk is flushed: that is the behaviour under test.
  child.stdin.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  for (let i = 0; i < 9; i++) child.stdin.write(chunk);
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0);
  assert.match(stderr, /exceeded maximum size of 8388608 bytes/);
  assert.equal(stdout, '', 'nothing but JSON-RPC on stdout, and there was nothing to answer');
});
