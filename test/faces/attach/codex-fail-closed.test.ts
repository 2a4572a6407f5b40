// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The Codex paths a real app-server cannot be made to take: an unacknowledged turn/interrupt, a turn/start that never
// answers, and server requests that must be declined, refused or left alone. These run against a FAKE WebSocket
// app-server scripted below (this file says so); the happy and timeout paths run against the real binary in
// attach-codex.test.ts. Also the pure admission bounds (AT-5).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { WebSocketServer } from 'ws';
import { codexDecline, DECLINED_CODEX_METHODS } from '../../../src/codex/declines.ts';
import { ConnectionRegistry } from '../../../src/faces/attach/connections.ts';
import {
  MAX_SENDS_PER_CONNECTION,
  MAX_SENDS_PER_THREAD,
  SendAdmission,
} from '../../../src/faces/attach/send-admission.ts';
import { until } from '../../support/poll.ts';

describe('send admission (AT-5)', () => {
  test(`≤ ${MAX_SENDS_PER_THREAD} per thread and ≤ ${MAX_SENDS_PER_CONNECTION} per connection, refused before delivery`, () => {
    const admission = new SendAdmission();
    const tickets = [];
    for (let i = 0; i < MAX_SENDS_PER_THREAD; i++) tickets.push(admission.admit('t'));
    assert.throws(() => admission.admit('t'), /already has 10 queued or active sends/);
    for (let thread = 1; tickets.length < MAX_SENDS_PER_CONNECTION; thread++)
      for (let i = 0; i < MAX_SENDS_PER_THREAD && tickets.length < MAX_SENDS_PER_CONNECTION; i++)
        tickets.push(admission.admit(`t${thread}`));
    assert.throws(() => admission.admit('fresh'), /already has 100 queued or active sends/);
    tickets[0]!.release();
    tickets[0]!.release();
    assert.equal(admission.active, MAX_SENDS_PER_CONNECTION - 1);
    admission.admit('fresh');
  });

  test('sends to one thread start in order; a queued send that gives up does not let a later one overtake', async () => {
    const admission = new SendAdmission();
    const order: string[] = [];
    const a = admission.admit('t');
    const b = admission.admit('t');
    const c = admission.admit('t');
    const never = new AbortController().signal;
    const giveUp = new AbortController();
    await a.ready(never);
    order.push('a');
    const bReady = b.ready(giveUp.signal).then(
      () => order.push('b'),
      () => order.push('b gave up'),
    );
    const cReady = c.ready(never).then(() => order.push('c'));
    giveUp.abort();
    await bReady;
    b.release();
    assert.deepEqual(order, ['a', 'b gave up'], 'c still waits for a');
    a.release();
    await cReady;
    assert.deepEqual(order, ['a', 'b gave up', 'c']);
  });
});

type Script = {
  turnStart?: 'answer' | 'silent';
  interrupt?: 'ack' | 'silent';
};

