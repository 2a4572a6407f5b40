// The hub on MCP SDK v2: one caller endpoint serves 2026-07-28 stateless requests and 2025-era sessions.
// The official SDK v1 and v2 clients each run the whole tool contract against a scripted ACP agent; auth and the
// Host/Origin checks hold in both eras; a 2025-era session survives a hub restart; a flood of initialize is bounded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Agent, type IncomingMessage, request } from 'node:http';
import { test } from 'node:test';
import { connectCaller, HUB_TOOL_NAMES, type RunningHub, startHub, TEST_CALLERS } from '../../support/hub.ts';
import { assertToolContract, connectV2, v1Caller, v2Caller } from '../../support/mcp-v2.ts';
import { until } from '../../support/poll.ts';
import { portForLater } from '../../support/ports.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const MODERN = '2026-07-28';

/** A 2026-07-28 request as a client sends it: envelope in `_meta` and the matching standard headers. */
function modernRequest(method: string, params: Record<string, unknown> = {}, id = 1) {
  return {
    headers: { 'mcp-protocol-version': MODERN, 'mcp-method': method },
    body: {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
        },
      },
    },
  };
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

/**
 * The file's raw requests share one keep-alive pool: the flood below sends 2,000 of them, and node:http costs the test
 * process about a third of the CPU fetch does per request (fetch here cost ~1 CPU s more over the flood).
 */
const pool = new Agent({ keepAlive: true });

