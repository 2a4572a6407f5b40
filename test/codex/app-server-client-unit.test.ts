// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of CodexAppServerClient's own rules (limits, validation, correlation) against a scripted FAKE app-server
// on in-memory streams: these are behaviours a real Codex does not exhibit on demand (bad initialize fields, floods of
// server requests, silence). The real-binary tests live in app-server-client.test.ts.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { JsonRpcRequestError } from '../../src/codex/json-rpc-peer.ts';
import {
  CodexAppServerClient,
  type CodexAppServerClientOptions,
  CodexAppServerRequestError,
  type CodexServerRequest,
} from '../../src/index.ts';
import { readJsonLines } from '../../src/lib/jsonl.ts';

const clientInfo = { name: 'unit', version: '1' };
const GOOD_INIT = {
  userAgent: 'unit/0.169.0 (Debian 12.0.0; x86_64) unknown (unit; 1)',
  codexHome: '/home/u/.codex',
  platformFamily: 'unix',
  platformOs: 'linux',
};

/** A fake app-server speaking JSONL on two PassThroughs; `sent` holds what the client wrote. */
function fakeServer(initResult: unknown = GOOD_INIT, opts: { answerInitialize?: boolean } = {}) {
  const toClient = new PassThrough();
  const fromClient = new PassThrough();
  const sent: Array<Record<string, unknown>> = [];
  const listeners = new Set<(m: Record<string, unknown>) => void>();
  readJsonLines(fromClient, {
    onMessage: (m) => {
      const msg = m as Record<string, unknown>;
      sent.push(msg);
      if (msg.method === 'initialize' && opts.answerInitialize !== false) {
        toClient.write(`${JSON.stringify({ id: msg.id, result: initResult })}\n`);
      }
      for (const l of listeners) l(msg);
    },
    onError: () => {},
  });
  return {
    toClient,
    fromClient,
    sent,
    send: (msg: unknown) => toClient.write(`${JSON.stringify(msg)}\n`),
    next: (match: (m: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const seen = sent.find(match);
        if (seen) return resolve(seen);
        const l = (m: Record<string, unknown>) => {
          if (match(m)) {
            listeners.delete(l);
            resolve(m);
          }
        };
        listeners.add(l);
      }),
  };
}

function clientFor(fake: ReturnType<typeof fakeServer>, extra: Partial<CodexAppServerClientOptions> = {}) {
  return new CodexAppServerClient({
    transport: { type: 'stdio', readable: fake.toClient, writable: fake.fromClient },
    clientInfo,
    ...extra,
  });
}

