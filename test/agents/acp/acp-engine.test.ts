// The task engine driving an ACP agent (the scripted test agent, configured through the registry like config.json
// does): run → events and result → continue (a fresh agent process loads the session and sees the history) →
// cancel acknowledged → cancel ignored (abandoned, the whole group stopped). The MCP-level hub e2e builds on this.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { ensurePrivateDir } from '../../../src/lib/private-fs.ts';
import { engineFor, settle } from '../../support/engine.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';

const CALLER = 'tester';

test('engine + ACP agent: run, continue in a fresh process, cancel acknowledged, cancel ignored', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'baton-acp-engine-'));
  const stateDir = ensurePrivateDir(join(root, 'state'));
  const work = ensurePrivateDir(join(root, 'work'));
  const record = join(root, 'record.jsonl');
  const records = () =>
    readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const agentState = ensurePrivateDir(join(root, 'agent-state'));
  const scripted = (name: string, cancelGraceMs: number) =>
    createAgent(
      name,
      {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        env: { ACP_TEST_AGENT_RECORD: record, ACP_TEST_AGENT_STATE: agentState },
        cancelGraceMs,
      },
      { stateDir, logger: silentLogger },
    );
  // The acknowledged cancel gets a grace no loaded machine outlasts (nothing waits it out: the agent answers at once);
  // the ignored cancel runs on a second configuration of the same agent whose grace is short, as it is waited out.
  const { engine } = engineFor(t, {
    agents: { scripted: scripted('scripted', 30_000), stubborn: scripted('stubborn', 500) },
    roots: [root],
    stateDir,
  });
  t.after(() => rmSync(root, { recursive: true, force: true }));

  const first = JSON.stringify({
    steps: [
      { plan: [{ content: 'Look around', status: 'in_progress', priority: 'high' }] },
      { tool: { kind: 'execute', title: 'cat /very/secret/path' } },
      { permission: { kind: 'edit', title: 'edit /very/secret/path' } },
      { chunks: [' First', ' result'] },
    ],
  });
  const run = await engine.run(CALLER, { prompt: first, cwd: work, agent: 'scripted', idempotencyKey: 'k1' });
  const done = await settle(engine, CALLER, run.taskId);
  assert.equal(done.state, 'succeeded', String(done.error));
  const result = engine.result(CALLER, run.taskId);
  assert.equal(result.available && result.text, 'permission:denied First result');
  const status = engine.status(CALLER, run.taskId);
  assert.match(String(status.sessionId), /^test-/);
  const kinds: string[] = status.events.map((e) => e.kind);
  for (const kind of ['status', 'tool', 'permission']) assert.ok(kinds.includes(kind), `${kind} event stored`);
  assert.ok(!JSON.stringify(status.events).includes('secret'), 'no arguments, outputs or paths stored');

  // Continue: a new agent process loads the saved session and sees the earlier prompt.
  await engine.continue(CALLER, {
    taskId: run.taskId,
    prompt: JSON.stringify({ steps: [{ history: true }] }),
    idempotencyKey: 'k2',
  });
  const second = await settle(engine, CALLER, run.taskId);
  assert.equal(second.state, 'succeeded', String(second.error));
  assert.equal(second.sessionId, status.sessionId);
  const resumed = engine.result(CALLER, run.taskId);
  assert.equal(resumed.available && resumed.text, 'history:1');
  assert.equal(records().filter((r) => r.event === 'session/load').length, 1);

  // Cancel acknowledged by the agent.
  await engine.continue(CALLER, {
    taskId: run.taskId,
    prompt: JSON.stringify({ steps: [{ stall: true }] }),
    idempotencyKey: 'k3',
  });
  await waitForRecord(records, 'stalling', 1);
  engine.cancel(CALLER, run.taskId);
  const cancelled = await settle(engine, CALLER, run.taskId);
  assert.equal(cancelled.state, 'cancelled');
  let rounds = engine.status(CALLER, run.taskId).rounds as Array<{ abandoned?: boolean }>;
  assert.equal(rounds.at(-1)?.abandoned, false);

  // Cancel ignored: abandoned after the grace, and the agent's whole group (with a grandchild) is stopped.
  const stubborn = await engine.run(CALLER, {
    prompt: JSON.stringify({ steps: [{ spawnChild: true }, { ignoreCancel: true }] }),
    cwd: work,
    agent: 'stubborn',
    idempotencyKey: 'k4',
  });
  await waitForRecord(records, 'ignoring-cancel', 1);
  engine.cancel(CALLER, stubborn.taskId);
  const abandoned = await settle(engine, CALLER, stubborn.taskId);
  assert.equal(abandoned.state, 'cancelled');
  rounds = engine.status(CALLER, stubborn.taskId).rounds as Array<{ abandoned?: boolean }>;
  assert.equal(rounds.at(-1)?.abandoned, true);
  const stuck = records().filter((r) => r.event === 'ignoring-cancel')[0] as { pid: number };
  const grandchild = records().find((r) => r.event === 'grandchild') as { grandchildPid: number };
  assert.equal(pidAlive(stuck.pid), false);
  assert.equal(pidAlive(grandchild.grandchildPid), false);
});

/** Bounded poll on the agent's record file (it has no event to await from here). */
async function waitForRecord(records: () => Record<string, unknown>[], event: string, count: number): Promise<void> {
  await until(() => records().filter((r) => r.event === event).length >= count, {
    what: `the agent to record "${event}" ${count} time(s)`,
  });
}
