// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// How the legacy bridge tells frames apart (legacy-frames.ts), alone: each line from the client and from Codex is
// classified into the one kind its handler takes, with what that handler reads, and a line that is not JSON is
// unparsable (forwarded as it is); valid JSON that is not an object from Codex is not_object (the bridge
// logs and drops it). The bridge's handling of each kind is tested against real Codex 0.153 in
// codex-legacy.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientFrame, codexFrame } from '../../../../src/faces/provider/codex/legacy-frames.ts';

const line = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

test('client frames: tools/list, a cancel, a tools/call with its name and arguments, anything else', () => {
  assert.deepEqual(clientFrame(line('{"jsonrpc":')), { kind: 'unparsable' });
  const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
  assert.deepEqual(clientFrame(line(list)), { kind: 'tools_list', msg: list, id: 3 });
  // A tools/list notification (no id) has no answer to curate: forwarded like any other frame.
  const listNote = { jsonrpc: '2.0', method: 'tools/list' };
  assert.deepEqual(clientFrame(line(listNote)), { kind: 'other', msg: listNote });

  const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'r-1' } };
  assert.deepEqual(clientFrame(line(cancel)), { kind: 'cancelled', msg: cancel, requestId: 'r-1' });
  const bareCancel = { jsonrpc: '2.0', method: 'notifications/cancelled' };
  assert.deepEqual(clientFrame(line(bareCancel)), { kind: 'cancelled', msg: bareCancel, requestId: undefined });

  const call = { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'codex', arguments: { prompt: 'p' } } };
  assert.deepEqual(clientFrame(line(call)), {
    kind: 'tools_call',
    msg: call,
    id: 'c',
    name: 'codex',
    args: { prompt: 'p' },
  });
  const noArgs = { jsonrpc: '2.0', id: 0, method: 'tools/call', params: {} };
  assert.deepEqual(clientFrame(line(noArgs)), { kind: 'tools_call', msg: noArgs, id: 0, name: '', args: {} });
  const callNote = { jsonrpc: '2.0', method: 'tools/call', params: { name: 'codex' } };
  assert.deepEqual(clientFrame(line(callNote)), { kind: 'other', msg: callNote });

  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} };
  assert.deepEqual(clientFrame(line(init)), { kind: 'other', msg: init });
});

test('Codex frames: a response, an event with its request and thread, a server request, anything else', () => {
  assert.deepEqual(codexFrame(line('not json')), { kind: 'unparsable' });
  const response = { jsonrpc: '2.0', id: 7, result: { tools: [] } };
  assert.deepEqual(codexFrame(line(response)), { kind: 'response', msg: response, key: 'number:7' });
  // Ids keep their type: the string "7" is another request than the number 7.
  assert.equal((codexFrame(line({ jsonrpc: '2.0', id: '7', result: {} })) as { key: string }).key, 'string:7');

  const event = {
    jsonrpc: '2.0',
    method: 'codex/event',
    params: { _meta: { requestId: 'c', threadId: 't-1' }, msg: { type: 'task_started' } },
  };
  assert.deepEqual(codexFrame(line(event)), {
    kind: 'event',
    msg: event,
    requestId: 'c',
    threadId: 't-1',
    event: { type: 'task_started' },
  });
  const bareEvent = { jsonrpc: '2.0', method: 'codex/event', params: {} };
  assert.deepEqual(codexFrame(line(bareEvent)), {
    kind: 'event',
    msg: bareEvent,
    requestId: undefined,
    threadId: undefined,
    event: {},
  });

  const elicit = { jsonrpc: '2.0', id: 9, method: 'elicitation/create', params: { _meta: { requestId: 'job-1' } } };
  assert.deepEqual(codexFrame(line(elicit)), { kind: 'server_request', msg: elicit, id: 9, related: 'job-1' });
  const note = { jsonrpc: '2.0', method: 'notifications/message', params: {} };
  assert.deepEqual(codexFrame(line(note)), { kind: 'other', msg: note });
});

/** Valid JSON that is not a JSON-RPC object: each is one line a peer may send. */
const NOT_OBJECTS = ['null', '42', '"text"', '[1,2]', 'true'];

test('a line of JSON that is not an object: Codex sent nothing the bridge can act on; the client is answered by Codex', () => {
  for (const text of NOT_OBJECTS) {
    assert.deepEqual(codexFrame(line(text)), { kind: 'not_object' }, text);
    assert.deepEqual(clientFrame(line(text)), { kind: 'unparsable' }, text);
  }
  // An event whose payload is not an object carries an empty one, so no handler reads a field of null.
  for (const payload of [null, 5, 'x', [1]]) {
    const event = { jsonrpc: '2.0', method: 'codex/event', params: { msg: payload } };
    assert.deepEqual((codexFrame(line(event)) as { event: unknown }).event, {}, JSON.stringify(payload));
  }
});