describe('options', () => {
  const base = { transport: { type: 'stdio' as const, readable: new PassThrough(), writable: new PassThrough() } };
  const cases: Array<[string, Partial<CodexAppServerClientOptions>, RegExp]> = [
    ['maxMessageBytes below 1 KiB', { maxMessageBytes: 1023 }, /maxMessageBytes must be an integer from 1024/],
    ['maxMessageBytes above 64 MiB', { maxMessageBytes: 64 * 1024 * 1024 + 1 }, /maxMessageBytes/],
    ['maxMessageBytes not an integer', { maxMessageBytes: 2048.5 }, /maxMessageBytes/],
    ['handshakeTimeoutMs 0', { handshakeTimeoutMs: 0 }, /handshakeTimeoutMs must be an integer from 1 to 120000/],
    ['initializeTimeoutMs above 120 s', { initializeTimeoutMs: 120_001 }, /initializeTimeoutMs/],
    ['a non-ws URL', { transport: { type: 'websocket', url: 'http://127.0.0.1:1/' } }, /ws:\/\/ or wss:\/\//],
    ['a relative socket path', { transport: { type: 'unix', socketPath: 'rel/sock' } }, /absolute/],
  ];
  for (const [name, extra, message] of cases) {
    test(`refuses ${name}`, () => {
      assert.throws(() => new CodexAppServerClient({ ...base, clientInfo, ...extra }), message);
    });
  }
  test('accepts the bounds', () => {
    for (const value of [1024, 64 * 1024 * 1024]) {
      assert.ok(new CodexAppServerClient({ ...base, clientInfo, maxMessageBytes: value }));
    }
    for (const value of [1, 120_000]) {
      assert.ok(
        new CodexAppServerClient({ ...base, clientInfo, handshakeTimeoutMs: value, initializeTimeoutMs: value }),
      );
    }
  });
});

describe('initialize result', () => {
  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['relative codexHome', { codexHome: 'home/.codex' }, 'codexHome'],
    ['codexHome with a control character', { codexHome: '/home/\u0007x' }, 'codexHome'],
    ['codexHome that is not a string', { codexHome: 42 }, 'codexHome'],
    ['codexHome over 4096 bytes', { codexHome: `/${'é'.repeat(2048)}` }, 'codexHome'],
    ['codexHome with a lone surrogate', { codexHome: '/home/\ud800' }, 'codexHome'],
    ['a windows codexHome on unix', { codexHome: 'C:\\Users\\u\\.codex' }, 'codexHome'],
    ['a posix codexHome on windows', { platformFamily: 'windows', platformOs: 'windows' }, 'codexHome'],
    ['an uppercase platformOs', { platformOs: 'Linux' }, 'platformOs'],
    ['a platformFamily over 64 chars', { platformFamily: 'u'.repeat(65) }, 'platformFamily'],
    ['a userAgent without a version', { userAgent: 'no version here' }, 'userAgent'],
  ];
  for (const [name, patch, field] of invalid) {
    test(`rejects ${name}`, async () => {
      const fake = fakeServer({ ...GOOD_INIT, ...patch });
      let closeError: Error | undefined;
      const client = clientFor(fake, {
        onClose: (e) => {
          closeError = e;
        },
      });
      await assert.rejects(client.connect(), { message: `Codex server returned an invalid initialize ${field}` });
      assert.equal(client.connected, false);
      assert.equal(closeError?.message, `Codex server returned an invalid initialize ${field}`);
      assert.ok(fake.fromClient.writableEnded, 'the client ended its stdio streams');
    });
  }
  const valid: Array<[string, Record<string, unknown>]> = [
    ['windows drive', { codexHome: 'C:\\Users\\u\\.codex', platformFamily: 'windows', platformOs: 'windows' }],
    ['windows UNC', { codexHome: '\\\\server\\share\\.codex', platformFamily: 'windows', platformOs: 'windows' }],
    ['windows verbatim', { codexHome: '\\\\?\\C:\\codex', platformFamily: 'windows', platformOs: 'windows' }],
    ['codexHome of exactly 4096 bytes', { codexHome: `/${'a'.repeat(4095)}` }],
  ];
  for (const [name, patch] of valid) {
    test(`accepts ${name}`, async () => {
      const client = clientFor(fakeServer({ ...GOOD_INIT, ...patch }));
      await client.connect();
      assert.equal(client.serverCodexHome, patch.codexHome);
      client.close();
    });
  }
  test('omitted fields stay undefined (older Codex)', async () => {
    const client = clientFor(fakeServer({ userAgent: 'codex_cli_rs/0.114.0 (Mac OS 14; arm64)' }));
    await client.connect();
    assert.equal(client.serverVersion, '0.114.0');
    assert.equal(client.serverCodexHome, undefined);
    assert.equal(client.serverPlatformFamily, undefined);
    assert.equal(client.serverPlatformOs, undefined);
    client.close();
  });
  test('sends initialize with clientInfo and experimentalApi, then initialized', async () => {
    const fake = fakeServer();
    const client = clientFor(fake, { experimentalApi: true });
    await client.connect();
    const init = fake.sent[0]!;
    assert.equal(init.method, 'initialize');
    assert.deepEqual((init.params as Record<string, unknown>).clientInfo, { name: 'unit', title: null, version: '1' });
    assert.equal(
      ((init.params as Record<string, unknown>).capabilities as Record<string, unknown>).experimentalApi,
      true,
    );
    assert.deepEqual(await fake.next((m) => m.method === 'initialized'), { method: 'initialized' });
    client.close();
  });
});

