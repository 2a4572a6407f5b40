// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The hub router's answer to a failure no handler answered (faces/hub/routes.ts): through the one error model
// (faces/errors.ts), so a refusal keeps its status and redacted message, a full disk reads 507 with the store's
// message, anything unexpected is a bare 500 `internal` whose redacted text only the log has, and a failure after the
// headers went out ends the response. The handlers behind the router are stand-ins that fail on purpose; the hub's
// own handlers are tested through a real hub in the other files here.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { EngineError } from '../../../src/core/engine.ts';
import type { ControlApi } from '../../../src/faces/hub/control.ts';
import type { McpEndpoint } from '../../../src/faces/hub/mcp-endpoint.ts';
import { HubRouter } from '../../../src/faces/hub/routes.ts';
import type { Dashboard } from '../../../src/faces/hub/ui/dashboard.ts';
import { silentLogger } from '../../../src/lib/log.ts';

const SECRET = 'sk-proj-RouteFailure0123456789abcdefXYZ';

test('a failure no handler answered is answered through the error model, redacted, and logged redacted', async () => {
  let failure: unknown;
  const logged: Record<string, unknown>[] = [];
  const server = createServer((req, res) => void router.handle(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const router = new HubRouter({
    logger: { ...silentLogger, error: (msg, fields) => logged.push({ msg, ...fields }) },
    listenHost: '127.0.0.1',
    port: () => port,
    callerTokens: new Map(),
    control: {
      handle: async () => {
        throw failure;
      },
    } as unknown as ControlApi,
    dashboard: {
      handle: async (_req: unknown, res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<p>half a page');
        throw new Error(`late failure ${SECRET}`);
      },
    } as unknown as Dashboard,
    endpoint: {} as McpEndpoint,
  });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
  };
  try {
    failure = new Error(`unexpected ${SECRET}`);
    const internal = await get('/control/tasks');
    assert.equal(internal.status, 500);
    assert.deepEqual(JSON.parse(internal.body), { error: 'internal error', code: 'internal' });
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.msg, 'request failed');
    assert.match(String(logged[0]!.error), /^unexpected /);
    assert.ok(!JSON.stringify(logged).includes(SECRET), 'the log has the error redacted');

    failure = new EngineError('not_found', `no task t-1 (${SECRET})`);
    const refused = await get('/control/tasks');
    assert.equal(refused.status, 404);
    const refusal = JSON.parse(refused.body) as { error: string; code: string };
    assert.equal(refusal.code, 'not_found');
    assert.match(refusal.error, /^no task t-1 /);
    assert.ok(!refused.body.includes(SECRET), 'the answer is redacted');

    failure = Object.assign(new Error('write failed'), { code: 'ENOSPC' });
    const full = await get('/control/tasks');
    assert.equal(full.status, 507);
    assert.equal((JSON.parse(full.body) as { code: string }).code, 'disk_full');
    assert.match(full.body, /disk full: nothing was changed/);

    // Headers already sent: the response ends as it stands, and the failure is logged.
    const late = await get('/ui');
    assert.equal(late.status, 200);
    assert.equal(late.body, '<p>half a page');
    assert.equal(logged.length, 4);
    assert.ok(!JSON.stringify(logged).includes(SECRET));
  } finally {
    server.close();
  }
});
