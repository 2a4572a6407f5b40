// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of the attach registries. Connections here are in-memory fakes (this file says so): the real OpenCode and
// Codex servers are exercised in opencode-user-server.test.ts and attach-codex.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allowlistFromEnv,
  approveServerUrl,
  canonicalOrigin,
  parseAllowedServerUrls,
} from '../../../src/faces/attach/allowlist.ts';
import {
  CLAUDE_CODE_REFUSAL,
  ConnectionRegistry,
  MAX_CONNECTIONS,
  validateDirectory,
} from '../../../src/faces/attach/connections.ts';
import {
  DispatchRegistry,
  MAX_DISPATCH_RECORDS,
  SETTLED_DISPATCH_TTL_MS,
} from '../../../src/faces/attach/dispatches.ts';
import type { ConnectRequest, HarnessConnection, SendReply } from '../../../src/faces/attach/harness.ts';

const OC = 'http://127.0.0.1:4096/';
const CX = 'ws://127.0.0.1:4500/';
const PASSWORD = 'planted-oc-password-7f3a';
const TOKEN = 'planted-codex-token-91bd';

class FakeConnection implements HarnessConnection {
  readonly harness;
  closeCalls = 0;
  closeFailures: number;
  closeGate: Promise<void> | undefined;
  constructor(req: ConnectRequest, closeFailures = 0) {
    this.harness = req.harness;
    this.closeFailures = closeFailures;
  }
  async health() {
    return { healthy: true, version: 'fake' };
  }
  async listChats() {
    return [];
  }
  async readChat(chatId: string) {
    return { chatId, title: '', directory: '/', messages: [], truncated: false };
  }
  async send(chatId: string, message: string): Promise<SendReply> {
    return { chatId, reply: `echo ${message}` };
  }
  async close() {
    this.closeCalls++;
    await this.closeGate;
    if (this.closeFailures > 0) {
      this.closeFailures--;
      throw new Error(`socket would not close (password ${PASSWORD})`);
    }
  }
}

function fakeRegistry(opts: { closeFailures?: number; env?: NodeJS.ProcessEnv } = {}) {
  const made: FakeConnection[] = [];
  const requests: ConnectRequest[] = [];
  const connector = async (req: ConnectRequest) => {
    requests.push(req);
    const c = new FakeConnection(req, opts.closeFailures ?? 0);
    made.push(c);
    return c;
  };
  const registry = new ConnectionRegistry({
    allowedServerUrls: [OC, CX],
    env: opts.env ?? { OPENCODE_SERVER_PASSWORD: PASSWORD, CODEX_REMOTE_TOKEN: TOKEN },
    connectors: { opencode: connector, codex: connector },
  });
  return { registry, made, requests };
}

describe('allowlist (AT-3)', () => {
  test('exact origins are canonicalised; paths, queries, fragments and user info are refused', () => {
    assert.equal(canonicalOrigin('http://127.0.0.1:4096'), OC);
    assert.equal(canonicalOrigin('HTTP://LOCALHOST:80/'), 'http://localhost/');
    for (const bad of [
      'http://127.0.0.1:4096/api',
      'http://127.0.0.1:4096/?',
      'http://127.0.0.1:4096/?a=1',
      'http://127.0.0.1:4096/#x',
      'http://u:p@127.0.0.1:4096/',
      'http://u@127.0.0.1:4096/',
      'ftp://127.0.0.1/',
      ' http://127.0.0.1:4096/',
      'not a url',
    ]) {
      assert.throws(() => canonicalOrigin(bad), { name: 'ServerUrlError' }, bad);
    }
  });

  test('both env names are read; BATON_ wins; a bad entry fails loudly', () => {
    assert.deepEqual(allowlistFromEnv({ CROSSHARNESS_ALLOWED_SERVER_URLS: `${OC},${CX}` }), [OC, CX]);
    assert.deepEqual(allowlistFromEnv({ BATON_ALLOWED_SERVER_URLS: CX, CROSSHARNESS_ALLOWED_SERVER_URLS: OC }), [CX]);
    assert.deepEqual(allowlistFromEnv({}), []);
    assert.throws(() => parseAllowedServerUrls('http://127.0.0.1:1/x'), /allowed server URL/);
  });

  test('the scheme must fit the harness and the origin must be listed exactly', () => {
    const allowed = new Set([OC, CX]);
    assert.equal(approveServerUrl('opencode', 'http://127.0.0.1:4096', allowed), OC);
    assert.throws(() => approveServerUrl('opencode', 'http://127.0.0.1:4097/', allowed), /not in the allowlist/);
    assert.throws(() => approveServerUrl('opencode', 'http://localhost:4096/', allowed), /not in the allowlist/);
    assert.throws(() => approveServerUrl('codex', OC, allowed), /ws or wss/);
    assert.throws(() => approveServerUrl('opencode', CX, allowed), /http or https/);
  });

  test('directories must be absolute and normalised', () => {
    assert.equal(validateDirectory('/srv/app'), '/srv/app');
    assert.equal(validateDirectory('C:\\work'), 'C:\\work');
    for (const bad of ['', 'rel/dir', '/srv/../etc', '/srv/app/', '/a\u0000b'])
      assert.throws(() => validateDirectory(bad));
  });
});

