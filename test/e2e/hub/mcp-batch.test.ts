// The 2025-era endpoint speaks MCP 2025-06-18, which has no JSON-RPC batches: an array body is refused with a
// JSON-RPC error naming that, whether it opens a session (an initialize inside) or runs on one, and changes nothing.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startHub, TEST_CALLERS } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

const initialize = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

test('a JSON-RPC batch is refused on the 2025-era endpoint', async (t) => {
  const dir = tempDir(t);
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, { dir, roots: [work], agents: {} });
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${hub.url}/mcp/alice`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${TEST_CALLERS.alice}`,
        ...headers,
      },
      body: JSON.stringify(body),
    });

  const batched = await post([initialize(1)]);
  assert.equal(batched.status, 400);
  assert.equal(batched.headers.get('mcp-session-id'), null, 'no session was opened');
  const error = (await batched.json()) as { jsonrpc: string; error: { code: number; message: string } };
  assert.equal(error.jsonrpc, '2.0');
  assert.equal(error.error.code, -32600);
  assert.match(error.error.message, /batch/);

  // On an open session too.
  const single = await post(initialize(1));
  assert.equal(single.status, 200);
  const sid = single.headers.get('mcp-session-id')!;
  await single.text();
  const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
  const onSession = await post(
    [
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'ping' },
    ],
    headers,
  );
  assert.equal(onSession.status, 400);
  assert.equal(((await onSession.json()) as { error: { code: number } }).error.code, -32600);
  // The session still answers one message per POST.
  const ping = await post({ jsonrpc: '2.0', id: 4, method: 'ping' }, headers);
  assert.equal(ping.status, 200);
});