async function post(
  hub: Pick<RunningHub, 'url'>,
  caller: string,
  body: unknown,
  headers: Record<string, string> = {},
  method = 'POST',
) {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(new URL(`${hub.url}/mcp/${caller}`), {
      method,
      agent: pool,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${TEST_CALLERS[caller as keyof typeof TEST_CALLERS]}`,
        ...headers,
      },
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(method === 'POST' ? JSON.stringify(body) : undefined);
  });
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += chunk;
  // A POST may be answered as SSE: the JSON-RPC message is the data of its one event.
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(data);
  } catch {}
  const header = (name: string) => {
    const value = res.headers[name];
    return typeof value === 'string' ? value : null;
  };
  return { status: res.statusCode ?? 0, header, text, json };
}

test('hub on SDK v2: both eras, SDK v1 and v2 clients, the whole tool contract, auth and Host/Origin', async (t) => {
  const dir = tempDir(t, 'baton-hub-eras-');
  const { work, entry } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: entry } });

  await t.test('SDK v1 client (2025 session): the whole tool contract', async () => {
    await assertToolContract(v1Caller(await connectCaller(t, hub, 'alice')), work, 'v1');
  });
  await t.test('SDK v2 client, 2025 era: the whole tool contract', async () => {
    await assertToolContract(v2Caller(await connectV2(t, hub, 'alice', 'legacy')), work, 'v2-legacy');
  });
  await t.test('SDK v2 client, 2026-07-28 (stateless): the whole tool contract', async () => {
    await assertToolContract(v2Caller(await connectV2(t, hub, 'alice', 'modern')), work, 'v2-modern');
  });

  await t.test('server/discover is answered at 2026-07-28, without a session', async () => {
    const { headers, body } = modernRequest('server/discover');
    const res = await post(hub, 'alice', body, headers);
    assert.equal(res.status, 200, res.text);
    const result = res.json?.result as { supportedVersions: string[]; capabilities: Record<string, unknown> };
    assert.ok(result.supportedVersions.includes(MODERN), res.text);
    assert.ok(result.capabilities.tools, 'tools are declared');
    assert.equal(res.header('mcp-session-id'), null);
    const list = await post(hub, 'alice', modernRequest('tools/list').body, modernRequest('tools/list').headers);
    const names = ((list.json?.result ?? { tools: [] }) as { tools: Array<{ name: string }> }).tools.map((x) => x.name);
    assert.deepEqual(names.sort(), HUB_TOOL_NAMES);
  });

  await t.test('subscriptions/listen is acknowledged; the hub has no list changes to subscribe to', async () => {
    const listen = modernRequest('subscriptions/listen', { notifications: { toolsListChanged: true } });
    const res = await post(hub, 'alice', listen.body, listen.headers);
    assert.equal(res.status, 200);
    assert.match(res.text, /notifications\/subscriptions\/acknowledged/);
    assert.match(res.text, /"notifications":\{\}/);
  });

  await t.test('401 in both eras for a missing or wrong token; another caller sees no task', async () => {
    const discover = modernRequest('server/discover');
    for (const authorization of ['', 'Bearer wrong-token', `Bearer ${TEST_CALLERS.bob}`]) {
      const modern = await post(hub, 'alice', discover.body, { ...discover.headers, authorization });
      assert.equal(modern.status, 401);
      const legacy = await post(hub, 'alice', INITIALIZE, { authorization });
      assert.equal(legacy.status, 401);
    }
    const alice = v2Caller(await connectV2(t, hub, 'alice', 'modern'));
    const run = await alice('agent_run', {
      agent: 'scripted',
      prompt: acpScript([{ reply: 'mine' }]),
      cwd: work,
      idempotencyKey: 'private',
    });
    for (const era of ['modern', 'legacy'] as const) {
      const bob = v2Caller(await connectV2(t, hub, 'bob', era));
      for (const [tool, args] of [
        ['agent_status', { taskId: run.taskId }],
        ['agent_result', { taskId: run.taskId }],
        ['agent_cancel', { taskId: run.taskId }],
      ] as const) {
        await assert.rejects(bob(tool, args), (err: Error & { structured?: { code?: string } }) => {
          assert.equal(err.structured?.code, 'not_found', `${era} ${tool}: ${err.message}`);
          return true;
        });
      }
    }
  });

  await t.test('a foreign Host or Origin is refused in both eras', async () => {
    const discover = modernRequest('server/discover');
    for (const [body, headers] of [
      [discover.body, discover.headers],
      [INITIALIZE, {}],
    ] as const) {
      assert.equal((await post(hub, 'alice', body, { ...headers, origin: 'http://evil.example' })).status, 403);
      assert.equal((await post(hub, 'alice', body, { ...headers, origin: hub.url })).status, 200);
      assert.equal((await post(hub, 'alice', body, { ...headers, host: 'evil.example:80' })).status, 403);
    }
  });
});

function rssKiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

test('2025-era sessions survive a hub restart; a flood of initialize is capped and costs little', async (t) => {
  const dir = tempDir(t, 'baton-hub-sessions-');
  const { work, entry } = scriptedAgentSetup(dir);
  const setup = { dir, roots: [work], agents: { scripted: entry }, port: await portForLater() };
  const first = await startHub(t, setup);
  const v1 = v1Caller(await connectCaller(t, first, 'alice'));
  const v2 = v2Caller(await connectV2(t, first, 'alice', 'legacy'));
  const before = await v1('agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ reply: 'before restart' }]),
    cwd: work,
    idempotencyKey: 'before',
  });
  const init = await post(first, 'alice', INITIALIZE);
  const rawSession = init.header('mcp-session-id');
  assert.ok(rawSession, 'initialize answers with a session id');
  await first.stop();

  const second = await startHub(t, setup);
  assert.equal(second.url, first.url);

  await t.test('the same clients, with the same session ids, keep working after the restart', async () => {
    const status = await v1('agent_status', { taskId: before.taskId });
    assert.equal(status.taskId, before.taskId);
    const again = await v2('agent_run', {
      agent: 'scripted',
      prompt: acpScript([{ reply: 'after restart' }]),
      cwd: work,
      idempotencyKey: 'after',
    });
    assert.match(again.taskId as string, /^t-/);
  });

  await t.test(
    "notifications/cancelled aborts exactly that session's request; the same id elsewhere is answered",
    async () => {
      const other = (await post(second, 'alice', INITIALIZE)).header('mcp-session-id');
      assert.ok(other);
      const stalled = await v1('agent_run', {
        agent: 'scripted',
        prompt: acpScript([{ stall: true }]),
        cwd: work,
        idempotencyKey: 'cancel-wait',
      });
      const taskId = stalled.taskId as string;
      const running = await until(() => v1('agent_wait', { taskId, after: 0, timeoutMs: 5_000 }), {
        what: `task ${taskId} to run`,
        ok: (w) => w.state === 'running',
      });
      // Both sessions wait on the task under the same JSON-RPC id.
      const wait = (session: string) =>
        post(
          second,
          'alice',
          {
            jsonrpc: '2.0',
            id: 7,
            method: 'tools/call',
            params: { name: 'agent_wait', arguments: { taskId, after: running.nextCursor, timeoutMs: 25_000 } },
          },
          { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
        );
      let settled: Awaited<ReturnType<typeof post>> | undefined;
      const first = wait(rawSession!).then((r) => {
        settled = r;
      });
      const second7 = wait(other);
      // Sent until the exchange ends: a cancellation that arrives before its request is, by the spec, ignored.
      const cancel = {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 7, reason: 'test' },
      };
      await until(
        async () => {
          const sent = await post(second, 'alice', cancel, {
            'mcp-session-id': rawSession!,
            'mcp-protocol-version': '2025-06-18',
          });
          assert.equal(sent.status, 202);
          return settled;
        },
        { what: 'the cancelled agent_wait to end', timeoutMs: 20_000, intervalMs: 50 },
      );
      await first;
      // The cancelled request gets no answer (the 25 s wait would otherwise have answered with the task's state).
      assert.equal(settled!.status, 202);
      assert.equal(settled!.text, '');
      // The other session's request with the same id was not touched: the task's end answers it.
      await v1('agent_cancel', { taskId });
      const answered = await second7;
      assert.equal(answered.status, 200);
      assert.equal(answered.json?.id, 7);
      const result = answered.json?.result as { structuredContent?: { taskId?: string } } | undefined;
      assert.equal(result?.structuredContent?.taskId, taskId);
    },
  );

  await t.test('a session is bound to its caller, ends on DELETE, and an unknown one is 404', async () => {
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const session = { 'mcp-session-id': rawSession!, 'mcp-protocol-version': '2025-06-18' };
    assert.equal((await post(second, 'alice', list, session)).status, 200);
    assert.equal((await post(second, 'bob', list, session)).status, 404);
    const unknown = await post(second, 'alice', list, { ...session, 'mcp-session-id': 'not-a-session' });
    assert.equal(unknown.status, 404);
    assert.equal((await post(second, 'alice', undefined, session, 'GET')).status, 405);
    assert.equal((await post(second, 'alice', undefined, session, 'DELETE')).status, 200);
    assert.equal((await post(second, 'alice', list, session)).status, 404);
  });

  await t.test('2,000 initialize from one caller: capped, bounded memory, the hub keeps answering', async () => {
    const pid = second.group.child.pid!;
    const rssBefore = rssKiB(pid);
    const statuses = new Map<number, number>();
    let refusal = '';
    for (let sent = 0; sent < 2_000; sent += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => post(second, 'bob', INITIALIZE)));
      for (const res of batch) {
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 429) refusal = String((res.json?.error as { message?: string } | undefined)?.message);
      }
    }
    const rssAfter = rssKiB(pid);
    t.diagnostic(
      `initialize flood: ${JSON.stringify(Object.fromEntries(statuses))}; RSS ${rssBefore} → ${rssAfter} KiB`,
    );
    assert.equal(statuses.get(200), 32, 'exactly the cap was admitted');
    assert.equal(statuses.get(429), 2_000 - 32);
    assert.match(refusal, /too many MCP sessions for caller "bob".*HTTP DELETE/);
    assert.ok(rssAfter - rssBefore < 64 * 1024, `RSS grew by ${rssAfter - rssBefore} KiB`);
    // The caller's own older sessions and other callers are unaffected.
    assert.ok(((await v1('agent_list', {})).tasks as unknown[]).length >= 2);
    assert.ok(await v2Caller(await connectV2(t, second, 'bob', 'modern'))('agent_list', {}));
  });
});