describe('ConnectionRegistry (AT-3, AT-4, AT-7, LB-4)', () => {
  test('Claude Code is refused at connect time with the reason', async () => {
    const { registry } = fakeRegistry();
    await assert.rejects(registry.connect('claude-code', OC, '/srv'), (e: Error) => e.message === CLAUDE_CODE_REFUSAL);
  });

  test('one connection per (harness, origin, directory); metadata never carries credentials', async () => {
    const { registry, requests } = fakeRegistry();
    const a = await registry.connect('opencode', OC, '/srv/a');
    await assert.rejects(registry.connect('opencode', 'http://127.0.0.1:4096', '/srv/a'), /already exists/);
    const b = await registry.connect('opencode', OC, '/srv/b');
    const c = await registry.connect('codex', CX, '/srv/a');
    assert.notEqual(a.connectionId, b.connectionId);
    assert.match(a.connectionId, /^c-/);
    assert.deepEqual(Object.keys(a).sort(), [
      'connectedAt',
      'connectionId',
      'directory',
      'harness',
      'serverUrl',
      'state',
    ]);
    const listed = JSON.stringify(registry.list());
    assert.ok(!listed.includes(PASSWORD) && !listed.includes(TOKEN));
    assert.equal(registry.list().length, 3);
    assert.deepEqual(requests[0]!.credentials, { openCode: { username: 'opencode', password: PASSWORD } });
    assert.deepEqual(requests[2]!.credentials, { codexToken: TOKEN });
    assert.equal(c.harness, 'codex');
  });

  test('OpenCode needs OPENCODE_SERVER_PASSWORD; the username defaults to opencode', async () => {
    const none = fakeRegistry({ env: {} });
    await assert.rejects(none.registry.connect('opencode', OC, '/srv'), /OPENCODE_SERVER_PASSWORD is not set/);
    const named = fakeRegistry({ env: { OPENCODE_SERVER_PASSWORD: PASSWORD, OPENCODE_SERVER_USERNAME: 'alice' } });
    await named.registry.connect('opencode', OC, '/srv');
    assert.deepEqual(named.requests[0]!.credentials.openCode, { username: 'alice', password: PASSWORD });
  });

  test('injected credentials are bound to their exact serverUrl and plain http only on loopback', async () => {
    const other = 'http://127.0.0.1:4097/';
    const requests: ConnectRequest[] = [];
    const registry = new ConnectionRegistry({
      allowedServerUrls: [OC, other],
      openCodeCredentials: { serverUrl: OC, password: 'injected-secret-55' },
      env: {},
      connectors: {
        opencode: async (req) => {
          requests.push(req);
          return new FakeConnection(req);
        },
      },
    });
    await registry.connect('opencode', OC, '/srv');
    assert.deepEqual(requests[0]!.credentials.openCode, { username: 'opencode', password: 'injected-secret-55' });
    await assert.rejects(registry.connect('opencode', other, '/srv'), /OPENCODE_SERVER_PASSWORD is not set/);
    assert.ok(!JSON.stringify(registry.list()).includes('injected-secret-55'));
    assert.throws(
      () =>
        new ConnectionRegistry({
          allowedServerUrls: [],
          openCodeCredentials: { serverUrl: 'http://example.com/', password: 'x-secret-1' },
        }),
      /loopback/,
    );
    assert.doesNotThrow(
      () =>
        new ConnectionRegistry({
          allowedServerUrls: [],
          openCodeCredentials: { serverUrl: 'https://example.com/', password: 'x-secret-1' },
        }),
    );
  });

  test(`at most ${MAX_CONNECTIONS} connections`, async () => {
    const { registry } = fakeRegistry();
    for (let i = 0; i < MAX_CONNECTIONS; i++) await registry.connect('opencode', OC, `/srv/${i}`);
    await assert.rejects(registry.connect('opencode', OC, '/srv/extra'), /at most 32 connections/);
    await registry.disconnect(registry.list()[0]!.connectionId);
    await registry.connect('opencode', OC, '/srv/extra');
  });

  test('a failed close keeps the id, fails closed and is retryable; overlapping closes share one attempt', async () => {
    const { registry, made } = fakeRegistry({ closeFailures: 1 });
    const { connectionId } = await registry.connect('opencode', OC, '/srv');
    let open!: () => void;
    made[0]!.closeGate = new Promise((r) => {
      open = r;
    });
    const first = registry.disconnect(connectionId);
    const second = registry.disconnect(connectionId);
    assert.equal(registry.info(connectionId).state, 'closing');
    assert.throws(() => registry.get(connectionId), /closing/);
    open();
    const [r1, r2] = await Promise.allSettled([first, second]);
    assert.equal(r1.status, 'rejected');
    assert.equal(r2.status, 'rejected');
    assert.equal((r1 as PromiseRejectedResult).reason, (r2 as PromiseRejectedResult).reason);
    assert.equal(made[0]!.closeCalls, 1, 'overlapping closes share one attempt');
    assert.ok(!(r1 as PromiseRejectedResult).reason.message.includes(PASSWORD), 'close errors are redacted');
    assert.equal(registry.info(connectionId).state, 'close_failed');
    assert.throws(() => registry.get(connectionId), /retry/);
    await registry.disconnect(connectionId);
    assert.equal(made[0]!.closeCalls, 2);
    assert.deepEqual(registry.list(), []);
    await assert.rejects(registry.disconnect(connectionId), /unknown connectionId/);
  });

  test('closeAll closes the registry, keeps failures for retry, rethrows one failure and aggregates several', async () => {
    const one = fakeRegistry({ closeFailures: 1 });
    await one.registry.connect('opencode', OC, '/a');
    await one.registry.connect('opencode', OC, '/b');
    one.made[1]!.closeFailures = 0;
    await assert.rejects(
      one.registry.closeAll(),
      (e: Error) => !(e instanceof AggregateError) && /failed/.test(e.message),
    );
    assert.equal(one.registry.list().length, 1);
    await assert.rejects(one.registry.connect('opencode', OC, '/c'), /registry is closed/);
    await one.registry.closeAll();
    assert.deepEqual(one.registry.list(), []);

    const many = fakeRegistry({ closeFailures: 1 });
    await many.registry.connect('opencode', OC, '/a');
    await many.registry.connect('codex', CX, '/a');
    await assert.rejects(many.registry.closeAll(), (e: Error) => e instanceof AggregateError && e.errors.length === 2);
    assert.equal(many.registry.list().length, 2);
    await many.registry.closeAll();
    assert.equal(many.registry.list().length, 0);
  });

  test('a connect finishing after closeAll is closed and refused', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let made: FakeConnection | undefined;
    const registry = new ConnectionRegistry({
      allowedServerUrls: [OC],
      env: { OPENCODE_SERVER_PASSWORD: PASSWORD },
      connectors: {
        opencode: async (req) => {
          await gate;
          made = new FakeConnection(req);
          return made;
        },
      },
    });
    const pending = registry.connect('opencode', OC, '/srv');
    await registry.closeAll();
    release();
    await assert.rejects(pending, /closed while connecting/);
    assert.equal(made!.closeCalls, 1);
  });
});

