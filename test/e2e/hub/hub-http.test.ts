// The hub's HTTP surface with the real daemon and the official MCP SDK client: bearer auth per caller endpoint, caller
// isolation, Host/Origin checks, strict schemas (-32602), authorised roots, idempotency, the state-dir lease, the CLI
// commands around the daemon, and a grep of everything the run wrote for the planted secrets.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { pickFreeLoopbackPort } from '../../../src/lib/net.ts';
import { reply } from '../../mock-models/responses.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { startResponsesMock } from '../../support/codex.ts';
import {
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  startHub,
  TEST_CALLERS,
  writeHubConfig,
} from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);
// Without the devDependency agents on PATH, so `init` configures none and the preflight stays instant.
const PATH_WITHOUT_AGENTS = (process.env.PATH ?? '')
  .split(':')
  .filter((p) => !p.includes('node_modules'))
  .join(':');
const baton = (args: string[], cwd: string) =>
  run(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), ...args], {
    cwd,
    env: isolatedEnv(cwd, { PATH: PATH_WITHOUT_AGENTS }),
  });

function raw(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string }) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'POST', headers: opts.headers }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

test('hub HTTP: auth, isolation, schemas, roots, idempotency, lease, CLI, and no secret anywhere', async (t) => {
  const mock = await startResponsesMock(t, reply('done'));
  const dir = tempDir(t, 'baton-hub-http-');
  const work = join(dir, 'work');
  const outside = join(dir, 'outside');
  mkdirSync(work);
  mkdirSync(outside);
  symlinkSync(outside, join(work, 'escape'));
  const setup = {
    dir,
    roots: [work],
    agents: {
      codex: {
        kind: 'codex',
        command: [process.execPath, bins.codex()],
        model: 'mock-model',
        modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
        userCodexHome: join(dir, 'no-user-login'),
      },
    },
  };
  const hub = await startHub(t, setup);
  const seen: string[] = [];
  const mcpUrl = `${hub.url}/mcp/alice`;

  await t.test('missing, wrong and cross-caller tokens get 401; unknown callers look the same', async () => {
    for (const headers of [
      JSON_HEADERS,
      { ...JSON_HEADERS, authorization: 'Bearer wrong-token' },
      { ...JSON_HEADERS, authorization: `Bearer ${TEST_CALLERS.bob}` },
      { ...JSON_HEADERS, authorization: `Basic ${TEST_CALLERS.alice}` },
    ]) {
      const res = await raw(mcpUrl, { headers, body: INIT });
      assert.equal(res.status, 401);
      seen.push(res.body);
    }
    const unknown = await raw(`${hub.url}/mcp/nobody`, {
      headers: { ...JSON_HEADERS, authorization: `Bearer ${TEST_CALLERS.alice}` },
      body: INIT,
    });
    assert.equal(unknown.status, 401);
  });

  await t.test('DNS rebinding: a foreign Host or Origin is refused', async () => {
    const auth = { ...JSON_HEADERS, authorization: `Bearer ${TEST_CALLERS.alice}` };
    assert.equal((await raw(mcpUrl, { headers: { ...auth, host: 'evil.example:80' }, body: INIT })).status, 403);
    assert.equal((await raw(mcpUrl, { headers: { ...auth, origin: 'http://evil.example' }, body: INIT })).status, 403);
    assert.equal((await raw(mcpUrl, { headers: auth, body: INIT })).status, 200);
  });

  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  await t.test('schema violations are JSON-RPC -32602 and change nothing', async () => {
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      ['agent_run', { prompt: 'x', cwd: work, idempotencyKey: 'k', sneaky: true }, /unknown argument.*sneaky/],
      ['agent_run', { prompt: 'x'.repeat(262_145), cwd: work, idempotencyKey: 'k' }, /prompt/],
      ['agent_run', { prompt: 'x', cwd: work }, /idempotencyKey/],
      ['agent_wait', { taskId: 't', timeoutMs: 25_001 }, /timeoutMs/],
      ['agent_status', { taskId: 't', limit: 0 }, /limit/],
      ['agent_run', { prompt: 'x', cwd: work, idempotencyKey: 'k', isolation: 'container' }, /isolation/],
    ];
    for (const [name, args, why] of bad) {
      await assert.rejects(
        alice.callTool({ name, arguments: args }),
        (err: McpError) => err.code === -32602 && why.test(err.message),
        `${name} ${JSON.stringify(args).slice(0, 80)}`,
      );
    }
    assert.deepEqual((await call<{ tasks: unknown[] }>(alice, 'agent_list', {})).tasks, []);
  });

  await t.test('cwd outside the roots (plain, symlink, ..) is refused with the reason; nothing stored', async () => {
    for (const cwd of [outside, join(work, 'escape'), join(work, '..', 'outside'), 'relative']) {
      await assert.rejects(
        call(alice, 'agent_run', { prompt: 'x', cwd, idempotencyKey: `k-${cwd}` }),
        /outside the authorised roots|absolute/,
      );
    }
    assert.deepEqual((await call<{ tasks: unknown[] }>(alice, 'agent_list', {})).tasks, []);
  });

  let taskId = '';
  await t.test('idempotency over MCP; another caller cannot see or touch the task', async () => {
    const args = { prompt: 'hello', cwd: work, idempotencyKey: 'same-key' };
    const a = await call<{ taskId: string }>(alice, 'agent_run', args);
    const b = await call<{ taskId: string }>(alice, 'agent_run', args);
    assert.equal(a.taskId, b.taskId);
    await assert.rejects(
      call(alice, 'agent_run', { ...args, prompt: 'other' }),
      /already used with a different request/,
    );
    taskId = a.taskId;
    assert.equal((await followToEnd(alice, taskId)).state, 'succeeded');
    assert.equal(mock.turns.length, 1, 'the replay did not start a second run');
    for (const [name, extra] of [
      ['agent_status', {}],
      ['agent_result', {}],
      ['agent_cancel', {}],
      ['agent_continue', { prompt: 'x', idempotencyKey: 'b1' }],
    ] as const) {
      await assert.rejects(call(bob, name, { taskId, ...extra }), /no task/);
    }
    assert.deepEqual((await call<{ tasks: unknown[] }>(bob, 'agent_list', {})).tasks, []);
    // bob's default reach is every agent but "bob": codex.
    await assert.rejects(
      call(bob, 'agent_run', { agent: 'claude', prompt: 'x', cwd: work, idempotencyKey: 'b2' }),
      /not reachable/,
    );
  });

  await t.test('a second daemon on the same state dir fails fast with a clear message', async () => {
    const res = await baton(['--config', hub.configPath, 'serve', '--port', '0'], dir).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    assert.notEqual(res.code, 0);
    // Said from the record of where the first one listens, before the OS-held lease would refuse it.
    assert.match(res.stderr, /a hub for this config already runs on http:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/);
  });

  await t.test('health and stop over the authenticated control endpoint', async () => {
    assert.equal((await raw(`${hub.url}/control/health`, { method: 'GET' })).status, 401);
    // The CLI reads the port from config; point a copy at the running port.
    const health = await raw(`${hub.url}/control/health`, {
      method: 'GET',
      headers: { authorization: `Bearer ${CONTROL_TOKEN}` },
    });
    seen.push(health.body);
    const h = JSON.parse(health.body);
    assert.equal(h.ok, true);
    assert.equal(typeof h.uptimeSeconds, 'number');
    assert.deepEqual(
      h.agents.map((a: { name: string }) => a.name),
      ['codex'],
    );
    assert.equal(typeof h.queueDepth, 'number');
  });

  await hub.stop();

  await t.test('SE-1/SE-2: no planted secret in outputs, logs or the store; private modes', () => {
    const secrets = [...Object.values(TEST_CALLERS), CONTROL_TOKEN];
    const db = new DatabaseSync(join(hub.stateDir, 'baton.db'), { readOnly: true });
    const dump = JSON.stringify(
      (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((tb) =>
        db.prepare(`SELECT * FROM "${tb.name}"`).all(),
      ),
    );
    db.close();
    const log = readFileSync(join(hub.stateDir, 'baton.log'), 'utf8');
    const haystacks = { dump, log, output: hub.output(), responses: seen.join('\n') };
    for (const [where, text] of Object.entries(haystacks)) {
      for (const s of secrets) assert.equal(text.includes(s), false, `secret found in ${where}`);
    }
    for (const name of readdirSync(hub.stateDir)) {
      const st = statSync(join(hub.stateDir, name));
      assert.equal(st.mode & 0o777, st.isDirectory() ? 0o700 : 0o600, name);
    }
  });
});

