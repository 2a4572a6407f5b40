// The real Claude Code (npm, scripted Anthropic mock) using a baton stdio provider, with every frame recorded by a
// pass-through tap (test/fixtures/stdio-wire-tap.mjs): Claude Code opens with `server/discover` at 2026-07-28, baton
// offers that revision, and a tool call's result reaches the model's next request. When its probe is not answered
// quickly (a loaded machine) Claude Code also sends `initialize`; baton answers both and the run still succeeds. Whether
// Claude Code declares the Tasks extension baton offers is recorded (the task path itself is proved with the SDK v2
// transport in claude-provider.test.ts and codex-jobs.test.ts).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { run } from '../../support/connect.ts';
import { tempDir } from '../../support/tmp.ts';

const TAP = join(REPO_ROOT, 'test', 'fixtures', 'stdio-wire-tap.mjs');
const PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const TASKS = 'io.modelcontextprotocol/tasks';

interface Frame {
  id?: string | number;
  method?: string;
  params?: { _meta?: Record<string, unknown>; name?: string };
  result?: Record<string, unknown>;
  error?: unknown;
}

test('real Claude Code over stdio: server/discover at 2026-07-28 is answered and a tool result reaches the model', async (t) => {
  const root = tempDir(t, 'baton-claude-code-stdio-');
  mkdirSync(join(root, 'user-codex'));
  const mock = await AnthropicMock.start();
  t.after(() => mock.close());
  mock.push({ kind: 'tool_use', name: 'mcp__baton__codex-peek', input: {} }, { kind: 'text', text: 'peeked' });
  const wire = join(root, 'wire.jsonl');
  writeFileSync(wire, '');
  const mcpConfig = join(root, 'mcp.json');
  const provider = [join(REPO_ROOT, 'bin', 'baton.js'), 'mcp', '--provider', 'codex', '--codex-command', bins.codex()];
  const args = [TAP, wire, process.execPath, ...provider, '--user-codex-home', join(root, 'user-codex')];
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { baton: { command: process.execPath, args } } }));
  // claude -p connects MCP servers in the background by default; this makes it wait for baton's tools.
  const env: NodeJS.ProcessEnv = { ...isolatedClaudeEnv(mock.origin, root), MCP_CONNECTION_NONBLOCKING: 'false' };
  mkdirSync(env.HOME!, { recursive: true });

  const r = await run(
    [
      bins.claude(),
      '-p',
      'Peek at the Codex turns.',
      '--output-format',
      'json',
      '--mcp-config',
      mcpConfig,
      '--strict-mcp-config',
      '--allowedTools',
      'mcp__baton__codex-peek',
    ],
    { env, cwd: root },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { result: string }).result, 'peeked');

  const frames = readFileSync(wire, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { dir: 'in' | 'out'; line: string })
    .map(({ dir, line }) => ({ dir, frame: JSON.parse(line) as Frame }));
  const sent = frames.filter((f) => f.dir === 'in').map((f) => f.frame);
  const answered = (id: Frame['id']) => frames.find((f) => f.dir === 'out' && f.frame.id === id)?.frame;
  t.diagnostic(`Claude Code sent: ${sent.map((f) => f.method ?? 'response').join(', ')}`);

  const discover = sent[0]!;
  assert.equal(discover.method, 'server/discover', 'Claude Code opens with the 2026-07-28 probe');
  assert.equal(discover.params?._meta?.[PROTOCOL_VERSION], '2026-07-28');
  const offered = answered(discover.id)?.result as {
    supportedVersions?: string[];
    capabilities?: { extensions?: Record<string, unknown> };
  };
  assert.ok(offered.supportedVersions?.includes('2026-07-28'), 'baton offers 2026-07-28');
  assert.ok(offered.capabilities?.extensions?.[TASKS], 'baton declares the Tasks extension');
  // Recorded, not required: whether this Claude Code declares the extension back (2.1.332 in -p mode did not).
  const declared = (discover.params?._meta?.[CLIENT_CAPABILITIES] as { extensions?: Record<string, unknown> })
    ?.extensions?.[TASKS];
  t.diagnostic(`Claude Code declares ${TASKS}: ${declared ? 'yes' : 'no'}`);

  const call = sent.find((f) => f.method === 'tools/call' && f.params?.name === 'codex-peek');
  assert.ok(call, 'Claude Code called the tool');
  if (!sent.some((f) => f.method === 'initialize')) {
    assert.equal(call.params?._meta?.[PROTOCOL_VERSION], '2026-07-28', 'a stateless 2026-07-28 tools/call');
  }
  const result = answered(call.id)?.result as { structuredContent?: unknown };
  assert.deepEqual(result.structuredContent, { turns: [], abandonedTurnsProcessWide: 0 });
  for (const request of sent.filter((f) => f.method && f.id !== undefined)) {
    assert.ok(answered(request.id), `${request.method} was answered`);
  }
  const toolResult = JSON.stringify(mock.messageRequests.at(-1)?.messages?.at(-1));
  assert.match(toolResult, /tool_result.*abandonedTurnsProcessWide/, "the result is in the model's next request");
});
