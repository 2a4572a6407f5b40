// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The engine's operator side that the dashboard and `baton tasks` use, with the FAKE in-process agent
// (test/support/fake-agent.ts): an operator's cancel is recorded as the operator's, a caller's stays the caller's; the
// overview lists every caller's tasks newest first with the start of the first prompt, pages and filters; prompts()
// returns each round's prompt cut to a bound with its full length.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Engine, OPERATOR } from '../../src/core/engine.ts';
import { engineFor, settle } from '../support/engine.ts';
import { FakeAgent } from '../support/fake-agent.ts';
import { WaitBudget } from '../support/poll.ts';
import { tempDir } from '../support/tmp.ts';

function setup(t: Parameters<typeof tempDir>[0]) {
  const base = tempDir(t);
  const root = join(base, 'root');
  const stateDir = join(base, 'state');
  mkdirSync(root);
  mkdirSync(stateDir);
  const { engine } = engineFor(t, { agents: { fake: new FakeAgent() }, roots: [root], stateDir, cancelGraceMs: 300 });
  let keys = 0;
  const run = async (caller: string, prompt: string) =>
    (await engine.run(caller, { prompt, cwd: root, idempotencyKey: `k${keys++}` })).taskId;
  return { engine, run };
}

async function running(engine: Engine, taskId: string): Promise<void> {
  const budget = new WaitBudget(`task ${taskId} to run`);
  let after = 0;
  for (;;) {
    const w = await engine.wait(OPERATOR, taskId, after, budget.left(25_000));
    if (w.events.some((e) => e.kind === 'lifecycle' && e.state === 'running')) return;
    after = w.nextCursor;
  }
}

test('an operator cancel is recorded as the operator’s, before and during a round; a caller’s as the caller’s', async (t) => {
  const { engine, run } = setup(t);
  const held = await run('alice', 'hold');
  await running(engine, held);
  const queued = await run('alice', 'reply never');
  engine.cancel(OPERATOR, queued);
  assert.equal((await settle(engine, 'alice', queued)).error, 'cancelled by the operator before it started');
  engine.cancel(OPERATOR, held);
  assert.equal((await settle(engine, 'alice', held)).error, 'cancelled by the operator');

  const own = await run('alice', 'hold');
  await running(engine, own);
  engine.cancel('alice', own);
  assert.equal((await settle(engine, 'alice', own)).error, 'cancelled by the caller');
});

test('overview: every caller newest first, with the first prompt’s start, paged and filtered; prompts()', async (t) => {
  const { engine, run } = setup(t);
  const long = `reply ${'x'.repeat(500)}`;
  const callers = ['alice', 'bob', 'alice'];
  const ids = [await run('alice', 'reply one'), await run('bob', 'reply <b>two</b>'), await run('alice', long)];
  for (const [i, id] of ids.entries()) await settle(engine, callers[i]!, id);

  const all = engine.overview('', undefined, 10);
  assert.deepEqual(
    all.tasks.map((x) => [x.taskId, x.caller]),
    [
      [ids[2], 'alice'],
      [ids[1], 'bob'],
      [ids[0], 'alice'],
    ],
  );
  assert.equal(all.tasks[0]!.promptStart, long.slice(0, 200), 'the start only');
  assert.equal(all.tasks[1]!.promptStart, 'reply <b>two</b>', 'as stored: escaping is the page’s job');
  assert.equal(all.nextCursor, null);

  const p1 = engine.overview('', undefined, 2);
  assert.deepEqual(
    p1.tasks.map((x) => x.taskId),
    [ids[2], ids[1]],
  );
  const p2 = engine.overview('', p1.nextCursor!, 2);
  assert.deepEqual(
    p2.tasks.map((x) => x.taskId),
    [ids[0]],
  );
  assert.equal(p2.nextCursor, null);
  assert.throws(() => engine.overview('', 't-nosuchtask0', 2), /cursor/);

  // Case-insensitive, over the caller, the prompt start and the rest.
  assert.deepEqual(
    engine.overview('BOB', undefined, 10).tasks.map((x) => x.taskId),
    [ids[1]],
  );
  assert.deepEqual(
    engine.overview('reply one', undefined, 10).tasks.map((x) => x.taskId),
    [ids[0]],
  );
  assert.deepEqual(engine.overview('no such text', undefined, 10).tasks, []);

  await engine.continue('alice', { taskId: ids[0]!, prompt: 'reply again', idempotencyKey: 'again' });
  await settle(engine, 'alice', ids[0]!);
  assert.deepEqual(engine.prompts(ids[0]!, 5), [
    { n: 1, text: 'reply', chars: 9 },
    { n: 2, text: 'reply', chars: 11 },
  ]);
  assert.throws(() => engine.prompts('t-nosuchtask0', 5), /no task/);
});
