// Run caps (rule: run-caps): the admission queue in locks.ts with the caps of caps.ts, then the engine's views and
// health of rounds held back by a cap, with the FAKE in-process agent (test/support/fake-agent.ts).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { RunCaps } from '../../src/core/caps.ts';
import { Engine } from '../../src/core/engine.ts';
import { WorkspaceLocks } from '../../src/core/locks.ts';
import { Store } from '../../src/core/store.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { settle } from '../support/engine.ts';
import { FakeAgent } from '../support/fake-agent.ts';
import { until } from '../support/poll.ts';
import { tempDir } from '../support/tmp.ts';

const scope = (dir: string) => ({ dir, worktree: null });

test('the hub-wide cap holds rounds back in admission order; a released slot goes to the earliest waiter', async () => {
  const locks = new WorkspaceLocks(new RunCaps({ maxRunning: 2 }));
  const granted: string[] = [];
  const take = (id: string, dir: string | null) =>
    locks.acquire(id, dir === null ? null : scope(dir), undefined, 'a').then(() => granted.push(id));
  const all = ['t1', 't2', 't3', 't4', 't5'].map((id, i) => take(id, i === 3 ? null : `/w/${id}`));
  await Promise.resolve();
  assert.deepEqual(granted, ['t1', 't2']);
  assert.deepEqual(locks.counts(), { queued: 3, capped: 3 });
  assert.deepEqual(locks.waiting('t3'), {
    position: 1,
    waitingFor: 'maxRunning',
    why: '2 of 2 rounds running on this hub (limits.maxRunning)',
  });
  assert.equal(locks.waiting('t5')?.position, 3);
  assert.equal(locks.waiting('t1'), undefined, 'a granted round is not waiting');
  locks.release('t2');
  await Promise.resolve();
  assert.deepEqual(granted, ['t1', 't2', 't3']);
  locks.release('t1');
  locks.release('t3');
  await Promise.resolve();
  // A worktree-isolated round (no scope) needs a slot all the same.
  assert.deepEqual(granted, ['t1', 't2', 't3', 't4', 't5']);
  locks.release('t4');
  locks.release('t5');
  await Promise.all(all);
  assert.deepEqual(locks.counts(), { queued: 0, capped: 0 });
});

test("an agent's own cap holds only that agent's rounds; a capped round keeps its place in its workspace", async () => {
  const caps = new RunCaps({ maxRunning: 10, agentMaxRunning: { slow: 1 } });
  const locks = new WorkspaceLocks(caps);
  const granted: string[] = [];
  const take = (id: string, dir: string, agent: string) =>
    void locks.acquire(id, scope(dir), undefined, agent).then(() => granted.push(id));
  take('s1', '/w/a', 'slow');
  take('s2', '/w/b', 'slow');
  take('f1', '/w/c', 'fast');
  // Behind s2 in the same dir: s2 waits on its agent's cap, so f2 waits on the workspace, not past s2.
  take('f2', '/w/b', 'fast');
  await Promise.resolve();
  assert.deepEqual(granted, ['s1', 'f1']);
  assert.deepEqual(locks.waiting('s2'), {
    position: 1,
    waitingFor: 'agentMaxRunning',
    why: '1 of 1 rounds of agent "slow" running (agents.slow.maxRunning)',
  });
  assert.equal(locks.waiting('f2')?.waitingFor, 'workspace');
  assert.deepEqual(locks.counts(), { queued: 2, capped: 1 });
  assert.deepEqual(caps.snapshot(), {
    running: 2,
    maxRunning: 10,
    agents: { fast: { running: 1 }, slow: { running: 1, maxRunning: 1 } },
  });
  locks.release('s1');
  await Promise.resolve();
  assert.deepEqual(granted, ['s1', 'f1', 's2']);
  locks.release('s2');
  await Promise.resolve();
  assert.deepEqual(granted, ['s1', 'f1', 's2', 'f2']);
});

test('engine: rounds past maxRunning stay queued with their position and reason, cancel withdraws one, health counts them', async (t) => {
  const base = tempDir(t);
  const root = join(base, 'root');
  const stateDir = join(base, 'state');
  mkdirSync(stateDir);
  for (const d of ['a', 'b', 'c', 'd']) mkdirSync(join(root, d), { recursive: true });
  const agent = new FakeAgent();
  const store = new Store(join(stateDir, 'baton.db'));
  const engine = new Engine({
    store,
    agents: new Map([['fake', agent]]),
    reachable: () => ['fake'],
    roots: [root],
    stateDir,
    logger: silentLogger,
    idleTimeoutMs: 0,
    hardTimeoutMs: 0,
    cancelGraceMs: 2_000,
    maxRunning: 2,
  });
  t.after(async () => {
    await engine.close();
    store.close();
  });
  const ids: string[] = [];
  for (const d of ['a', 'b', 'c', 'd']) {
    const v = await engine.run('alice', { prompt: `gate ${d}`, cwd: join(root, d), idempotencyKey: d });
    ids.push(v.taskId);
  }
  await until(() => agent.opened.length === 2 && engine.health().queued === 2, { what: 'two running, two queued' });
  assert.equal(agent.maxConcurrent <= 2, true);
  const third = engine.status('alice', ids[2]!);
  assert.equal(third.state, 'queued');
  assert.deepEqual(third.queue, {
    position: 1,
    waitingFor: 'maxRunning',
    why: '2 of 2 rounds running on this hub (limits.maxRunning)',
  });
  assert.equal((engine.list('alice', undefined).tasks[3]!.queue as { position: number }).position, 2);
  const h = engine.health();
  assert.equal(h.capped, 2);
  assert.deepEqual(h.caps, { running: 2, maxRunning: 2, agents: { fake: { running: 2 } } });
  // Cancelling the third withdraws it; the fourth moves up.
  assert.equal(engine.cancel('alice', ids[2]!).state, 'cancelled');
  assert.equal((engine.status('alice', ids[3]!).queue as { position: number }).position, 1);
  agent.gate('a').open();
  assert.equal((await settle(engine, 'alice', ids[0]!)).state, 'succeeded');
  agent.gate('b').open();
  agent.gate('d').open();
  assert.equal((await settle(engine, 'alice', ids[3]!)).state, 'succeeded');
  assert.equal((await settle(engine, 'alice', ids[1]!)).state, 'succeeded');
  assert.equal(agent.maxConcurrent, 2, 'never more than the cap at once');
  assert.equal(agent.opened.length, 3, 'the cancelled round never started');
  assert.equal(engine.status('alice', ids[0]!).queue, undefined, 'an ended task has no queue place');
  assert.deepEqual(engine.health().caps.running, 0);
});
