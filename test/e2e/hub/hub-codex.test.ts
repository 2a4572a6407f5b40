// The hub end to end with the real Codex (app-server) against the scripted Responses mock, through the official MCP
// SDK client over Streamable HTTP: run → follow → result → continue → cancel, a client that goes away, and a daemon
// SIGKILLed mid-turn.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { commentaryThenReply, reply, stalledReply, userTexts } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { startResponsesMock } from '../../support/codex.ts';
import {
  call,
  connectCaller,
  followToEnd,
  HUB_TOOL_NAMES,
  type HubSetup,
  startHub,
  waitForEvent,
} from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

function codexSetup(t: Parameters<typeof tempDir>[0], baseUrl: string): HubSetup & { work: string } {
  const dir = tempDir(t, 'baton-hub-codex-');
  const work = join(dir, 'work');
  mkdirSync(work);
  return {
    dir,
    work,
    roots: [work],
    agents: {
      codex: {
        kind: 'codex',
        command: [process.execPath, bins.codex()],
        model: 'mock-model',
        modelProvider: { id: 'mock', baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
        userCodexHome: join(dir, 'no-user-login'),
        cancelGraceMs: 2_000,
      },
    },
  };
}

test('hub + codex: run, follow, result, continue in the same thread, cancel, list', async (t) => {
  const mock = await startResponsesMock(t);
  const setup = codexSetup(t, mock.baseUrl);
  const hub = await startHub(t, setup);
  const alice = await connectCaller(t, hub, 'alice');

  const tools = await alice.listTools();
  assert.deepEqual(tools.tools.map((x) => x.name).sort(), HUB_TOOL_NAMES);
  assert.equal(tools.tools.find((x) => x.name === 'agent_run')!.inputSchema.additionalProperties, false);

  // agent_agents asks the real Codex for its version, login and models (model/list) without a model call.
  const { agents } = await call<{ agents: Array<Record<string, unknown>> }>(alice, 'agent_agents', {});
  assert.equal(agents.length, 1);
  const codex = agents[0]!;
  assert.deepEqual([codex.name, codex.kind, codex.available, codex.login], ['codex', 'codex', true, 'missing']);
  assert.match(String(codex.version), /^\d+\.\d+\.\d+/);
  assert.ok(Array.isArray(codex.models) && codex.models.length > 0, `models in ${JSON.stringify(codex)}`);
  assert.ok(Array.isArray(codex.efforts) && codex.efforts.includes('low'), `efforts in ${JSON.stringify(codex)}`);
  assert.equal(mock.turns.length, 0, 'no inference was spent');

  mock.push(commentaryThenReply('reading the code', 'first answer'));
  const run = await call<{ taskId: string; state: string; agent: string }>(alice, 'agent_run', {
    prompt: 'remember the word pelican',
    cwd: setup.work,
    idempotencyKey: 'run-1',
  });
  assert.equal(run.agent, 'codex', 'the only reachable agent is chosen');
  const first = await followToEnd(alice, run.taskId);
  assert.equal(first.state, 'succeeded');
  const kinds = first.events.map((e) => e.kind);
  assert.ok(kinds.includes('commentary'), `commentary event in ${kinds}`);
  assert.deepEqual(
    first.events.filter((e) => e.kind === 'lifecycle').map((e) => e.state),
    ['queued', 'running', 'succeeded'],
  );
  // Live text (rule `live-text`): the answer's deltas are live `message` events; the commentary is not among them.
  assert.equal(
    first.events
      .filter((e) => e.kind === 'message')
      .map((e) => e.text)
      .join(''),
    'first answer',
  );
  const result = await call<{ text: string; done: boolean }>(alice, 'agent_result', { taskId: run.taskId });
  assert.equal(result.text, 'first answer');
  assert.equal(result.done, true);
  const status = await call<{ rounds: Array<{ gitBefore: unknown }>; sessionId: string }>(alice, 'agent_status', {
    taskId: run.taskId,
  });
  assert.deepEqual(status.rounds[0]!.gitBefore, { git: false, reason: 'not a git work tree' });
  assert.ok(status.sessionId, 'the codex thread id is saved');

  mock.push(reply('second answer'));
  await call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'which word?', idempotencyKey: 'c-1' });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  const secondRequest = await mock.waitForTurn(1);
  assert.ok(
    userTexts(secondRequest).some((x) => x.includes('pelican')),
    'the continued round runs in the same thread',
  );
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text, 'second answer');

  const gate = new Gate();
  t.after(() => gate.open());
  // Two deltas, the model stalls after the first: its line is visible while the round runs.
  mock.push(stalledReply(gate, 'live!\nxxxxx'));
  await call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'take your time', idempotencyKey: 'c-2' });
  await mock.waitForTurn(2);
  await waitForEvent(alice, run.taskId, (e) => e.kind === 'message' && e.text === 'live!\n');
  const partial = await call<{ text: string; partial?: boolean; state: string }>(alice, 'agent_result', {
    taskId: run.taskId,
  });
  assert.deepEqual([partial.state, partial.partial, partial.text], ['running', true, 'live!\n']);
  await assert.rejects(
    call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'again', idempotencyKey: 'c-3' }),
    /wait for the round to finish/,
  );
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  const cancelled = await followToEnd(alice, run.taskId);
  assert.equal(cancelled.state, 'cancelled');

  const list = await call<{ tasks: Array<{ taskId: string }> }>(alice, 'agent_list', {});
  assert.deepEqual(
    list.tasks.map((x) => x.taskId),
    [run.taskId],
  );
});

