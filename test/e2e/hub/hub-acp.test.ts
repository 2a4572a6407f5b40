// The hub end to end with the scripted ACP test agent through the official MCP SDK client over Streamable HTTP (the
// real `gemini --acp` and `opencode acp` are in hub-acp-real.test.ts).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { call, connectCaller, followToEnd, startHub, waitForEvent } from '../../support/hub.ts';
import { processesWithEnvironment, until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

test('hub + scripted ACP agent: run, events, paged result, continue, cancel, list', async (t) => {
  const dir = tempDir(t, 'baton-hub-acp-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: scripted.entry } });
  const alice = await connectCaller(t, hub, 'alice');

  const long = 'é'.repeat(40_000);
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([
      { plan: [{ content: 'read the tests', status: 'in_progress', priority: 'high' }] },
      { tool: { kind: 'execute', title: 'rm -rf /secret/path' } },
      { permission: { kind: 'edit', title: 'write /etc/passwd' } },
      { thought: 'hidden reasoning never shown' },
      { chunks: ['start:', long] },
    ]),
    cwd: work,
    idempotencyKey: 'acp-1',
  });
  const done = await followToEnd(alice, run.taskId);
  assert.equal(done.state, 'succeeded');
  const events = JSON.stringify(done.events);
  assert.ok(
    done.events.some((e) => e.kind === 'permission' && e.decision === 'denied'),
    'permission denied and reported',
  );
  assert.ok(
    done.events.some((e) => e.kind === 'tool' && e.family === 'command'),
    `a command tool event in ${events}`,
  );
  assert.ok(
    done.events.some((e) => e.kind === 'status' && e.text === 'read the tests'),
    `the active plan step in ${events}`,
  );
  for (const leak of ['rm -rf', '/secret/path', '/etc/passwd', 'hidden reasoning']) {
    assert.equal(events.includes(leak), false, `${leak} must not cross MCP`);
  }
  // The answer is paged in 32,768 code points.
  const p1 = await call<{ text: string; nextOffset: number; done: boolean }>(alice, 'agent_result', {
    taskId: run.taskId,
  });
  assert.equal(p1.done, false);
  assert.equal(Array.from(p1.text).length, 32_768);
  const p2 = await call<{ text: string; done: boolean }>(alice, 'agent_result', {
    taskId: run.taskId,
    offset: p1.nextOffset,
  });
  assert.equal(p2.done, true);
  assert.equal(p1.text + p2.text, `permission:deniedstart:${long}`, 'the agent saw its permission denied');

  // agent_run answers with nextCursor (rule: event-cursor): a wait from it starts after the events its view reflects.
  // (Bob's task, so alice's list below stays hers alone.)
  const bob = await connectCaller(t, hub, 'bob');
  const short = await call<{ taskId: string; state: string; nextCursor: number }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ chunks: ['short answer'] }]),
    cwd: work,
    idempotencyKey: 'acp-short',
  });
  assert.ok(Number.isInteger(short.nextCursor) && short.nextCursor >= 1, JSON.stringify(short));
  const rest = await followToEnd(bob, short.taskId, short.nextCursor);
  assert.equal(rest.state, 'succeeded');
  // The answer comes once the admission is synced, so on a loaded machine the round may have ended by then: its view
  // already reflects every event, and the wait has nothing newer. Otherwise the wait carries at least the end.
  assert.ok(
    short.state === 'succeeded' || rest.events.length > 0,
    `a wait from a running task's cursor brings what followed: ${JSON.stringify({ short, rest: rest.events })}`,
  );
  assert.ok(
    rest.events.every((e) => (e.seq as number) > short.nextCursor),
    `only events after the cursor: ${JSON.stringify(rest.events)}`,
  );
  assert.ok(!rest.events.some((e) => e.kind === 'lifecycle' && e.state === 'queued'));
  assert.deepEqual(rest.last.result, { chars: 12, preview: 'short answer', complete: true });

  await call(alice, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ history: true }]),
    idempotencyKey: 'acp-2',
  });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  assert.equal(
    (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text,
    'history:1',
    'the new round was loaded into the same ACP session in a fresh agent process',
  );
  const sessions = readFileSync(scripted.record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.event === 'session/new' || r.event === 'session/load');
  assert.ok(sessions.length >= 2);
  for (const s of sessions) assert.deepEqual(s.params.mcpServers, [], 'no MCP servers passed to the child (AG-7)');

  await call(alice, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ stall: true }]),
    idempotencyKey: 'acp-3',
  });
  await waitForEvent(alice, run.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  const cancelled = await followToEnd(alice, run.taskId);
  assert.equal(cancelled.state, 'cancelled');
  const status = await call<{ rounds: Array<{ state: string }> }>(alice, 'agent_status', { taskId: run.taskId });
  assert.deepEqual(
    status.rounds.map((r) => r.state),
    ['succeeded', 'succeeded', 'cancelled'],
  );
  const list = await call<{ tasks: Array<{ taskId: string; state: string }> }>(alice, 'agent_list', { limit: 10 });
  assert.deepEqual(
    list.tasks.map((x) => [x.taskId, x.state]),
    [[run.taskId, 'cancelled']],
  );
});

test('hub + scripted ACP agent: SIGKILL mid-turn, restart, interrupted, continue loads the session', async (t) => {
  const dir = tempDir(t, 'baton-hub-acp-kill-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const setup = { dir, roots: [work], agents: { scripted: scripted.entry } };
  const hub1 = await startHub(t, setup);
  const a1 = await connectCaller(t, hub1, 'alice');
  const run = await call<{ taskId: string }>(a1, 'agent_run', {
    prompt: acpScript([{ spawnChild: true }, { stall: true }]),
    cwd: work,
    idempotencyKey: 'kill-1',
  });
  await waitForEvent(a1, run.taskId, (e) => e.kind === 'session');
  const before = await call<{ events: Array<{ seq: number }> }>(a1, 'agent_status', { taskId: run.taskId });
  const records = () =>
    readFileSync(scripted.record, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  // Wait until the agent recorded its grandchild (same process group) — a bounded poll on a file it writes.
  await until(() => records().find((r) => r.event === 'grandchild')?.grandchildPid, {
    what: 'the agent to start a grandchild',
  });
  // The pid the agent records is its own view's (a fenced agent has its own pid namespace); its processes are found
  // from here by the record path in their environment, the grandchild's included.
  const grandchild = () =>
    processesWithEnvironment({ ACP_TEST_AGENT_RECORD: scripted.record }).some((p) => p.cmdline.includes('setInterval'));
  await hub1.kill();
  assert.equal(grandchild(), true, 'the agent group outlives the killed daemon');

  const hub2 = await startHub(t, setup);
  assert.equal(grandchild(), false, 'restart stopped the whole old group, grandchild included');
  const a2 = await connectCaller(t, hub2, 'alice');
  const after = await call<{ state: string; events: Array<{ seq: number }> }>(a2, 'agent_status', {
    taskId: run.taskId,
  });
  assert.equal(after.state, 'interrupted');
  assert.deepEqual(
    after.events.slice(0, before.events.length).map((e) => e.seq),
    before.events.map((e) => e.seq),
  );
  await call(a2, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ history: true }]),
    idempotencyKey: 'kill-2',
  });
  assert.equal((await followToEnd(a2, run.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(a2, 'agent_result', { taskId: run.taskId })).text, 'history:1');
});
