// Approvals through MCP's own input channel (rule: approvals), with the scripted ACP agent asking
// session/request_permission under the `ask` policy. The official SDK v2 client on 2026-07-28, declaring form
// elicitation, is put the request as a form inside agent_wait's `input_required` answer and answers it with its own
// elicitation handler (accept allow → the agent proceeds; decline → denied; cancel → still waiting for anyone else).
// A Tasks-extension requester that declares elicitation sees the task `input_required` and answers with tasks/update;
// one that does not sees it `working`, told to use agent_respond. A 2025-era session is never asked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { call, connectCaller, type HubSetup, type RunningHub, startHub, TEST_CALLERS } from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { TasksRequester } from '../../support/tasks-client.ts';
import { tempDir } from '../../support/tmp.ts';

const ASKS = acpScript([{ permission: { kind: 'execute', title: 'rm -rf /very/secret/path' } }]);
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

interface Elicit {
  mode?: string;
  message: string;
  requestedSchema: { properties: { decision: { enum: string[] } }; required: string[] };
}
type Answer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string> };

function setup(dir: string): { work: string; hub: HubSetup } {
  const { work, ...scripted } = scriptedAgentSetup(dir);
  return {
    work,
    hub: {
      dir,
      roots: [work],
      agents: { scripted: scripted.entry },
      callers: { alice: { token: TEST_CALLERS.alice, approvals: { scripted: 'ask' } } },
    },
  };
}

