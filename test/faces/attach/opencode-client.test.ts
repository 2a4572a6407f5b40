// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The OpenCode HTTP client's own rules against a scripted local HTTP server (a FAKE OpenCode, this file says so):
// redirects never followed, every request bounded, credentials never in an error. The real server is exercised in
// opencode-user-server.test.ts and opencode-agent.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { OpenCodeClient } from '../../../src/agents/opencode/client.ts';
import { ConnectionRegistry } from '../../../src/faces/attach/connections.ts';

const PASSWORD = 'planted-opencode-password-5e6f';

async function fakeServer(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('redirects are refused, not followed', async (t) => {
  const fake = await fakeServer((req, res) => {
    if (req.url === '/global/health') {
      res.writeHead(302, { location: '/elsewhere' });
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"healthy":true,"version":"x"}');
    }
  });
  t.after(() => fake.close());
  const registry = new ConnectionRegistry({
    allowedServerUrls: [fake.url],
    env: { OPENCODE_SERVER_PASSWORD: PASSWORD },
  });
  await assert.rejects(registry.connect('opencode', fake.url, '/srv'), /redirects are never followed/);
  assert.deepEqual(fake.seen, ['GET /global/health']);
});

test('a server without the 1.x routes (as OpenCode 2 moved them under /api) is refused at connect in one line naming the tested range', async (t) => {
  const fake = await fakeServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not Found');
  });
  t.after(() => fake.close());
  const registry = new ConnectionRegistry({
    allowedServerUrls: [fake.url],
    env: { OPENCODE_SERVER_PASSWORD: PASSWORD },
  });
  await assert.rejects(registry.connect('opencode', fake.url, '/srv'), (err: Error) => {
    assert.match(
      err.message,
      /answered 404 on \/global\/health, which every OpenCode baton supports serves \(2\.0\.0 and later moved it\): baton needs OpenCode 1\.18\.33 – 1\.18\.x; install a supported release \(npm i -g opencode-ai@1\)$/,
    );
    assert.equal(err.message.split('\n').length, 1);
    return true;
  });
  assert.deepEqual(fake.seen, ['GET /global/health']);
  assert.equal(registry.list().length, 0, 'nothing was registered');
});

test('an error body that echoes the credentials is redacted', async (t) => {
  const fake = await fakeServer((req, res) => {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`boom: got ${req.headers.authorization} for password ${PASSWORD}`);
  });
  t.after(() => fake.close());
  const client = new OpenCodeClient({ baseUrl: fake.url, password: PASSWORD });
  await assert.rejects(client.listSessions({ directory: '/srv' }), (err: Error) => {
    const basic = Buffer.from(`opencode:${PASSWORD}`).toString('base64');
    assert.match(err.message, /HTTP 500/);
    assert.ok(!err.message.includes(PASSWORD) && !err.message.includes(basic), err.message);
    return true;
  });
});

test('every request is bounded by its timeout', async (t) => {
  const fake = await fakeServer(() => {
    // never answers
  });
  t.after(() => fake.close());
  const client = new OpenCodeClient({ baseUrl: fake.url, password: PASSWORD, requestTimeoutMs: 200 });
  await assert.rejects(client.health(), (err: Error & { kind?: string }) => err.kind === 'timeout');
  const ac = new AbortController();
  const pending = client.getSession('ses_1', {}, { signal: ac.signal, timeoutMs: 60_000 });
  ac.abort();
  await assert.rejects(pending, (err: Error & { kind?: string }) => err.kind === 'aborted');
});
