// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The generic JSON-RPC peer on its own: two peers over an in-memory channel pair, as MCP-style users would wire it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type IncomingRequest,
  JsonRpcPeer,
  JsonRpcRequestError,
  type MessageChannel,
} from '../../src/codex/json-rpc-peer.ts';

/** Two connected in-memory channels; `wire` records every serialised message. */
function channelPair(wire: string[]): [MessageChannel, MessageChannel] {
  const make = (): MessageChannel & {
    other?: MessageChannel & { deliver: (t: string) => void };
    deliver: (t: string) => void;
  } => {
    let onMessage: ((m: unknown) => void) | undefined;
    let onClose: ((e?: Error) => void) | undefined;
    const ch = {
      other: undefined as (MessageChannel & { deliver: (t: string) => void }) | undefined,
      start(h: { onMessage: (m: unknown) => void; onClose: (e?: Error) => void }) {
        onMessage = h.onMessage;
        onClose = h.onClose;
      },
      send(text: string) {
        wire.push(text);
        queueMicrotask(() => ch.other?.deliver(text));
      },
      close() {
        onClose?.();
      },
      deliver(text: string) {
        onMessage?.(JSON.parse(text));
      },
    };
    return ch;
  };
  const a = make();
  const b = make();
  a.other = b;
  b.other = a;
  return [a, b];
}

test('requests both ways, notifications, the "jsonrpc" field, method-not-found', async () => {
  const wire: string[] = [];
  const [ca, cb] = channelPair(wire);
  const notes: Array<[string, unknown]> = [];
  const serverRequests: IncomingRequest[] = [];
  const client = new JsonRpcPeer({
    channel: ca,
    maxPendingOutgoing: 4,
    maxPendingIncoming: 4,
    jsonrpcVersionField: true,
    onNotification: (m, p) => notes.push([m, p]),
    onRequest: (r) => {
      serverRequests.push(r);
      return true;
    },
  });
  const server = new JsonRpcPeer({
    channel: cb,
    maxPendingOutgoing: 4,
    maxPendingIncoming: 4,
    jsonrpcVersionField: true,
    onRequest: (r) => {
      if (r.method !== 'tools/list') return false;
      server.notify('notifications/progress', { n: 1 });
      server.respond(r.id, { tools: [] });
      return true;
    },
  });
  client.start();
  server.start();
  assert.deepEqual(await client.request('tools/list', {}), { tools: [] });
  assert.deepEqual(notes, [['notifications/progress', { n: 1 }]]);
  assert.ok(wire.every((text) => JSON.parse(text).jsonrpc === '2.0'));
  await assert.rejects(client.request('nope', {}), (err: unknown) => {
    assert.ok(err instanceof JsonRpcRequestError);
    assert.equal(err.reason, 'server_error');
    assert.equal(err.code, -32601);
    assert.equal(err.dispatched, true);
    return true;
  });
  // The other direction: the server asks, the client answers later; ids of both sides are independent.
  const answer = server.request('roots/list', {});
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(serverRequests.length, 1);
  assert.equal(serverRequests[0]!.id, 0);
  assert.equal(client.respond(serverRequests[0]!.id, { roots: [] }), true);
  assert.deepEqual(await answer, { roots: [] });
  assert.equal(serverRequests[0]!.signal.aborted, true);
  client.close();
  server.close();
});

test('string and numeric ids are distinct; a late response is ignored', async () => {
  const wire: string[] = [];
  const [ca, cb] = channelPair(wire);
  const peer = new JsonRpcPeer({
    channel: ca,
    maxPendingOutgoing: 2,
    maxPendingIncoming: 2,
    jsonrpcVersionField: false,
  });
  const seen: IncomingRequest[] = [];
  const other = new JsonRpcPeer({
    channel: cb,
    maxPendingOutgoing: 2,
    maxPendingIncoming: 2,
    jsonrpcVersionField: false,
    onRequest: (r) => {
      seen.push(r);
      return true;
    },
  });
  peer.start();
  other.start();
  (cb as unknown as { deliver: (t: string) => void }).deliver(JSON.stringify({ id: '0', method: 'a' }));
  (cb as unknown as { deliver: (t: string) => void }).deliver(JSON.stringify({ id: 0, method: 'b' }));
  assert.deepEqual(
    seen.map((r) => [r.id, r.method]),
    [
      ['0', 'a'],
      [0, 'b'],
    ],
  );
  assert.equal(other.respond('0', 'for a'), true);
  assert.equal(other.respond(0, 'for b'), true);
  assert.equal(other.respond(0, 'again'), false);
  peer.close();
  other.close();

  // A fresh pair: a request nobody answers times out; its late response is then ignored.
  const [c1, c2] = channelPair([]);
  const asker = new JsonRpcPeer({
    channel: c1,
    maxPendingOutgoing: 2,
    maxPendingIncoming: 2,
    jsonrpcVersionField: false,
  });
  const silent = new JsonRpcPeer({
    channel: c2,
    maxPendingOutgoing: 2,
    maxPendingIncoming: 2,
    jsonrpcVersionField: false,
    onRequest: () => true,
  });
  asker.start();
  silent.start();
  await assert.rejects(asker.request('slow', {}, { timeoutMs: 5 }), /no response within 5 ms/);
  await assert.rejects(
    asker.request('slow', {}, { timeoutMs: 5 }),
    (err: unknown) => err instanceof JsonRpcRequestError && err.reason === 'timeout' && err.dispatched,
  );
  assert.equal(asker.pendingOutgoingCount, 0);
  assert.equal(silent.respond(0, 'late'), true);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(asker.isClosed, false);
  asker.close();
  silent.close();
});