/** The official SDK v2 client on 2026-07-28; with `answer` it declares form elicitation and answers with it. */
async function client2026(
  t: { after: (fn: () => unknown) => void },
  hub: RunningHub,
  answer?: (params: Elicit) => Answer,
) {
  const asked: Elicit[] = [];
  const client = new Client(
    { name: 'elicit-2026', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: answer ? { elicitation: { form: {} } } : {},
    },
  );
  if (answer)
    client.setRequestHandler('elicitation/create', async (req) => {
      const params = req.params as unknown as Elicit;
      asked.push(params);
      return answer(params);
    });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp/alice`), {
      requestInit: { headers: { Authorization: `Bearer ${TEST_CALLERS.alice}` } },
    }),
  );
  t.after(() => client.close().catch(() => {}));
  const tool = async (name: string, args: Record<string, unknown>) => {
    const res = await client.callTool({ name, arguments: args }, { timeout: 60_000 });
    assert.ok(!res.isError, JSON.stringify(res));
    return res.structuredContent as Record<string, unknown>;
  };
  /** agent_wait until the task ends; every wait may put a request to the client first. */
  const follow = async (taskId: string) => {
    let after = 0;
    const events: Record<string, unknown>[] = [];
    for (;;) {
      const w = await tool('agent_wait', { taskId, after, timeoutMs: 20_000 });
      events.push(...(w.events as Record<string, unknown>[]));
      after = w.nextCursor as number;
      if (TERMINAL.has(w.state as string) && !w.hasMore) return { state: w.state, events };
    }
  };
  return { client, asked, tool, follow };
}

const answered = (events: Record<string, unknown>[]) => events.filter((e) => e.kind === 'approval_answered');

test('2026-07-28 with elicitation: agent_wait puts the request as a form; accept allows, decline denies, cancel leaves it waiting', async (t) => {
  const dir = tempDir(t, 'baton-approval-input-');
  const { work, hub: setupHub } = setup(dir);
  const hub = await startHub(t, setupHub);
  const plan: Answer[] = [
    { action: 'accept', content: { decision: 'allow' } },
    { action: 'decline' },
    { action: 'cancel' },
  ];
  const c = await client2026(t, hub, () => plan[0]!);

  // Accept with allow: the agent is granted the permission and the answer is recorded as the caller's.
  const a = await c.tool('agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 'el-1' });
  const aEnd = await c.follow(a.taskId as string);
  assert.equal(aEnd.state, 'succeeded');
  assert.equal((await c.tool('agent_result', { taskId: a.taskId })).text, 'permission:granted');
  assert.equal(c.asked.length, 1, 'asked once');
  const form = c.asked[0]!;
  assert.equal(form.mode, 'form');
  assert.match(form.message, new RegExp(`task ${a.taskId} asks to run a command \\(command\\)`));
  assert.deepEqual(form.requestedSchema.properties.decision.enum, ['allow', 'allow_always', 'deny']);
  assert.deepEqual(form.requestedSchema.required, ['decision']);
  assert.equal(JSON.stringify(c.asked).includes('secret'), false, 'never the request arguments');
  assert.deepEqual(
    answered(aEnd.events).map((e) => [e.decision, e.by]),
    [['allow', 'caller']],
  );

  // Decline: denied, by the caller.
  plan.shift();
  const b = await c.tool('agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 'el-2' });
  const bEnd = await c.follow(b.taskId as string);
  assert.equal((await c.tool('agent_result', { taskId: b.taskId })).text, 'permission:denied');
  assert.deepEqual(
    answered(bEnd.events).map((e) => [e.decision, e.by]),
    [['deny', 'caller']],
  );

  // Cancel (the form dismissed): the wait answers without a decision and the request still waits; the next wait asks
  // again, and agent_respond answers it like any other.
  plan.shift();
  const before = c.asked.length;
  const d = await c.tool('agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 'el-3' });
  let after = 0;
  let waiting: { requestId: string } | undefined;
  while (!waiting) {
    const w = await c.tool('agent_wait', { taskId: d.taskId, after, timeoutMs: 20_000 });
    after = w.nextCursor as number;
    waiting = w.waiting as typeof waiting;
  }
  assert.ok(c.asked.length > before, 'the form was put and dismissed');
  const still = await c.tool('agent_status', { taskId: d.taskId });
  assert.deepEqual(still.waiting, waiting, 'a dismissed form changes nothing');
  await c.tool('agent_respond', { taskId: d.taskId, requestId: waiting.requestId, decision: 'allow' });
  plan.push({ action: 'accept', content: { decision: 'deny' } });
  const dEnd = await c.follow(d.taskId as string);
  assert.equal((await c.tool('agent_result', { taskId: d.taskId })).text, 'permission:granted');
  assert.deepEqual(
    answered(dEnd.events).map((e) => [e.decision, e.by]),
    [['allow', 'caller']],
  );
});

test('a client that declares no elicitation, and a 2025-era session, are not asked: the view says what waits', async (t) => {
  const dir = tempDir(t, 'baton-approval-input-none-');
  const { work, hub: setupHub } = setup(dir);
  const hub = await startHub(t, setupHub);
  const c = await client2026(t, hub);
  const run = await c.tool('agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 'plain-1' });
  let after = 0;
  let waiting: { requestId: string } | undefined;
  while (!waiting) {
    const w = await c.tool('agent_wait', { taskId: run.taskId, after, timeoutMs: 20_000 });
    after = w.nextCursor as number;
    waiting = w.waiting as typeof waiting;
  }

  // The 2025-era SDK v1 client declares elicitation and handles it, but the hub has no stream to ask it on.
  const v1: ClientV1 = await connectCaller(t, hub, 'alice');
  const w1 = await call<{ waiting?: { requestId: string } }>(v1, 'agent_wait', {
    taskId: run.taskId,
    after,
    timeoutMs: 200,
  });
  assert.deepEqual(w1.waiting, waiting);
  await call(v1, 'agent_respond', { taskId: run.taskId, requestId: waiting.requestId, decision: 'deny' });
  await until(async () => (await c.tool('agent_status', { taskId: run.taskId })).state === 'succeeded', {
    what: 'the denied task to end',
  });
  assert.equal((await c.tool('agent_result', { taskId: run.taskId })).text, 'permission:denied');
});

test('Tasks extension: input_required with the form for a requester that declares elicitation, answered by tasks/update', async (t) => {
  const dir = tempDir(t, 'baton-approval-input-tasks-');
  const { work, hub: setupHub } = setup(dir);
  const hub = await startHub(t, setupHub);
  const asker = await TasksRequester.open(t, hub, 'alice', true, { elicitation: { form: {} } });
  const plain = await TasksRequester.open(t, hub, 'alice', true);

  const started = await asker.request('tools/call', {
    name: 'agent_run',
    arguments: { prompt: ASKS, cwd: work, idempotencyKey: 'task-1' },
  });
  const taskId = started.result?.taskId as string;
  assert.equal(started.result?.resultType, 'task', JSON.stringify(started));

  // A requester without elicitation is told the task works and what it waits for.
  const seen = await plain.until(taskId, (x) => String(x.statusMessage ?? '').startsWith('waiting for a decision'));
  assert.equal(seen.status, 'working');
  assert.match(String(seen.statusMessage), /run a command \(agent_respond with requestId r-/);
  assert.equal(seen.inputRequests, undefined);

  const task = await asker.until(taskId, (x) => x.status !== 'working');
  assert.equal(task.status, 'input_required', JSON.stringify(task));
  const requests = task.inputRequests as Record<string, { method: string; params: Elicit }>;
  const [[key, request]] = Object.entries(requests) as [[string, { method: string; params: Elicit }]];
  assert.match(key, /^r-/);
  assert.equal(request.method, 'elicitation/create');
  assert.equal(request.params.mode, 'form');
  assert.deepEqual(request.params.requestedSchema.properties.decision.enum, ['allow', 'allow_always', 'deny']);
  assert.equal(JSON.stringify(task).includes('secret'), false);

  // An answer for no outstanding request is acknowledged and ignored; an unknown task is refused.
  const ignored = await asker.request('tasks/update', {
    taskId,
    inputResponses: { 'r-unknown': { action: 'accept', content: { decision: 'allow' } } },
  });
  assert.equal(ignored.result?.resultType, 'complete', JSON.stringify(ignored));
  assert.equal((await asker.request('tasks/get', { taskId })).result?.status, 'input_required');
  const unknown = await asker.request('tasks/update', { taskId: 't-nope', inputResponses: {} });
  assert.equal(unknown.error?.code, -32602);

  const ack = await asker.request('tasks/update', {
    taskId,
    inputResponses: { [key]: { action: 'accept', content: { decision: 'allow' } } },
  });
  assert.equal(ack.result?.resultType, 'complete', JSON.stringify(ack));
  const done = await asker.until(taskId, (x) => x.status !== 'working' && x.status !== 'input_required');
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const result = done.result as { structuredContent: { text: string } };
  assert.equal(result.structuredContent.text, 'permission:granted');
});
