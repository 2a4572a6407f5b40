// The MCP Tasks extension on the hub (SEP-2663): a client that declares `io.modelcontextprotocol/tasks`
// gets agent_run / agent_continue as tasks whose ids are baton's own, follows them with tasks/get, cancels with
// tasks/cancel, and finds them again after a hub restart; a client that does not declare it sees the tools unchanged.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startHub } from '../../support/hub.ts';
import { connectV2, v2Caller } from '../../support/mcp-v2.ts';
import { until } from '../../support/poll.ts';
import { portForLater } from '../../support/ports.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { TASKS, TasksRequester } from '../../support/tasks-client.ts';
import { tempDir } from '../../support/tmp.ts';

const notWorking = (task: Record<string, unknown>) => task.status !== 'working';
const text = (result: unknown) =>
  ((result as { content: Array<{ type: string; text?: string }> }).content ?? []).map((c) => c.text ?? '').join('');

test('hub Tasks extension: run and continue as tasks, long-poll, cancel, isolation, restart', async (t) => {
  const dir = tempDir(t, 'baton-hub-tasks-');
  const { work, entry, record } = scriptedAgentSetup(dir);
  const setup = { dir, roots: [work], agents: { scripted: entry }, port: await portForLater() };
  const first = await startHub(t, setup);
  const alice = await TasksRequester.open(t, first, 'alice');
  const run = (prompt: string, key: string) =>
    alice.request('tools/call', {
      name: 'agent_run',
      arguments: { agent: 'scripted', prompt, cwd: work, idempotencyKey: key },
    });

  let taskId = '';
  let stalledId = '';

  await t.test('the hub declares the extension in server/discover', async () => {
    const discover = await alice.request('server/discover');
    const caps = discover.result?.capabilities as { extensions?: Record<string, unknown> };
    assert.deepEqual(caps.extensions?.[TASKS], {});
  });

  await t.test('agent_run answers with a task handle whose id is the baton task id', async () => {
    const created = await run(
      acpScript([{ plan: [{ content: 'plan it', status: 'in_progress' }] }, { reply: 'the answer' }]),
      'run-1',
    );
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    taskId = created.result!.taskId as string;
    assert.match(taskId, /^t-[A-Za-z0-9_-]+$/);
    assert.ok(['working', 'completed'].includes(created.result!.status as string));
    assert.equal(created.result!.ttlMs, null);
    const done = await alice.until(taskId, notWorking);
    assert.equal(done.status, 'completed');
    assert.equal(done.resultType, 'complete');
    assert.equal(text(done.result), 'the answer');
    assert.equal((done.result as { isError?: boolean }).isError, undefined);
    // The same task through the plain tools: same store, same state.
    const status = await alice.request('tools/call', { name: 'agent_status', arguments: { taskId } });
    assert.equal((status.result!.structuredContent as { state: string }).state, 'succeeded');
  });

  await t.test('agent_continue is a task of its own round; the first round keeps its answer', async () => {
    const cont = await alice.request('tools/call', {
      name: 'agent_continue',
      arguments: { taskId, prompt: acpScript([{ reply: 'round two' }]), idempotencyKey: 'cont-1' },
    });
    assert.equal(cont.result?.resultType, 'task', JSON.stringify(cont));
    assert.equal(cont.result!.taskId, `${taskId}/2`);
    const done = await alice.until(`${taskId}/2`, notWorking);
    assert.equal(text(done.result), 'round two');
    assert.equal(text((await alice.request('tasks/get', { taskId })).result!.result), 'the answer');
  });

  await t.test('a working task reports progress; tasks/cancel stops it like agent_cancel', async () => {
    // tasks/get on a working task answers at the task's next event, or after the hub's 20 s hold: a poll that reaches
    // the hub after the tool call, with only the stall left, sits out the whole hold. So the agent holds its tool call
    // at a gate until a poll is out, and the test opens the gate only then.
    const created = await run(
      acpScript([{ waitFor: 'tool-gate' }, { tool: { kind: 'execute', title: 'make test' } }, { stall: true }]),
      'stall',
    );
    stalledId = created.result!.taskId as string;
    const gate = join(work, 'tool-gate');
    await until(() => readFileSync(record, 'utf8').split('\n').filter(Boolean), {
      what: 'the agent to wait at its gate',
      ok: (lines) => lines.some((line) => (JSON.parse(line) as { gate?: string }).gate === gate),
    });
    const working = alice.until(stalledId, (task) => /^tool /.test(String(task.statusMessage)));
    // tasks/update answers at once; by its answer the hub has almost always taken the poll sent before it (if not,
    // that poll answers after the hold, and the test is only slower).
    const updated = await alice.request('tasks/update', { taskId: stalledId, inputResponses: {} });
    assert.equal(updated.result?.resultType, 'complete', JSON.stringify(updated));
    writeFileSync(gate, '');
    assert.equal((await working).status, 'working');
    const ack = await alice.request('tasks/cancel', { taskId: stalledId });
    assert.equal(ack.error, undefined, JSON.stringify(ack));
    const ended = await alice.until(stalledId, notWorking);
    assert.equal(ended.status, 'cancelled');
    const status = await alice.request('tools/call', { name: 'agent_status', arguments: { taskId: stalledId } });
    assert.equal((status.result!.structuredContent as { state: string }).state, 'cancelled');
  });

  await t.test('a bad argument is still -32602, and another caller cannot see or touch the task', async () => {
    const bad = await alice.request('tools/call', {
      name: 'agent_run',
      arguments: { agent: 'scripted', prompt: 'x', cwd: work, idempotencyKey: 'k', sneaky: 1 },
    });
    assert.equal(bad.error?.code, -32602);
    assert.match(bad.error!.message, /unknown argument.*sneaky/);
    const bob = await TasksRequester.open(t, first, 'bob');
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const answer = await bob.request(method, { taskId });
      assert.equal(answer.error?.code, -32602, `${method}: ${JSON.stringify(answer)}`);
      assert.match(answer.error!.message, /unknown task/);
    }
    const made = await alice.request('tasks/get', { taskId: 't-doesnotexist' });
    assert.match(String(made.error?.message), /unknown task/);
  });

  await t.test('a client that does not declare the extension gets the plain tool answer', async () => {
    const plain = await TasksRequester.open(t, first, 'alice', false);
    const created = await plain.request('tools/call', {
      name: 'agent_run',
      arguments: { agent: 'scripted', prompt: acpScript([{ reply: 'plain' }]), cwd: work, idempotencyKey: 'plain' },
    });
    assert.notEqual(created.result?.resultType, 'task');
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const refused = await plain.request(method, { taskId, inputResponses: {} });
      assert.equal(refused.error?.code, -32021, `${method}: ${JSON.stringify(refused)}`);
    }
    assert.match((created.result!.structuredContent as { taskId: string }).taskId, /^t-/);
    const sdk = v2Caller(await connectV2(t, first, 'alice', 'modern'));
    assert.match((await sdk('agent_status', { taskId })).taskId as string, /^t-/);
  });

  await t.test('tasks survive a hub restart', async () => {
    const left = await run(acpScript([{ stall: true }]), 'left-running');
    const leftId = left.result!.taskId as string;
    await alice.until(leftId, (task) => task.statusMessage === 'running');
    await first.stop();
    const second = await startHub(t, setup);
    const again = await TasksRequester.open(t, second, 'alice');
    const round1 = await again.request('tasks/get', { taskId });
    assert.equal(round1.result?.status, 'completed');
    assert.equal(text(round1.result!.result), 'the answer');
    assert.equal((await again.request('tasks/get', { taskId: stalledId })).result?.status, 'cancelled');
    // A round the restart cut off is an answer the caller can read, not a protocol failure (SEP-2663 "failed").
    const cut = await again.request('tasks/get', { taskId: leftId });
    assert.equal(cut.result?.status, 'completed');
    assert.equal((cut.result!.result as { isError?: boolean }).isError, true);
    assert.equal(
      (cut.result!.result as { structuredContent: { state: string } }).structuredContent.state,
      'interrupted',
    );
  });
});
