// `baton mcp --provider gemini` through the official MCP SDK client over stdio (v1 for the refusal, v2 at 2026-07-28
// for the answer), against the real `gemini` binary and
// the scripted Gemini mock. This machine has no container runtime, so the default sandbox cannot start: the tool must
// say so; the operator's `external` sandbox mode lets the same binary answer.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { type GeminiMock, geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { type Launch, spawnStdioClient, spawnV1StdioClient } from '../../support/stdio-client.ts';

const root = mkdtempSync(join(tmpdir(), 'baton-gemini-provider-'));
const workspace = join(root, 'ws');
let mock: GeminiMock;
after(() => rmSync(root, { recursive: true, force: true }));
before(async () => {
  mock = await startGeminiMock();
  mkdirSync(workspace);
});
after(() => mock?.close());

function launch(extraArgs: string[]): Launch {
  return {
    command: process.execPath,
    args: [
      join(REPO_ROOT, 'bin/baton.js'),
      'mcp',
      '--provider',
      'gemini',
      '--gemini-command',
      JSON.stringify([process.execPath, bins.gemini()]),
      ...extraArgs,
    ],
    env: geminiEnv(join(root, 'home'), mock),
    cwd: workspace,
  };
}

test('by default the sandbox is always requested; where it cannot start the tool says why, and nothing runs unsandboxed', async () => {
  const { client, stderr } = await spawnV1StdioClient(launch([]));
  try {
    assert.match(stderr(), /\[baton\] ready \(provider: gemini\)/);
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['gemini'],
    );
    const res = (await client.callTool({
      name: 'gemini',
      arguments: { prompt: 'hello', sandbox: false, model: 'ignored' },
    })) as CallToolResult;
    assert.equal(res.isError, true);
    const text = (res.content[0] as { text: string }).text;
    assert.match(text, /sandbox could not start \(sandbox mode "auto"\)/);
    assert.match(text, /image|docker|podman/i, 'the cause from the CLI is named');
    assert.match(text, /--gemini-sandbox/);
    assert.equal((res.structuredContent as { code?: string }).code, 'sandbox_unavailable');
    assert.equal(mock.mainCalls().length, 0, 'no model call happened outside a sandbox');
  } finally {
    await client.close();
  }
});

test('with the operator choosing the external sandbox mode, the real CLI answers through the mock', async () => {
  const { client } = await spawnStdioClient(launch(['--gemini-sandbox', 'external', '--model', 'gemini-mock']));
  try {
    mock.script.push({ type: 'text', chunks: ['Hello ', 'from Gemini'] });
    const progress: string[] = [];
    const res = (await client.callTool(
      { name: 'gemini', arguments: { prompt: '--looks-like-a-flag but is the prompt', cwd: workspace } },
      { onprogress: (p) => progress.push(p.message ?? '') },
    )) as CallToolResult;
    assert.equal(res.isError, undefined, JSON.stringify(res.content));
    assert.equal((res.content[0] as { text: string }).text, 'Hello from Gemini');
    assert.ok(progress.length >= 1);
    const sent = mock.mainCalls().at(-1)!;
    assert.ok(sent.rawBody.includes('--looks-like-a-flag but is the prompt'), 'the prompt reached the model intact');
    assert.match(sent.path, /gemini-mock/, 'the operator pins the model');
  } finally {
    await client.close();
  }
});
