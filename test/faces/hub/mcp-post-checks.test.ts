// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The hub serves 2025-era sessions from its store, not through the SDK's Streamable HTTP transport, so it makes that
// transport's checks of a POST itself (postMessages in faces/hub/post-checks.ts). This pins the copy: every input
// below goes to both, and the two must refuse with the same status, JSON-RPC code and message, or both accept it. An SDK
// upgrade that changes its checks fails here instead of drifting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SUPPORTED_PROTOCOL_VERSIONS, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { postMessages } from '../../../src/faces/hub/post-checks.ts';

const BOTH = 'application/json, text/event-stream';
const JSON_TYPE = 'application/json';
const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

interface Case {
  what: string;
  headers: Record<string, string>;
  body: unknown;
}

const cases: Case[] = [
  { what: 'no Accept', headers: { 'content-type': JSON_TYPE }, body: note },
  { what: 'Accept without event streams', headers: { accept: JSON_TYPE, 'content-type': JSON_TYPE }, body: note },
  { what: 'Accept without JSON', headers: { accept: 'text/event-stream', 'content-type': JSON_TYPE }, body: note },
  { what: 'a text body', headers: { accept: BOTH, 'content-type': 'text/plain' }, body: note },
  { what: 'no Content-Type', headers: { accept: BOTH }, body: note },
  {
    what: 'JSON with a charset',
    headers: { accept: BOTH, 'content-type': 'application/json; charset=utf-8' },
    body: note,
  },
  { what: 'a batch of 100', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: Array(100).fill(note) },
  { what: 'a batch of 101', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: Array(101).fill(note) },
  { what: 'not JSON-RPC', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: { hello: 'world' } },
  { what: 'a batch with one bad message', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: [note, 7] },
  { what: 'initialize in a batch', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: [init, note] },
  {
    what: 'an unsupported protocol version',
    headers: { accept: BOTH, 'content-type': JSON_TYPE, 'mcp-protocol-version': '1999-01-01' },
    body: note,
  },
  ...SUPPORTED_PROTOCOL_VERSIONS.map((v) => ({
    what: `protocol version ${v}`,
    headers: { accept: BOTH, 'content-type': JSON_TYPE, 'mcp-protocol-version': v },
    body: note,
  })),
  { what: 'a notification, no version header', headers: { accept: BOTH, 'content-type': JSON_TYPE }, body: note },
];

/** What the SDK's own transport (stateless: no session to check) answers the same POST. */
async function sdkAnswer(c: Case): Promise<{ status: number; code?: number; message?: string }> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  transport.onerror = () => {};
  const request = new Request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: c.headers,
    body: JSON.stringify(c.body),
  });
  const response = await transport.handleRequest(request, { parsedBody: c.body });
  await transport.close();
  if (response.status < 400) return { status: response.status };
  const { error } = (await response.json()) as { error: { code: number; message: string } };
  return { status: response.status, code: error.code, message: error.message };
}

for (const c of cases) {
  test(`a 2025-era POST, ${c.what}: the hub's checks answer as the SDK's transport does`, async () => {
    const sdk = await sdkAnswer(c);
    const ours = postMessages(c.headers, c.body, false);
    if (Array.isArray(ours)) {
      assert.ok(sdk.status < 400, `the hub accepts it; the SDK refused it: ${JSON.stringify(sdk)}`);
      assert.equal(ours.length, Array.isArray(c.body) ? c.body.length : 1);
    } else {
      assert.deepEqual(ours, sdk);
    }
  });
}

test('a POST that opens a session is checked the same way up to the JSON-RPC shape', async () => {
  // The endpoint takes it as opening a session only when the body is one initialize request; the SDK checks the
  // version of such a request by negotiation, not by header, and so does the hub.
  const refused = { headers: { accept: JSON_TYPE, 'content-type': JSON_TYPE }, body: init, what: 'initialize' };
  assert.deepEqual(postMessages(refused.headers, refused.body, true), await sdkAnswer(refused));
  const odd = { 'mcp-protocol-version': '1999-01-01', accept: BOTH, 'content-type': JSON_TYPE };
  assert.ok(Array.isArray(postMessages(odd, init, true)), 'the version header is not checked on initialize');
});