/** A scripted fake app-server: answers initialize and the read calls, and follows `script` for the turn calls. */
async function fakeAppServer(script: Script) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await once(wss, 'listening');
  const received: Array<{ id?: number | string; method?: string; result?: unknown; error?: { code: number } }> = [];
  let socket: import('ws').WebSocket | undefined;
  let closed = false;
  wss.on('connection', (ws) => {
    socket = ws;
    ws.on('close', () => {
      closed = true;
    });
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data));
      received.push(msg);
      const answer = (result: unknown) => ws.send(JSON.stringify({ id: msg.id, result }));
      switch (msg.method) {
        case 'initialize':
          return answer({
            userAgent: 'codex_fake/0.169.0',
            codexHome: '/fake',
            platformFamily: 'unix',
            platformOs: 'linux',
          });
        case 'thread/read':
          return answer({ thread: { id: msg.params.threadId, cwd: '/srv', turns: [] } });
        case 'thread/resume':
          return answer({ thread: { id: msg.params.threadId, cwd: '/srv', turns: [] } });
        case 'turn/start':
          if (script.turnStart === 'silent') return;
          return answer({ turn: { id: 'turn-1', status: 'inProgress', items: [] } });
        case 'turn/interrupt':
          if (script.interrupt === 'silent') return;
          return answer({});
      }
    });
  });
  const port = (wss.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}/`,
    received,
    get closed() {
      return closed;
    },
    request(id: number, method: string, params: unknown) {
      socket!.send(JSON.stringify({ id, method, params }));
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

async function connectTo(url: string) {
  const registry = new ConnectionRegistry({ allowedServerUrls: [url], env: {} });
  const info = await registry.connect('codex', url, '/srv');
  return { registry, connection: registry.get(info.connectionId) };
}

describe('Codex connections fail closed (fake app-server)', () => {
  test('an interrupt that is not acknowledged within 3 s closes the socket instead of risking overlapping turns', async () => {
    const fake = await fakeAppServer({ interrupt: 'silent' });
    try {
      const { registry, connection } = await connectTo(fake.url);
      await assert.rejects(
        connection.send('thread-1', 'hi', { timeoutMs: 200 }),
        /no reply within .*connection was closed/,
      );
      assert.ok(fake.received.some((m) => m.method === 'turn/interrupt'));
      await until(() => fake.closed, { what: 'the socket to close' });
      await assert.rejects(connection.listChats(5), /closed because turn\/interrupt was not acknowledged/);
      const health = await connection.health();
      assert.equal(health.healthy, false);
      assert.match(health.detail ?? '', /turn\/interrupt was not acknowledged/);
      await registry.closeAll();
    } finally {
      await fake.close();
    }
  });

  test('an acknowledged interrupt whose turn never reports completion within 3 s also closes the socket', async () => {
    const fake = await fakeAppServer({ interrupt: 'ack' });
    try {
      const { registry, connection } = await connectTo(fake.url);
      await assert.rejects(
        connection.send('thread-1', 'hi', { timeoutMs: 200 }),
        /did not confirm that the interrupted turn stopped/,
      );
      await until(() => fake.closed, { what: 'the socket to close' });
      await assert.rejects(connection.readChat('thread-1'), /did not report completion/);
      await registry.closeAll();
    } finally {
      await fake.close();
    }
  });

  test('a turn/start with no answer cannot be correlated: the socket is closed and the send never retried', async () => {
    const fake = await fakeAppServer({ turnStart: 'silent' });
    try {
      const { registry, connection } = await connectTo(fake.url);
      await assert.rejects(
        connection.send('thread-1', 'hi', { timeoutMs: 300 }),
        /connection was closed so no turn can overlap/,
      );
      assert.equal(fake.received.filter((m) => m.method === 'turn/start').length, 1);
      await until(() => fake.closed, { what: 'the socket to close' });
      await registry.closeAll();
    } finally {
      await fake.close();
    }
  });

  test('approvals and elicitations are declined, other requests get method-not-supported, token refresh is left alone', async () => {
    const fake = await fakeAppServer({});
    try {
      const { registry } = await connectTo(fake.url);
      fake.request(0, 'account/chatgptAuthTokens/refresh', { reason: 'unauthorized' });
      fake.request(1, 'item/commandExecution/requestApproval', { threadId: 't', turnId: 'u', itemId: 'i' });
      fake.request(2, 'mcpServer/elicitation/request', { threadId: 't' });
      fake.request(3, 'item/tool/call', { threadId: 't' });
      // No event exists for "the fake received a frame"; a bounded poll on the recorded frames is the observable condition.
      await until(() => fake.received.filter((m) => m.method === undefined).length >= 3, { what: 'three answers' });
      const answers = new Map(fake.received.filter((m) => m.method === undefined).map((m) => [m.id, m]));
      assert.deepEqual(answers.get(1)?.result, { decision: 'decline' });
      assert.deepEqual(answers.get(2)?.result, { action: 'decline', content: null, _meta: null });
      assert.equal(answers.get(3)?.error?.code, -32601);
      assert.equal(answers.has(0), false, 'account/chatgptAuthTokens/refresh is never answered');
      await registry.closeAll();
    } finally {
      await fake.close();
    }
  });

  test('every request of the shared decline table gets the same declining answer as the agent adapter gives', async () => {
    const fake = await fakeAppServer({});
    try {
      const { registry } = await connectTo(fake.url);
      DECLINED_CODEX_METHODS.forEach((method, id) => {
        fake.request(id, method, { threadId: 't', turnId: 'u', itemId: `i${id}` });
      });
      const n = DECLINED_CODEX_METHODS.length;
      await until(() => fake.received.filter((m) => m.method === undefined).length >= n, { what: `${n} answers` });
      const answers = new Map(fake.received.filter((m) => m.method === undefined).map((m) => [m.id, m]));
      DECLINED_CODEX_METHODS.forEach((method, id) => {
        assert.deepEqual(answers.get(id)?.result, codexDecline(method)!.answer, method);
      });
      await registry.closeAll();
    } finally {
      await fake.close();
    }
  });
});