test('hub + codex: a client that goes away does not cancel its task', async (t) => {
  const mock = await startResponsesMock(t);
  const setup = codexSetup(t, mock.baseUrl);
  const hub = await startHub(t, setup);
  const first = await connectCaller(t, hub, 'alice');
  const gate = new Gate();
  t.after(() => gate.open());
  mock.push(stalledReply(gate, 'finished without you'));
  const run = await call<{ taskId: string }>(first, 'agent_run', {
    prompt: 'long job',
    cwd: setup.work,
    idempotencyKey: 'gone-1',
  });
  await mock.waitForTurn(0);
  await first.close();
  gate.open();
  const second = await connectCaller(t, hub, 'alice');
  assert.equal((await followToEnd(second, run.taskId)).state, 'succeeded');
  assert.equal(
    (await call<{ text: string }>(second, 'agent_result', { taskId: run.taskId })).text,
    'finished without you',
  );
});

test('hub + codex: SIGKILL mid-turn loses nothing acknowledged; restart stops the orphan group; continue resumes the thread', async (t) => {
  const mock = await startResponsesMock(t);
  const setup = codexSetup(t, mock.baseUrl);
  const hub1 = await startHub(t, setup);
  const alice1 = await connectCaller(t, hub1, 'alice');
  const gate = new Gate();
  t.after(() => gate.open());
  mock.push(stalledReply(gate));
  const run = await call<{ taskId: string }>(alice1, 'agent_run', {
    prompt: 'the secret word is heron',
    cwd: setup.work,
    idempotencyKey: 'crash-1',
  });
  await mock.waitForTurn(0);
  await waitForEvent(alice1, run.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
  const before = await call<{ events: Array<{ seq: number }> }>(alice1, 'agent_status', { taskId: run.taskId });

  const db = new DatabaseSync(join(hub1.stateDir, 'baton.db'), { readOnly: true });
  const workers = db.prepare('SELECT pgid FROM workers').all() as Array<{ pgid: number }>;
  db.close();
  assert.equal(workers.length, 1, 'the codex process group is recorded');
  const pgid = workers[0]!.pgid;

  await hub1.kill();
  assert.equal(isGroupAlive(pgid), true, 'the agent outlives the daemon until the next start');

  const hub2 = await startHub(t, setup);
  assert.equal(isGroupAlive(pgid), false, 'the restarted daemon stopped the orphan group before listening');
  const alice2 = await connectCaller(t, hub2, 'alice');
  const after = await call<{ state: string; events: Array<{ seq: number; kind: string; state?: string }> }>(
    alice2,
    'agent_status',
    { taskId: run.taskId },
  );
  assert.equal(after.state, 'interrupted');
  assert.deepEqual(
    after.events.slice(0, before.events.length).map((e) => e.seq),
    before.events.map((e) => e.seq),
    'every event acknowledged before the kill is still there',
  );

  mock.push(reply('it was heron'));
  await call(alice2, 'agent_continue', { taskId: run.taskId, prompt: 'what was the word?', idempotencyKey: 'crash-2' });
  assert.equal((await followToEnd(alice2, run.taskId)).state, 'succeeded');
  const resumed = mock.turns.at(-1)!;
  assert.ok(
    userTexts(resumed).some((x) => x.includes('heron')),
    'continue resumed the saved thread: the model sees the first prompt',
  );
});