describe('deadlines', () => {
  test('initialize unanswered: connect fails after initializeTimeoutMs, no retry', async () => {
    const fake = fakeServer(GOOD_INIT, { answerInitialize: false });
    const client = clientFor(fake, { initializeTimeoutMs: 50 });
    await assert.rejects(client.connect(), { message: 'Codex app-server did not answer initialize within 50 ms' });
    assert.equal(fake.sent.filter((m) => m.method === 'initialize').length, 1);
  });
  test('a WebSocket handshake that never completes: connect fails after handshakeTimeoutMs', async (t) => {
    const sockets = new Set<import('node:net').Socket>();
    const silent = createServer((s) => sockets.add(s)).listen(0, '127.0.0.1');
    t.after(() => {
      for (const s of sockets) s.destroy();
      silent.close();
    });
    await new Promise((r) => silent.once('listening', r));
    const port = (silent.address() as import('node:net').AddressInfo).port;
    const client = new CodexAppServerClient({
      transport: { type: 'websocket', url: `ws://127.0.0.1:${port}` },
      clientInfo,
      handshakeTimeoutMs: 50,
    });
    await assert.rejects(client.connect(), /did not finish within 50 ms/);
  });
  test('a request timeout rejects with dispatched=true and ignores the late answer', async () => {
    const fake = fakeServer();
    const client = clientFor(fake);
    await client.connect();
    await assert.rejects(client.request('thread/list', {}, 20), (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.ok(err instanceof JsonRpcRequestError, 'one error class: the Codex error is the peer error');
      assert.equal(err.reason, 'timeout');
      assert.equal(err.dispatched, true);
      assert.equal(err.code, undefined);
      return true;
    });
    const sent = await fake.next((m) => m.method === 'thread/list');
    fake.send({ id: sent.id, result: { late: true } });
    await tick();
    assert.equal(client.connected, true);
    client.close();
  });
});

describe('correlation and limits', () => {
  test('ids may be 0; server errors keep their code', async () => {
    const fake = fakeServer();
    const client = clientFor(fake);
    await client.connect();
    // The client's own ids start at 0 (initialize).
    assert.equal(fake.sent[0]!.id, 0);
    const pending = client.request('x/fails', {});
    const sent = await fake.next((m) => m.method === 'x/fails');
    fake.send({ id: sent.id, error: { code: -32602, message: 'bad params' } });
    await assert.rejects(pending, (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.equal(err.code, -32602);
      assert.equal(err.dispatched, true);
      assert.match(err.message, /bad params/);
      return true;
    });
    client.close();
  });

  test('server requests: tracked with a signal, resolved by the server, unhandled ones get method-not-supported', async () => {
    const fake = fakeServer();
    const requests: CodexServerRequest[] = [];
    const client = clientFor(fake, {
      onServerRequest: (r) => requests.push(r),
      ignoredServerRequestMethods: ['account/chatgptAuthTokens/refresh'],
    });
    await client.connect();
    fake.send({ id: 0, method: 'item/commandExecution/requestApproval', params: { threadId: 't' } });
    fake.send({ id: 1, method: 'account/chatgptAuthTokens/refresh', params: {} });
    fake.send({ id: 2, method: 'item/fileChange/requestApproval', params: { threadId: 't' } });
    await fake.toClient.write(''); // flush ordering
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      requests.map((r) => [r.id, r.method]),
      [
        [0, 'item/commandExecution/requestApproval'],
        [2, 'item/fileChange/requestApproval'],
      ],
    );
    // The ignored request is neither passed on, nor answered, nor tracked.
    assert.equal(client.respond(1, {}), false);
    // serverRequest/resolved aborts the signal and expires the id.
    fake.send({ method: 'serverRequest/resolved', params: { threadId: 't', requestId: 2 } });
    await new Promise((r) => setImmediate(r));
    assert.equal(requests[1]!.signal.aborted, true);
    assert.equal(client.respond(2, {}), false);
    // Answering the other one works once.
    assert.equal(client.rejectRequest(0, -32000, 'declined by policy'), true);
    assert.equal(requests[0]!.signal.aborted, true);
    const answer = await fake.next((m) => m.id === 0 && 'error' in m);
    assert.deepEqual(answer.error, { code: -32000, message: 'declined by policy' });
    assert.equal(
      fake.sent.some((m) => m.id === 1 && !('method' in m)),
      false,
    );
    client.close();

    // A client without a handler answers method-not-supported.
    const fake2 = fakeServer();
    const bare = clientFor(fake2);
    await bare.connect();
    fake2.send({ id: 0, method: 'item/tool/requestUserInput', params: {} });
    const refusal = await fake2.next((m) => m.id === 0 && 'error' in m);
    assert.equal((refusal.error as { code: number }).code, -32601);
    bare.close();
  });

  test('a disconnect aborts pending server request signals and rejects pending requests as dispatched', async () => {
    const fake = fakeServer();
    const requests: CodexServerRequest[] = [];
    let closeError: Error | undefined;
    const client = clientFor(fake, {
      onServerRequest: (r) => requests.push(r),
      onClose: (e) => {
        closeError = e;
      },
    });
    await client.connect();
    fake.send({ id: 7, method: 'item/permissions/requestApproval', params: {} });
    const pending = client.request('thread/list', {});
    await fake.next((m) => m.method === 'thread/list');
    fake.toClient.end();
    await assert.rejects(pending, (err: unknown) => err instanceof CodexAppServerRequestError && err.dispatched);
    assert.equal(requests[0]?.signal.aborted, true);
    assert.ok(closeError);
    assert.equal(client.respond(7, {}), false);
  });

  test('256 unanswered server requests are the cap: one more closes the connection', async () => {
    const fake = fakeServer();
    let closeError: Error | undefined;
    const client = clientFor(fake, {
      onServerRequest: () => {},
      ignoredServerRequestMethods: ['account/chatgptAuthTokens/refresh'],
      onClose: (e) => {
        closeError = e;
      },
    });
    await client.connect();
    for (let id = 0; id < 256; id++) fake.send({ id, method: 'item/commandExecution/requestApproval', params: {} });
    // Ignored methods do not count.
    for (let id = 1000; id < 1010; id++) fake.send({ id, method: 'account/chatgptAuthTokens/refresh', params: {} });
    await new Promise((r) => setImmediate(r));
    assert.equal(closeError, undefined);
    assert.equal(client.connected, true);
    fake.send({ id: 256, method: 'item/commandExecution/requestApproval', params: {} });
    await new Promise((r) => setImmediate(r));
    assert.equal(client.connected, false);
    assert.match(String((closeError as Error | undefined)?.message), /more than 256 unanswered requests/);
  });

  test('256 pending requests are the cap: one more is refused before dispatch', async () => {
    const fake = fakeServer();
    const client = clientFor(fake);
    await client.connect();
    const pending = Array.from({ length: 256 }, (_, i) => client.request('thread/list', { i }).catch((e) => e));
    await assert.rejects(client.request('thread/list', {}), (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.equal(err.dispatched, false);
      assert.match(err.message, /too many pending requests \(limit 256\)/);
      return true;
    });
    client.close();
    assert.equal((await Promise.all(pending)).length, 256);
  });

  test('a malformed frame closes the connection', async () => {
    const fake = fakeServer();
    let closeError: Error | undefined;
    const client = clientFor(fake, {
      onClose: (e) => {
        closeError = e;
      },
    });
    await client.connect();
    fake.toClient.write('{not json\n');
    await new Promise((r) => setImmediate(r));
    assert.equal(client.connected, false);
    assert.match(String(closeError?.message), /not valid JSON/);
  });
});

