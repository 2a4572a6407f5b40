// The hub end to end with ACP agents through the official MCP SDK client over Streamable HTTP: the scripted ACP test
// agent, the real `gemini --acp` and the real `opencode acp`, each against a mock model the suite owns.

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ACP_PRESETS } from '../../src/agents/acp/presets.ts';
import { opencodeEnv, startChatMock } from '../mock-models/chat-completions.ts';
import { geminiEnv, startGeminiMock } from '../mock-models/gemini.ts';
import { Gate } from '../mock-models/server.ts';
import { bins } from '../support/bins.ts';
import { call, connectCaller, followToEnd, startHub, waitForEvent } from '../support/hub.ts';
import { until } from '../support/poll.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';

function scriptedAgent(dir: string) {
  const record = join(dir, 'agent-record.jsonl');
  const state = join(dir, 'agent-state');
  mkdirSync(state, { mode: 0o700 });
  return {
    record,
    entry: {
      kind: 'acp',
      command: [process.execPath, SCRIPTED_ACP_AGENT],
      env: { ACP_TEST_AGENT_RECORD: record, ACP_TEST_AGENT_STATE: state },
      cancelGraceMs: 1_000,
    },
  };
}

test('hub + scripted ACP agent: run, events, paged result, continue, cancel, list', async (t) => {
  const dir = tempDir(t, 'baton-hub-acp-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const scripted = scriptedAgent(dir);
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
  assert.ok(done.events.some((e) => e.kind === 'tool' && e.family === 'command'));
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
  const work = join(dir, 'work');
  mkdirSync(work);
  const scripted = scriptedAgent(dir);
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
  const child: number = await until(() => records().find((r) => r.event === 'grandchild')?.grandchildPid, {
    what: 'the agent to start a grandchild',
  });
  await hub1.kill();
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  assert.equal(alive(child), true, 'the agent group outlives the killed daemon');

  const hub2 = await startHub(t, setup);
  assert.equal(alive(child), false, 'restart stopped the whole old group, grandchild included');
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

test('hub + real gemini --acp and opencode acp: run, result, continue (opencode), cancel, list', async (t) => {
  const dir = tempDir(t, 'baton-hub-acp-real-');
  const work = join(dir, 'work');
  // Sibling directories, so the two agents never wait for each other's workspace lock.
  const gWork = join(work, 'g');
  const oWork = join(work, 'o');
  mkdirSync(gWork, { recursive: true });
  mkdirSync(oWork);
  const gemini = await startGeminiMock();
  t.after(() => gemini.close());
  const chat = await startChatMock();
  t.after(() => chat.close());
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      gemini: {
        kind: 'acp',
        command: [process.execPath, bins.gemini(), ...ACP_PRESETS.gemini.command.slice(1)],
        env: geminiEnv(join(dir, 'gemini-home'), gemini),
        cancelGraceMs: 10_000,
      },
      opencode: {
        kind: 'acp',
        command: [bins.opencode(), ...ACP_PRESETS['opencode-acp'].command.slice(1)],
        env: opencodeEnv(join(dir, 'oc'), chat),
        cancelGraceMs: 10_000,
      },
    },
  });
  const alice = await connectCaller(t, hub, 'alice');

  gemini.script.push({ type: 'text', chunks: ['gemini ', 'says hi'] });
  chat.script.push({ type: 'text', chunks: ['opencode ', 'says hi'] });
  const g = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'gemini',
    prompt: 'greet',
    cwd: gWork,
    idempotencyKey: 'g-1',
  });
  const o = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'opencode',
    prompt: 'remember the word osprey',
    cwd: oWork,
    idempotencyKey: 'o-1',
  });
  assert.equal((await followToEnd(alice, g.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: g.taskId })).text, 'gemini says hi');
  assert.equal((await followToEnd(alice, o.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: o.taskId })).text, 'opencode says hi');

  // Continue: opencode loads the saved session in a fresh process, so the model sees the first prompt. (Gemini CLI
  // 0.61's session/load cannot find a session saved in the same minute — an upstream bug — so its continue is not
  // exercised here; its cancel is.)
  chat.script.push({ type: 'text', chunks: ['it was osprey'] });
  await call(alice, 'agent_continue', { taskId: o.taskId, prompt: 'which word?', idempotencyKey: 'o-2' });
  assert.equal((await followToEnd(alice, o.taskId)).state, 'succeeded');
  const lastCall = chat.mainCalls().at(-1)!;
  assert.match(lastCall.rawBody, /osprey/, 'the continued round carries the earlier history');

  const stallG = new Gate();
  const stallO = new Gate();
  t.after(() => {
    stallG.open();
    stallO.open();
  });
  gemini.script.push({ type: 'stall', gate: stallG, before: ['thinking'] });
  chat.script.push({ type: 'stall', gate: stallO, before: ['thinking'] });
  const gs = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'gemini',
    prompt: 'take long',
    cwd: gWork,
    idempotencyKey: 'g-2',
  });
  await call(alice, 'agent_continue', { taskId: o.taskId, prompt: 'take long', idempotencyKey: 'o-3' });
  // Both models are now holding a streamed answer open.
  await gemini.server.waitForRequest(() => gemini.mainCalls().length >= 2);
  await chat.server.waitForRequest(() => chat.mainCalls().length >= 3);
  await call(alice, 'agent_cancel', { taskId: gs.taskId });
  await call(alice, 'agent_cancel', { taskId: o.taskId });
  assert.equal((await followToEnd(alice, gs.taskId)).state, 'cancelled');
  assert.equal((await followToEnd(alice, o.taskId)).state, 'cancelled');
  const list = await call<{ tasks: Array<{ taskId: string }> }>(alice, 'agent_list', {});
  assert.deepEqual(
    list.tasks.map((x) => x.taskId),
    [g.taskId, o.taskId, gs.taskId],
  );
});
