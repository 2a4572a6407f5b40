// Usage end to end (rule: usage-budgets): what an agent reports of tokens and cost is summed per round and per task in
// every view, and per caller and agent for a period — with the scripted ACP agent (its session's cumulative cost and
// the prompt response's token counts) and with the real Codex against the Responses mock's reported usage.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { reply } from '../../mock-models/responses.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { startResponsesMock } from '../../support/codex.ts';
import {
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  runGroup,
  startHub,
  writeCliConfig,
} from '../../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

interface WithUsage {
  taskId: string;
  usage?: Record<string, unknown>;
  rounds?: { n: number; usage?: Record<string, unknown> }[];
}

const today = () => new Date().toISOString().slice(0, 10);

async function totals(url: string, query: string): Promise<{ totals: unknown[] }> {
  const res = await fetch(`${url}/control/usage?${query}`, { headers: { Authorization: `Bearer ${CONTROL_TOKEN}` } });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { totals: unknown[] };
}

test('ACP: a round counts its rise of the session cost and the tokens reported; the task, agent_list and the period add up', async (t) => {
  const dir = tempDir(t, 'baton-hub-usage-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: scripted.entry } });
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  const run = await call<WithUsage>(alice, 'agent_run', {
    prompt: acpScript([
      { usageCost: 0.25 },
      { usageCost: 0.75 },
      { tokens: { input: 100, output: 20 } },
      { reply: 'a' },
    ]),
    cwd: work,
    idempotencyKey: 'u-1',
  });
  const first = await followToEnd(alice, run.taskId);
  assert.deepEqual(first.last.usage, {
    agent: 'scripted',
    inputTokens: 100,
    outputTokens: 20,
    costUsd: 0.75,
    reports: 3,
  });

  // The same session goes on in a new process, which reports the session's total (1.0): this round rose by 0.25.
  await call(alice, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ usageCost: 1.0 }, { tokens: { input: 10, output: 2 } }, { reply: 'b' }]),
    idempotencyKey: 'u-2',
  });
  await followToEnd(alice, run.taskId);
  const status = await call<WithUsage>(alice, 'agent_status', { taskId: run.taskId });
  assert.deepEqual(
    status.rounds!.map((r) => r.usage),
    [
      { agent: 'scripted', inputTokens: 100, outputTokens: 20, costUsd: 0.75, reports: 3 },
      { agent: 'scripted', inputTokens: 10, outputTokens: 2, costUsd: 0.25, reports: 2 },
    ],
  );
  const expected = { agent: 'scripted', inputTokens: 110, outputTokens: 22, costUsd: 1, reports: 5 };
  assert.deepEqual(status.usage, expected);
  const listed = await call<{ tasks: WithUsage[] }>(alice, 'agent_list', {});
  assert.deepEqual(listed.tasks.find((x) => x.taskId === run.taskId)!.usage, expected);

  // A round without any report carries no usage at all: nothing was reported, not zero.
  const quiet = await call<WithUsage>(bob, 'agent_run', {
    prompt: acpScript([{ tokens: { input: 7 } }, { reply: 'q' }]),
    cwd: work,
    idempotencyKey: 'u-3',
  });
  const q = await followToEnd(bob, quiet.taskId);
  assert.deepEqual(q.last.usage, { agent: 'scripted', inputTokens: 7, outputTokens: 0, reports: 1 });
  const silent = await call<WithUsage>(bob, 'agent_run', { prompt: 'hello', cwd: work, idempotencyKey: 'u-4' });
  assert.equal((await followToEnd(bob, silent.taskId)).last.usage, undefined);

  // The operator's totals for today, per caller and agent; a caller's own through the engine are alike.
  assert.deepEqual((await totals(hub.url, `from=${today()}&to=${today()}`)).totals, [
    { caller: 'alice', agent: 'scripted', usage: { inputTokens: 110, outputTokens: 22, costUsd: 1, reports: 5 } },
    { caller: 'bob', agent: 'scripted', usage: { inputTokens: 7, outputTokens: 0, reports: 1 } },
  ]);
  assert.deepEqual((await totals(hub.url, 'from=2000-01-01&to=2000-01-02')).totals, []);
  const bad = await fetch(`${hub.url}/control/usage?from=yesterday`, {
    headers: { Authorization: `Bearer ${CONTROL_TOKEN}` },
  });
  assert.equal(bad.status, 400);

  // `baton tasks`: a USAGE column once a listed task has usage; `tasks usage` the period's totals.
  const cli = writeCliConfig(hub, join(dir, 'cli', 'config.json'));
  const baton = (...args: string[]) =>
    runGroup(
      process.execPath,
      [join(REPO_ROOT, 'bin', 'baton.js'), '--config', cli, 'tasks', ...args],
      isolatedEnv(dir),
    );
  const listed2 = await baton('list');
  assert.equal(listed2.code, 0, listed2.stderr);
  assert.match(listed2.stdout, /^TASK\s+CALLER\s+AGENT\s+STATE\s+ROUND\s+USAGE\s+UPDATED$/m);
  assert.match(
    listed2.stdout,
    new RegExp(`${run.taskId}\\s+alice\\s+scripted\\s+succeeded\\s+2\\s+110 in · 22 out · \\$1\\.0000\\s`),
  );
  assert.match(listed2.stdout, new RegExp(`${silent.taskId}\\s+bob\\s+scripted\\s+succeeded\\s+1\\s+-\\s`));
  const period = await baton('usage');
  assert.equal(period.code, 0, period.stderr);
  assert.match(period.stdout, /^alice\s+scripted\s+110 in · 22 out · \$1\.0000$/m);

  // The dashboard: the task's usage and each round's, and the period's totals on the list page.
  const login = await fetch(`${hub.url}/ui/login`, {
    method: 'POST',
    headers: { origin: hub.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${CONTROL_TOKEN}`,
    redirect: 'manual',
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const ui = (path: string) => fetch(`${hub.url}${path}`, { headers: { cookie } });
  const task = await (await ui(`/ui/tasks/${run.taskId}`)).text();
  assert.match(task, /<dt>usage<\/dt><dd id="fact-usage">110 in · 22 out · \$1\.0000<\/dd>/);
  assert.match(task, /usage 10 in · 2 out · \$0\.2500/);
  const list = await (await ui(`/ui?from=${today()}&to=${today()}`)).text();
  assert.match(list, /<td>alice<\/td><td>scripted<\/td><td>110 in · 22 out · \$1\.0000<\/td>/);
  assert.match(list, /<td>bob<\/td><td>scripted<\/td><td>7 in · 0 out<\/td>/);
  const old = await (await ui('/ui?from=2000-01-01&to=2000-01-31')).text();
  assert.match(old, /Usage from 2000-01-01 to 2000-01-31 \(UTC\)[\s\S]*No usage reported/);
  assert.equal((await ui('/ui?from=2000-02-01&to=2000-01-01')).status, 400);
});

test('Codex: the usage the Responses mock reported is what the round, the task and the period show', async (t) => {
  const mock = await startResponsesMock(t);
  const dir = tempDir(t, 'baton-hub-usage-codex-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
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
  mock.push(reply('first', { usage: { inputTokens: 1234, outputTokens: 56 } }));
  const run = await call<WithUsage>(alice, 'agent_run', { prompt: 'one', cwd: work, idempotencyKey: 'c-1' });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  mock.push(reply('second', { usage: { inputTokens: 2000, outputTokens: 4 } }));
  await call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'two', idempotencyKey: 'c-2' });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  const status = await call<WithUsage>(alice, 'agent_status', { taskId: run.taskId });
  assert.deepEqual(
    status.rounds!.map((r) => [r.usage?.inputTokens, r.usage?.outputTokens, r.usage?.costUsd]),
    [
      [1234, 56, undefined],
      [2000, 4, undefined],
    ],
    'Codex reports tokens, no cost',
  );
  assert.deepEqual([status.usage?.agent, status.usage?.inputTokens, status.usage?.outputTokens], ['codex', 3234, 60]);
  const period = (await totals(hub.url, `from=${today()}&to=${today()}`)).totals as {
    usage: { inputTokens: number };
  }[];
  assert.equal(period[0]!.usage.inputTokens, 3234);
});
