// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Edge paths of the OpenCode hub agent that the real server cannot be made to take: an abort OpenCode never honours
// (the cancel is then reported unacknowledged after the grace) and an event stream that ends mid-turn. These run
// against a FAKE OpenCode server scripted below (this file says so); the real server is used in opencode-agent.ts and opencode-user-server.test.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { until } from '../../support/poll.ts';
import { tempDir } from '../../support/tmp.ts';

const SESSION = 'ses_fake';

async function fakeOpenCode(opts: { endStreamOnPrompt?: boolean }) {
  const streams = new Set<ServerResponse>();
  const seen: string[] = [];
  const send = (event: unknown) => {
    for (const s of streams) s.write(`data: ${JSON.stringify(event)}\n\n`);
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push(`${req.method} ${path}`);
    const json = (v: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    if (path === '/global/health') return json({ healthy: true, version: '0.0.0-fake' });
    if (path === '/event') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ type: 'server.connected', properties: {} })}\n\n`);
      streams.add(res);
      res.on('close', () => streams.delete(res));
      return;
    }
    if (req.method === 'POST' && path === '/session') return json({ id: SESSION, directory: '/srv' });
    if (path === `/session/${SESSION}/prompt_async`) {
      res.writeHead(204);
      res.end();
      send({ type: 'session.status', properties: { sessionID: SESSION, status: { type: 'busy' } } });
      if (opts.endStreamOnPrompt) for (const s of streams) s.end();
      return;
    }
    if (path === `/session/${SESSION}/abort`) return json(true); // …and nothing else ever happens
    if (path === `/session/${SESSION}/message`) return json([]);
    res.writeHead(404);
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function run(t: Parameters<typeof tempDir>[0], opts: { endStreamOnPrompt?: boolean }, abortAfterBusy: boolean) {
  const fake = await fakeOpenCode(opts);
  t.after(() => fake.close());
  const agent = createAgent(
    'fake',
    { kind: 'opencode', serverUrl: fake.url, cancelGraceMs: 200 },
    { stateDir: tempDir(t), logger: silentLogger },
  );
  const session = await agent.openSession({ cwd: '/srv', sandbox: 'read-only', signal: new AbortController().signal });
  const cancel = new AbortController();
  const events: AgentEvent[] = [];
  for await (const e of session.turn('hello', { signal: cancel.signal })) {
    events.push(e);
    if (abortAfterBusy && e.kind === 'status') cancel.abort();
  }
  await session.close();
  return { events, seen: fake.seen };
}

test('an abort OpenCode never honours ends the turn after the grace as an unacknowledged cancel', async (t) => {
  const { events, seen } = await run(t, {}, true);
  assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: false });
  // The turn ends at the grace whether or not the abort request has been read yet (at a load of 30 it had not, 200 ms
  // on); that it reaches OpenCode is what is asserted, so it is awaited under a deadline.
  await until(() => seen.includes(`POST /session/${SESSION}/abort`), { what: 'the abort request to reach OpenCode' });
});

test('an event stream that ends mid-turn fails the turn', async (t) => {
  const { events } = await run(t, { endStreamOnPrompt: true }, false);
  const end = events.at(-1) as Extract<AgentEvent, { kind: 'end' }>;
  assert.equal(end.outcome, 'failed');
  assert.match(end.error ?? '', /event stream ended/);
});

test('a model that is not "provider/model" is refused before anything starts', async (t) => {
  const fake = await fakeOpenCode({});
  t.after(() => fake.close());
  const agent = createAgent(
    'fake',
    { kind: 'opencode', serverUrl: fake.url },
    { stateDir: tempDir(t), logger: silentLogger },
  );
  await assert.rejects(
    agent.openSession({ cwd: '/srv', sandbox: 'read-only', model: 'gpt-5', signal: new AbortController().signal }),
    /provider\/model/,
  );
  assert.deepEqual(fake.seen, []);
});