describe('outgoing bounds', () => {
  /** A server that answers initialize, then stops reading: everything else stays queued in the client's stream. */
  function stuckServer() {
    const toClient = new PassThrough();
    const fromClient = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _enc, callback) {
        const msg = JSON.parse(chunk.toString('utf8'));
        if (msg.method === 'initialize') {
          toClient.write(`${JSON.stringify({ id: msg.id, result: GOOD_INIT })}\n`);
          callback();
        } else if (msg.method === 'initialized') callback();
        // Anything else: never acknowledged, so it stays buffered.
      },
    });
    return { toClient, fromClient };
  }

  test('sends that would queue more than 4 MiB are refused before dispatch', async () => {
    const { toClient, fromClient } = stuckServer();
    const client = new CodexAppServerClient({
      transport: { type: 'stdio', readable: toClient, writable: fromClient },
      clientInfo,
    });
    await client.connect();
    const threeMiB = 'x'.repeat(3 * 1024 * 1024);
    const first = client.request('big/one', { blob: threeMiB }).catch((e) => e);
    await assert.rejects(client.request('big/two', { blob: threeMiB }), (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.equal(err.dispatched, false);
      assert.match(err.message, /outgoing buffer is full \(limit 4194304 bytes\)/);
      return true;
    });
    assert.equal(client.connected, true);
    client.close();
    assert.ok((await first) instanceof CodexAppServerRequestError);
  });
});

test('aborting a dispatched request rejects it as dispatched; a pre-aborted one is never sent', async () => {
  const fake = fakeServer();
  const client = clientFor(fake);
  await client.connect();
  const controller = new AbortController();
  const pending = client.request('thread/list', {}, undefined, controller.signal);
  await fake.next((m) => m.method === 'thread/list');
  controller.abort();
  await assert.rejects(pending, (err: unknown) => err instanceof CodexAppServerRequestError && err.dispatched);
  await assert.rejects(
    client.request('thread/read', {}, undefined, AbortSignal.abort()),
    (err: unknown) => err instanceof CodexAppServerRequestError && !err.dispatched,
  );
  assert.equal(
    fake.sent.some((m) => m.method === 'thread/read'),
    false,
  );
  client.close();
});