test('CLI with an explicit old-style .baton/config.json: init never rewrites tokens; examples writes a private tokens.env and snippets and prints no token', async (t) => {
  const dir = tempDir(t, 'baton-cli-');
  const root = join(dir, 'proj');
  mkdirSync(root);
  const cfg = join(dir, '.baton', 'config.json');
  const port = await pickFreeLoopbackPort();
  const first = await baton(['--config', cfg, 'init', '--root', root, '--port', String(port)], dir);
  assert.match(first.stdout, /created .*config\.json with root /);
  const original = readFileSync(cfg, 'utf8');
  assert.equal(statSync(cfg).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, '.baton')).mode & 0o777, 0o700);
  const second = await baton(['--config', cfg, 'init', '--root', root], dir);
  assert.match(second.stdout, /is already a root of .*; nothing changed/);
  assert.equal(readFileSync(cfg, 'utf8'), original);
  // The quick-start layout of old (config inside the root) is refused: an agent could read every token there.
  const inside = await baton(['--config', cfg, 'init', '--root', dir], dir).catch(
    (e: { code: number; stderr: string }) => e,
  );
  assert.equal((inside as { code: number }).code, 1);
  assert.match((inside as { stderr: string }).stderr, /contains baton's own files/);
  assert.equal(readFileSync(cfg, 'utf8'), original);

  const ex = await baton(['--config', cfg, 'examples'], dir);
  const config = JSON.parse(original);
  const tokens = readFileSync(join(dir, '.baton', 'connections', 'tokens.env'), 'utf8');
  assert.equal(statSync(join(dir, '.baton', 'connections', 'tokens.env')).mode & 0o777, 0o600);
  for (const [caller, { token }] of Object.entries(config.callers) as Array<[string, { token: string }]>) {
    assert.ok(tokens.includes(`export BATON_TOKEN_${caller.toUpperCase().replace(/-/g, '_')}=${token}\n`));
    assert.equal(ex.stdout.includes(token), false, 'examples prints no token');
    assert.equal(first.stdout.includes(token), false, 'init prints no token');
  }
  assert.deepEqual(Object.keys(config.callers).sort(), ['claude', 'codex', 'dsh', 'gemini', 'opencode']);
  assert.equal(Buffer.from(config.callers.claude.token, 'base64url').length, 32);
  const claudeSnippet = JSON.parse(readFileSync(join(dir, '.baton', 'connections', 'claude.mcp.json'), 'utf8'));
  assert.equal(claudeSnippet.mcpServers.baton.url, `http://127.0.0.1:${port}/mcp/claude`);
  assert.match(
    readFileSync(join(dir, '.baton', 'connections', 'codex.toml'), 'utf8'),
    /bearer_token_env_var = "BATON_TOKEN_CODEX"/,
  );

  // start → health → stop through the authenticated control endpoint (never a PID file).
  t.after(() => baton(['--config', cfg, 'stop'], dir).catch(() => {}));
  assert.match(
    (await baton(['--config', cfg, 'start'], dir)).stdout,
    /started on http:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/,
  );
  const health = JSON.parse((await baton(['--config', cfg, 'health'], dir)).stdout);
  assert.equal(health.ok, true);
  assert.equal(health.queueDepth, 0);
  assert.match((await baton(['--config', cfg, 'stop'], dir)).stdout, /stopped/);
  await assert.rejects(baton(['--config', cfg, 'health'], dir), /not answering/);

  const dry = await baton(['--config', cfg, 'service', 'install', '--dry-run'], dir);
  assert.match(dry.stdout, /baton\.service|local\.baton\.hub/);
  assert.match(dry.stdout, /serve/);

  // A config with an unknown key is refused with the key's path.
  const badPath = writeHubConfig({ dir: join(dir, 'bad'), roots: [root], agents: {} });
  const bad = JSON.parse(readFileSync(badPath, 'utf8'));
  bad.listen.hots = 'x';
  const { writeFileSync } = await import('node:fs');
  writeFileSync(badPath, JSON.stringify(bad));
  const refused = await baton(['--config', badPath, 'doctor'], dir).catch((e: { stderr: string }) => e);
  assert.match(refused.stderr, /listen: unknown key\(s\) hots/);
});
