// A lost lease file does not let a second hub take over a live store (rule: crash-durability): with lease.db (and the
// listen record) removed under a running hub, a second hub on the same state dir sees the other signals — the store
// marker says no clean stop, and a live worker group of the store is the child of a running hub — and refuses to start,
// so its crash recovery never stops the first hub's agent. Two real hub processes.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, connectCaller, startHub, waitForEvent } from '../../support/hub.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

test('a second hub refuses a store whose lease file is gone while its hub runs', async (t) => {
  const dir = tempDir(t);
  const { work, entry, record } = scriptedAgentSetup(dir);
  const setup = { dir, roots: [work], agents: { scripted: entry } };
  const first = await startHub(t, setup);
  const alice = await connectCaller(t, first, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'stall',
  });
  await waitForEvent(alice, run.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
  // The agent is in its turn once it says so in its record.
  await until(() => readFileSync(record, 'utf8').includes('"stalling"'), { what: 'the agent to stall' });
  const agentPid = (
    readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; pid: number })
      .find((e) => e.event === 'stalling') as { pid: number }
  ).pid;

  rmSync(join(first.stateDir, 'lease.db'));
  rmSync(join(first.stateDir, 'listen.json'), { force: true });
  await assert.rejects(startHub(t, setup), /another baton daemon is already running on state dir .*pid \d+/s);

  assert.ok(pidAlive(agentPid), "the first hub's agent still runs");
  const status = await call<{ state: string }>(alice, 'agent_status', { taskId: run.taskId });
  assert.equal(status.state, 'running');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
});
