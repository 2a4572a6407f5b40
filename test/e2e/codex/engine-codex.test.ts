// The task engine driving the real Codex agent: run → result → continue (a fresh app-server resumes the thread and the
// model sees the earlier history) → cancel of a stalled round. The MCP-level hub e2e builds on this.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Agent } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { ensurePrivateDir } from '../../../src/lib/private-fs.ts';
import { commentaryThenReply, reply, stalledReply, userTexts } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { codexTestDir, startResponsesMock } from '../../support/codex.ts';
import { engineFor, settle } from '../../support/engine.ts';

const CALLER = 'tester';

test('engine + codex agent: run, continue in a fresh process, cancel', async (t) => {
  const mock = await startResponsesMock(t);
  const root = codexTestDir('baton-codex-engine-');
  const stateDir = ensurePrivateDir(join(root, 'state'));
  const work = ensurePrivateDir(join(root, 'work'));
  const agent: Agent = createAgent(
    'codex',
    {
      kind: 'codex',
      command: [process.execPath, bins.codex()],
      model: 'mock-model',
      modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
      userCodexHome: join(root, 'no-user-login'),
      // The test asserts the cancel is acknowledged: the grace bounds Codex's answer (milliseconds when idle), so it
      // must outlast a loaded machine; no step waits it out.
      cancelGraceMs: 30_000,
    },
    { stateDir, logger: silentLogger },
  );
  const { engine } = engineFor(t, { agents: { codex: agent }, roots: [root], stateDir });
  t.after(() => rmSync(root, { recursive: true, force: true }));

  mock.push(commentaryThenReply('Reading the task', 'First result'));
  const run = await engine.run(CALLER, { prompt: 'first task', cwd: work, idempotencyKey: 'k1' });
  const done = await settle(engine, CALLER, run.taskId);
  assert.equal(done.state, 'succeeded', String(done.error));
  const result = engine.result(CALLER, run.taskId);
  assert.equal(result.available && result.text, 'First result');
  const status = engine.status(CALLER, run.taskId);
  assert.match(String(status.sessionId), /^[0-9a-f-]{36}$/);
  assert.ok(status.events.some((e) => e.kind === 'commentary'));

  mock.push(reply('Second result'));
  const before = mock.turns.length;
  await engine.continue(CALLER, { taskId: run.taskId, prompt: 'follow-up', idempotencyKey: 'k2' });
  const second = await settle(engine, CALLER, run.taskId);
  assert.equal(second.state, 'succeeded', String(second.error));
  assert.equal(second.sessionId, status.sessionId);
  const seen = await mock.waitForTurn(before);
  assert.deepEqual(
    userTexts(seen).filter((text) => text === 'first task' || text === 'follow-up'),
    ['first task', 'follow-up'],
  );

  const gate = new Gate();
  t.after(() => gate.open());
  mock.push(stalledReply(gate));
  const stalledAt = mock.turns.length;
  await engine.continue(CALLER, { taskId: run.taskId, prompt: 'stall now', idempotencyKey: 'k3' });
  await mock.waitForTurn(stalledAt);
  engine.cancel(CALLER, run.taskId);
  const cancelled = await settle(engine, CALLER, run.taskId);
  assert.equal(cancelled.state, 'cancelled');
  const rounds = engine.status(CALLER, run.taskId).rounds as Array<{ abandoned?: boolean }>;
  assert.equal(rounds.at(-1)?.abandoned, false);
});