describe('DispatchRegistry (AT-6)', () => {
  const target = { connectionId: 'c-1', harness: 'opencode' as const, chatId: 'ses_secret_chat' };

  function deferred() {
    let resolve!: (r: SendReply) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<SendReply>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  test('summaries are oldest first with exactly the contract fields, never message, reply, error or chat id', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const reg = new DispatchRegistry({ now: () => now });
    const a = deferred();
    const b = deferred();
    const sa = reg.start(target, () => a.promise);
    now += 1000;
    const sb = reg.start({ ...target, connectionId: 'c-2' }, () => b.promise);
    assert.match(sa.dispatchId, /^d-/);
    a.resolve({ chatId: target.chatId, reply: 'the reply text' });
    b.reject(new Error('the error text'));
    await reg.check(sb.dispatchId, { waitMs: 5_000 });
    const list = reg.list();
    assert.deepEqual(
      list.map((s) => s.dispatchId),
      [sa.dispatchId, sb.dispatchId],
    );
    assert.deepEqual(Object.keys(list[0]!).sort(), [
      'completedAt',
      'connectionId',
      'dispatchId',
      'expiresAt',
      'harness',
      'startedAt',
      'status',
    ]);
    assert.equal(list[0]!.status, 'completed');
    assert.equal(list[1]!.status, 'failed');
    assert.equal(list[1]!.expiresAt, new Date(now + SETTLED_DISPATCH_TTL_MS).toISOString());
    const text = JSON.stringify(list);
    for (const hidden of ['the reply text', 'the error text', 'ses_secret_chat']) assert.ok(!text.includes(hidden));
    list[0]!.status = 'working';
    assert.equal(reg.list()[0]!.status, 'completed', 'summaries are snapshots');
    const checked = await reg.check(sa.dispatchId, { connectionId: 'c-1' });
    assert.equal(checked.reply?.reply, 'the reply text');
    await assert.rejects(reg.check(sa.dispatchId, { connectionId: 'c-2' }), /unknown dispatchId/);
  });

  test('a working summary has no completedAt/expiresAt; check waits for settlement and a cancelled wait stops only itself', async () => {
    const reg = new DispatchRegistry();
    const d = deferred();
    const s = reg.start(target, () => d.promise);
    assert.deepEqual(Object.keys(reg.list()[0]!).sort(), [
      'connectionId',
      'dispatchId',
      'harness',
      'startedAt',
      'status',
    ]);
    const ac = new AbortController();
    const cancelled = reg.check(s.dispatchId, { waitMs: 60_000, signal: ac.signal });
    ac.abort();
    assert.equal((await cancelled).status, 'working');
    const waiting = reg.check(s.dispatchId, { waitMs: 60_000 });
    d.resolve({ chatId: target.chatId, reply: 'done' });
    assert.equal((await waiting).status, 'completed');
  });

  test('all 100 working → a new send is refused before delivery; settled records are evicted oldest-first for new work', async () => {
    let now = 5_000;
    const reg = new DispatchRegistry({ now: () => now });
    const pending = Array.from({ length: MAX_DISPATCH_RECORDS }, () => deferred());
    const ids = pending.map((p) => reg.start(target, () => p.promise).dispatchId);
    let delivered = false;
    assert.throws(
      () =>
        reg.start(target, async () => {
          delivered = true;
          return { chatId: '', reply: '' };
        }),
      /still working; nothing was sent/,
    );
    assert.equal(delivered, false);
    pending[7]!.resolve({ chatId: '', reply: '7' });
    await reg.check(ids[7]!, { waitMs: 5_000 });
    now += 10;
    pending[3]!.resolve({ chatId: '', reply: '3' });
    await reg.check(ids[3]!, { waitMs: 5_000 });
    const fresh = reg.start(target, () => new Promise<SendReply>(() => {}));
    const listed = reg.list().map((s) => s.dispatchId);
    assert.equal(listed.length, MAX_DISPATCH_RECORDS);
    assert.ok(!listed.includes(ids[7]!), 'the record settled first is evicted');
    assert.ok(listed.includes(ids[3]!));
    assert.ok(listed.includes(fresh.dispatchId));
  });

  test('settled records expire after two hours; dispose lists nothing', async () => {
    let now = 1_000_000;
    const reg = new DispatchRegistry({ now: () => now });
    const s = reg.start(target, async () => ({ chatId: '', reply: 'x' }));
    await reg.check(s.dispatchId, { waitMs: 5_000 });
    now += SETTLED_DISPATCH_TTL_MS - 1;
    assert.equal(reg.list().length, 1);
    now += 1;
    assert.equal(reg.list().length, 0);
    await assert.rejects(reg.check(s.dispatchId), /expired/);
    reg.start(target, () => new Promise<SendReply>(() => {}));
    reg.dispose();
    assert.deepEqual(reg.list(), []);
    assert.throws(() => reg.start(target, async () => ({ chatId: '', reply: '' })), /closed/);
  });
});
