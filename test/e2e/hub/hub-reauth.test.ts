// Authorisation follows the config the hub runs with now (rule: hub-tools): after a restart that narrows a caller's
// `agents`, agent_continue on that caller's older task for an agent it may no longer reach is refused like agent_run.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { call, connectCaller, followToEnd, startHub, TEST_CALLERS } from '../../support/hub.ts';
import { scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

test('agent_continue is refused after a restart narrowed the caller’s agents', async (t) => {
  const dir = tempDir(t);
  const { work, entry } = scriptedAgentSetup(dir);
  const setup = {
    dir,
    roots: [work],
    agents: { probe: entry, other: entry },
    callers: { bob: { token: TEST_CALLERS.bob, agents: ['probe', 'other'] } },
  };
  const first = await startHub(t, setup);
  const bob = await connectCaller(t, first, 'bob');
  const run = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'probe',
    prompt: 'hello',
    cwd: work,
    idempotencyKey: 'r',
  });
  assert.equal((await followToEnd(bob, run.taskId)).state, 'succeeded');
  await first.stop();

  const config = JSON.parse(readFileSync(first.configPath, 'utf8'));
  config.callers.bob.agents = ['other'];
  writeFileSync(first.configPath, JSON.stringify(config));
  const second = await startHub(t, setup);
  const again = await connectCaller(t, second, 'bob');
  await assert.rejects(
    call(again, 'agent_run', { agent: 'probe', prompt: 'x', cwd: work, idempotencyKey: 'r2' }),
    /not reachable for caller "bob"/,
  );
  await assert.rejects(
    call(again, 'agent_continue', { taskId: run.taskId, prompt: 'more', idempotencyKey: 'c' }),
    /agent "probe" is not reachable for caller "bob"/,
  );
  const status = await call<{ state: string; rounds: unknown[] }>(again, 'agent_status', { taskId: run.taskId });
  assert.equal(status.rounds.length, 1, 'no round was added');
});
