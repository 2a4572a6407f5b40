// Budgets end to end (rule: usage-budgets): a round that passes a per-round budget is cancelled through the cancel
// path and fails naming it; a caller's own budget replaces the hub-wide one; a caller whose usage today reached a daily
// budget gets new rounds refused with the budget and when it resets. The scripted ACP agent (its reported cost and
// tokens) and the real Codex against the Responses mock's reported usage.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { reply } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import { startResponsesMock } from '../../support/codex.ts';
import { call, connectCaller, followToEnd, startHub, TEST_CALLERS } from '../../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

interface View {
  taskId: string;
  state: string;
  error: string | null;
  usage?: Record<string, unknown>;
}

test('ACP: a round past maxCostUsdPerRound is cancelled and fails naming it; a caller budget overrides; a daily cap refuses new rounds', async (t) => {
  const dir = tempDir(t, 'baton-hub-budgets-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: scripted.entry },
    limits: { maxCostUsdPerRound: 0.5 },
    callers: {
      alice: { token: TEST_CALLERS.alice, limits: { maxTokensPerDay: 100 } },
      bob: { token: TEST_CALLERS.bob, limits: { maxCostUsdPerRound: 5 } },
    },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  // Mid-turn: the agent reports $0.60 and keeps working; the hub cancels it, the agent acknowledges, the round fails.
  const over = await call<View>(alice, 'agent_run', {
    prompt: acpScript([{ usageCost: 0.6 }, { stall: true }]),
    cwd: work,
    idempotencyKey: 'b-1',
  });
  const ended = await followToEnd(alice, over.taskId);
  assert.equal(ended.state, 'failed');
  assert.match(String(ended.last.error), /^budget exceeded: maxCostUsdPerRound \(\$0\.5; the round reported \$0\.6\)$/);
  assert.deepEqual(
    ended.events.filter((e) => e.kind === 'cancel_requested').map((e) => [e.by, e.budget]),
    [['budget', 'maxCostUsdPerRound ($0.5; the round reported $0.6)']],
  );
  const seen = readFileSync(scripted.record, 'utf8');
  assert.match(seen, /"event":"session\/cancel"/, 'the agent was asked to stop, as a cancel asks');
  assert.deepEqual(ended.last.usage, { agent: 'scripted', costUsd: 0.6, reports: 1 });

  // Bob's own budget ($5) replaces the hub-wide one.
  const fine = await call<View>(bob, 'agent_run', {
    prompt: acpScript([{ usageCost: 0.6 }, { reply: 'ok' }]),
    cwd: work,
    idempotencyKey: 'b-2',
  });
  assert.equal((await followToEnd(bob, fine.taskId)).state, 'succeeded');

  // Alice's daily token budget: a round that reaches it still ends as it would; the next run and continue are refused.
  const heavy = await call<View>(alice, 'agent_run', {
    prompt: acpScript([{ tokens: { input: 90, output: 20 } }, { reply: 'heavy' }]),
    cwd: work,
    idempotencyKey: 'b-3',
  });
  assert.equal((await followToEnd(alice, heavy.taskId)).state, 'succeeded');
  const before = await call<{ tasks: View[] }>(alice, 'agent_list', {});
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  const refusal = new RegExp(
    `^daily budget reached: caller "alice" used 110 of 100 tokens today \\(maxTokensPerDay\\); it resets at ${tomorrow}T00:00:00Z$`,
  );
  await assert.rejects(call(alice, 'agent_run', { prompt: 'more', cwd: work, idempotencyKey: 'b-4' }), (err: Error) =>
    refusal.test(err.message),
  );
  await assert.rejects(
    call(alice, 'agent_continue', { taskId: heavy.taskId, prompt: 'more', idempotencyKey: 'b-5' }),
    (err: Error) => refusal.test(err.message),
  );
  assert.deepEqual(await call(alice, 'agent_list', {}), before, 'nothing was recorded');
  // A retry of an admission made before the cap answers as before; bob, under no daily budget, goes on.
  assert.equal(
    (
      await call<View>(alice, 'agent_run', {
        prompt: acpScript([{ tokens: { input: 90, output: 20 } }, { reply: 'heavy' }]),
        cwd: work,
        idempotencyKey: 'b-3',
      })
    ).taskId,
    heavy.taskId,
  );
  const more = await call<View>(bob, 'agent_run', { prompt: 'hi', cwd: work, idempotencyKey: 'b-6' });
  assert.equal((await followToEnd(bob, more.taskId)).state, 'succeeded');
});

test('Codex: a round whose reported tokens pass maxTokensPerRound fails naming the budget', async (t) => {
  const mock = await startResponsesMock(t);
  const dir = tempDir(t, 'baton-hub-budgets-codex-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    limits: { maxTokensPerRound: 1000 },
    agents: {
      codex: {
        kind: 'codex',
        command: [process.execPath, bins.codex()],
        model: 'mock-model',
        modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
        userCodexHome: join(dir, 'no-user-login'),
        cancelGraceMs: 2_000,
      },
    },
  });
  const alice = await connectCaller(t, hub, 'alice');
  mock.push(reply('small', { usage: { inputTokens: 600, outputTokens: 40 } }));
  const ok = await call<View>(alice, 'agent_run', { prompt: 'one', cwd: work, idempotencyKey: 'c-1' });
  assert.equal((await followToEnd(alice, ok.taskId)).state, 'succeeded');
  mock.push(reply('big', { usage: { inputTokens: 1234, outputTokens: 56 } }));
  const big = await call<View>(alice, 'agent_run', { prompt: 'two', cwd: work, idempotencyKey: 'c-2' });
  const ended = await followToEnd(alice, big.taskId);
  assert.equal(ended.state, 'failed');
  assert.equal(ended.last.error, 'budget exceeded: maxTokensPerRound (1000 tokens; the round reported 1290)');
  assert.deepEqual(
    [(ended.last.usage as View['usage'])?.inputTokens, (ended.last.usage as View['usage'])?.outputTokens],
    [1234, 56],
  );
});
