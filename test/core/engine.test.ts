// Engine unit tests with the FAKE in-process agent (test/support/fake-agent.ts); the adapters are tested against the
// real agent binaries elsewhere.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Engine, EngineError, EVENT_PAGE_TEXT_CODE_POINTS, newTaskId } from '../../src/core/engine.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { isGroupAlive, spawnGroup } from '../../src/lib/process-group.ts';
import { Gate } from '../mock-models/server.ts';
import { engineFor, settle } from '../support/engine.ts';
import { FakeAgent } from '../support/fake-agent.ts';
import { git } from '../support/git.ts';
import { until, WaitBudget } from '../support/poll.ts';
import { tempDir } from '../support/tmp.ts';

function setup(
  t: Parameters<typeof tempDir>[0],
  opts: { idleTimeoutMs?: number; cancelGraceMs?: number; newsLingerMs?: number } = {},
) {
  const base = tempDir(t);
  const root = join(base, 'root');
  const stateDir = join(base, 'state');
  mkdirSync(root);
  mkdirSync(stateDir);
  const agent = new FakeAgent();
  const { engine, store } = engineFor(t, {
    agents: { fake: agent },
    roots: [root],
    stateDir,
    idleTimeoutMs: opts.idleTimeoutMs,
    cancelGraceMs: opts.cancelGraceMs ?? 2_000,
    newsLingerMs: opts.newsLingerMs,
  });
  let keys = 0;
  const run = (prompt: string, cwd = root, extra: Partial<Parameters<Engine['run']>[1]> = {}) =>
    engine.run('alice', { prompt, cwd, idempotencyKey: `k${keys++}`, ...extra });
  return { base, root, stateDir, store, agent, engine, run };
}

const settled = (engine: Engine, taskId: string) => settle(engine, 'alice', taskId);

/** Waits for a lifecycle state, or with state 'session' until the agent session is open and its turn started. */
async function reaches(engine: Engine, taskId: string, state: string): Promise<void> {
  const budget = new WaitBudget(`task ${taskId} to reach ${state}`);
  let after = 0;
  for (;;) {
    const w = await engine.wait('alice', taskId, after, budget.left(25_000));
    if (w.events.some((e) => (e.kind === 'lifecycle' && e.state === state) || e.kind === state)) return;
    after = w.nextCursor;
  }
}

test('a task runs to succeeded with lifecycle events, sanitised events and a paged result', async (t) => {
  const { engine, run } = setup(t);
  const task = await run('events');
  const done = await settled(engine, task.taskId);
  assert.equal(done.state, 'succeeded');
  const status = engine.status('alice', task.taskId, 0, 500);
  const kinds: string[] = status.events.map((e) => e.kind);
  assert.deepEqual(
    status.events.filter((e) => e.kind === 'lifecycle').map((e) => e.state),
    ['queued', 'running', 'succeeded'],
  );
  for (const k of ['session', 'status', 'tool', 'permission', 'commentary', 'usage']) assert.ok(kinds.includes(k), k);
  const statusEvent = status.events.find((e) => e.kind === 'status')!;
  assert.equal(statusEvent.text, 'step one two', 'control sequences stripped and whitespace normalised');
  // Cursors increase by one, strictly.
  for (const [i, e] of status.events.entries()) assert.equal(e.seq, i + 1);
  assert.deepEqual(status.rounds[0]!.gitBefore, { git: false, reason: 'not a git work tree' });
  const result = engine.result('alice', task.taskId);
  assert.equal(result.available && result.text, 'done');
  assert.equal(result.available && result.done, true);
});

test("a round's before-snapshot is stored before the agent gets its turn, in a git work tree too", async (t) => {
  const { root, store, agent, engine } = setup(t);
  const repo = join(root, 'repo');
  mkdirSync(repo);
  git(repo, 'init', '-q');
  const seen: unknown[] = [];
  // Read from the store itself: an engine read would write what is queued first.
  agent.onTurn = () => seen.push(store.roundSummary(store.listTasks('alice', 0, 10).tasks[0]!.id, 1)?.before);
  const task = await engine.run('alice', { prompt: 'reply hi', cwd: repo, idempotencyKey: 'before-turn' });
  assert.equal((await settled(engine, task.taskId)).state, 'succeeded');
  assert.equal(seen.length, 1);
  assert.equal(
    (seen[0] as { git: boolean } | null)?.git,
    true,
    `stored when the turn began: ${JSON.stringify(seen[0])}`,
  );
});

test('a continued round that resumes its session records that session once, not again', async (t) => {
  const { engine, run } = setup(t);
  const task = await run('reply one');
  await settled(engine, task.taskId);
  await engine.continue('alice', { taskId: task.taskId, prompt: 'reply two', idempotencyKey: 'again' });
  assert.equal((await settled(engine, task.taskId)).state, 'succeeded');
  const events = engine.status('alice', task.taskId, 0, 500).events;
  assert.deepEqual(
    events.filter((e) => e.kind === 'session').map((e) => e.round),
    [1],
    `session events: ${JSON.stringify(events.filter((e) => e.kind === 'session'))}`,
  );
});

test('idempotency: the same key and payload return the same task, a different payload is refused, nothing runs twice', async (t) => {
  const { engine, root, agent } = setup(t);
  const a = await engine.run('alice', { prompt: 'reply one', cwd: root, idempotencyKey: 'same' });
  const b = await engine.run('alice', { prompt: 'reply one', cwd: root, idempotencyKey: 'same' });
  assert.equal(a.taskId, b.taskId);
  await assert.rejects(
    () => engine.run('alice', { prompt: 'reply two', cwd: root, idempotencyKey: 'same' }),
    (err: EngineError) => err.code === 'conflict' && /different request/.test(err.message),
  );
  await settled(engine, a.taskId);
  assert.equal(agent.opened.length, 1);
  const c = await engine.continue('alice', { taskId: a.taskId, prompt: 'reply again', idempotencyKey: 'c1' });
  const d = await engine.continue('alice', { taskId: a.taskId, prompt: 'reply again', idempotencyKey: 'c1' });
  assert.equal(c.round, 2);
  assert.equal(d.round, 2);
  await settled(engine, a.taskId);
  assert.equal(agent.opened.length, 2);
});

test('roundsInFlight counts rounds running or waiting for their lock, and none once they have ended', async (t) => {
  // The daemon gives memory back only while this is 0 (lib/idle-memory.ts).
  const { engine, run, agent } = setup(t);
  assert.equal(engine.roundsInFlight(), 0);
  const a = await run('gate a');
  const b = await run('reply after a'); // the same dir: it waits for a's lock
  await reaches(engine, a.taskId, 'running');
  assert.equal(engine.status('alice', b.taskId).state, 'queued');
  assert.equal(engine.roundsInFlight(), 2);
  agent.gate('a').open();
  assert.equal((await settled(engine, a.taskId)).state, 'succeeded');
  assert.equal((await settled(engine, b.taskId)).state, 'succeeded');
  // A round leaves the engine a few microtasks after its end is recorded (the lock goes first).
  await until(() => engine.roundsInFlight() === 0, { what: 'both rounds to leave the engine' });
});

test('continue resumes the saved session and is refused while a round runs', async (t) => {
  const { engine, run, agent } = setup(t);
  const task = await run('gate first');
  await reaches(engine, task.taskId, 'running');
  await assert.rejects(
    () => engine.continue('alice', { taskId: task.taskId, prompt: 'reply x', idempotencyKey: 'c' }),
    (err: EngineError) => err.code === 'conflict',
  );
  agent.gate('first').open();
  const first = await settled(engine, task.taskId);
  assert.equal(first.state, 'succeeded');
  await engine.continue('alice', { taskId: task.taskId, prompt: 'reply second answer', idempotencyKey: 'c2' });
  const second = await settled(engine, task.taskId);
  assert.equal(second.state, 'succeeded');
  assert.equal(agent.opened[1]!.resume, first.sessionId);
  const r = engine.result('alice', task.taskId);
  assert.equal(r.available && r.text, 'second answer');
});

test('cancel: acknowledged, unacknowledged (abandoned, group stopped), and queued work that never starts', async (t) => {
  const { engine, run, root } = setup(t, { cancelGraceMs: 300 });
  const held = await run('hold');
  await reaches(engine, held.taskId, 'running');
  const queuedBehind = await run('reply never', root);
  engine.cancel('alice', queuedBehind.taskId);
  const qb = await settled(engine, queuedBehind.taskId);
  assert.equal(qb.state, 'cancelled');
  assert.equal(engine.status('alice', queuedBehind.taskId).rounds[0]!.startedAt, null);

  engine.cancel('alice', held.taskId);
  const h = await settled(engine, held.taskId);
  assert.equal(h.state, 'cancelled');
  assert.equal(engine.status('alice', held.taskId).rounds[0]!.abandoned, false);

  const stubborn = await run('ignore-cancel');
  await reaches(engine, stubborn.taskId, 'session');
  engine.cancel('alice', stubborn.taskId);
  const s = await settled(engine, stubborn.taskId);
  assert.equal(s.state, 'cancelled');
  assert.equal(engine.status('alice', stubborn.taskId).rounds[0]!.abandoned, true);
});

test('the workspace lock is held until the task process group has exited', async (t) => {
  const { engine, run } = setup(t, { cancelGraceMs: 500 });
  const a = await run('spawn');
  await reaches(engine, a.taskId, 'running');
  const budget = new WaitBudget('the task to report its process group');
  let after = 0;
  let pgid = 0;
  while (!pgid) {
    const w = await engine.wait('alice', a.taskId, after, budget.left(25_000));
    after = w.nextCursor;
    const ev = w.events.find((e) => e.kind === 'status' && String(e.text).startsWith('spawned'));
    if (ev?.kind === 'status') pgid = Number(ev.text.split(' ')[1]);
  }
  const b = await run('reply next');
  engine.cancel('alice', a.taskId);
  await settled(engine, b.taskId);
  // b could only start after a's group was gone.
  assert.equal(isGroupAlive(pgid), false);
  const bStatus = engine.status('alice', b.taskId);
  const aStatus = engine.status('alice', a.taskId);
  assert.ok(bStatus.rounds[0]!.startedAt! >= aStatus.rounds[0]!.endedAt!);
});

test('locks: same dir and same git work tree serialise in order; sibling dirs and worktree isolation run in parallel', async (t) => {
  const { engine, run, root, agent } = setup(t);
  git(root, 'init', '-q');
  writeFileSync(join(root, 'f.txt'), 'x');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'init');
  mkdirSync(join(root, 'sub'));
  // Same repository, different subdirectories: one work tree, so they serialise.
  const a = await run('gate a', root);
  const b = await run('gate b', join(root, 'sub'));
  await reaches(engine, a.taskId, 'running');
  // A worktree-isolated task in the same repository runs alongside.
  const w = await run('gate w', root, { isolation: 'worktree' });
  await reaches(engine, w.taskId, 'running');
  assert.equal(engine.status('alice', b.taskId).state, 'queued');
  const wStatus = engine.status('alice', w.taskId);
  assert.notEqual(wStatus.workdir, root);
  assert.match(
    execFileSync('git', ['-C', root, 'branch', '--list', `baton/${w.taskId}`], { encoding: 'utf8' }),
    /baton\//,
  );
  agent.gate('a').open();
  await reaches(engine, b.taskId, 'running');
  agent.gate('b').open();
  agent.gate('w').open();
  await settled(engine, b.taskId);
  await settled(engine, w.taskId);
  const aRound = engine.status('alice', a.taskId).rounds[0]!;
  const bRound = engine.status('alice', b.taskId).rounds[0]!;
  assert.ok(bRound.startedAt! >= aRound.endedAt!, 'b started only after a ended');

  // Sibling directories outside any repository run in parallel.
  const { engine: e2, agent: ag2, root: r2 } = setup(t);
  mkdirSync(join(r2, 'x'));
  mkdirSync(join(r2, 'y'));
  const x = await e2.run('alice', { prompt: 'gate x', cwd: join(r2, 'x'), idempotencyKey: 'x' });
  const y = await e2.run('alice', { prompt: 'gate y', cwd: join(r2, 'y'), idempotencyKey: 'y' });
  await reaches(e2, x.taskId, 'running');
  await reaches(e2, y.taskId, 'running');
  // Both hold their gates at once: neither waited for the other.
  assert.equal(e2.status('alice', x.taskId).state, 'running');
  assert.equal(e2.status('alice', y.taskId).state, 'running');
  ag2.gate('x').open();
  ag2.gate('y').open();
  await settled(e2, x.taskId);
  await settled(e2, y.taskId);
});

test('cwd must resolve inside a root: outside, symlink escape, .. escape and missing dirs are refused, nothing is stored', async (t) => {
  const { engine, root, base, store } = setup(t);
  const outside = join(base, 'outside');
  mkdirSync(outside);
  symlinkSync(outside, join(root, 'link'));
  const bad = [outside, join(root, 'link'), join(root, '..', 'outside'), join(root, 'missing'), 'relative/path'];
  for (const cwd of bad) {
    await assert.rejects(() => engine.run('alice', { prompt: 'reply x', cwd, idempotencyKey: cwd }), EngineError, cwd);
  }
  assert.equal(store.listTasks('alice', 0, 10).tasks.length, 0);
});

test('another caller cannot see, continue or cancel a task', async (t) => {
  const { engine, run } = setup(t);
  const task = await run('reply mine');
  await settled(engine, task.taskId);
  for (const op of [
    () => engine.status('mallory', task.taskId),
    () => engine.result('mallory', task.taskId),
    () => engine.cancel('mallory', task.taskId),
  ]) {
    assert.throws(op, (err: EngineError) => err.code === 'not_found');
  }
  await assert.rejects(
    () => engine.continue('mallory', { taskId: task.taskId, prompt: 'x', idempotencyKey: 'm' }),
    (err: EngineError) => err.code === 'not_found',
  );
  assert.equal(engine.list('mallory', undefined).tasks.length, 0);
});

test('wait returns at once when events exist, and times out with none', async (t) => {
  const { engine, run, agent } = setup(t);
  const task = await run('gate w');
  await reaches(engine, task.taskId, 'session');
  const status = engine.status('alice', task.taskId);
  const idle = await engine.wait('alice', task.taskId, status.nextCursor, 50);
  assert.equal(idle.timedOut, true);
  assert.equal(idle.events.length, 0);
  const pending = engine.wait('alice', task.taskId, status.nextCursor, 25_000);
  agent.gate('w').open();
  const woke = await pending;
  assert.equal(woke.timedOut, false);
  assert.ok(woke.events.length > 0);
});

/** Longer than any wait's bound: news alone never answers a wait, so only a lifecycle change can. */
const NEVER_ALONE_MS = 10 * 60_000;

test('a wait after running answers the session record, the answer and the end together, not the session alone (rule: event-cursor)', async (t) => {
  const { engine, run, agent } = setup(t, { newsLingerMs: NEVER_ALONE_MS });
  agent.opening = new Gate();
  const task = await run('reply together');
  await reaches(engine, task.taskId, 'running');
  const cursor = engine.status('alice', task.taskId).nextCursor;
  const pending = engine.wait('alice', task.taskId, cursor, 25_000);
  agent.opening.open(); // the agent records its session, answers and ends
  const w = await pending;
  assert.deepEqual(
    w.events.map((e) => (e.kind === 'lifecycle' ? `lifecycle ${e.state}` : e.kind)),
    ['session', 'message', 'lifecycle succeeded'],
    'one answer: the session record did not wake the wait by itself',
  );
  assert.equal(w.state, 'succeeded');
  assert.deepEqual(w.result, { chars: 8, preview: 'together', complete: true }, 'the whole answer is in the view');
});

test('fan-in waits the same way: a task whose session is recorded and which ends is one answer (rule: event-cursor)', async (t) => {
  const { engine, root, agent, run } = setup(t, { newsLingerMs: NEVER_ALONE_MS });
  mkdirSync(join(root, 'a'));
  mkdirSync(join(root, 'b'));
  agent.opening = new Gate();
  const a = await run('reply fan', join(root, 'a'));
  const b = await run('gate fan-b', join(root, 'b'));
  await reaches(engine, a.taskId, 'running');
  await reaches(engine, b.taskId, 'running');
  const items = [a, b].map((x) => ({ taskId: x.taskId, after: engine.status('alice', x.taskId).nextCursor }));
  const pending = engine.waitAny('alice', items, 25_000);
  agent.opening.open();
  const w = await pending;
  const first = w.tasks[0]!;
  assert.ok(w.ready.includes(a.taskId));
  assert.deepEqual(
    first.events.map((e) => (e.kind === 'lifecycle' ? `lifecycle ${e.state}` : e.kind)),
    ['session', 'message', 'lifecycle succeeded'],
  );
  agent.gate('fan-b').open();
  assert.equal((await settled(engine, b.taskId)).state, 'succeeded');
});

test('a lone non-lifecycle event still answers a waiting wait within its bound (rule: event-cursor)', async (t) => {
  const { engine, run, agent } = setup(t);
  const task = await run('status-gate lone');
  await reaches(engine, task.taskId, 'session');
  const cursor = engine.status('alice', task.taskId).nextCursor;
  const pending = engine.wait('alice', task.taskId, cursor, 25_000);
  agent.gate('lone').open(); // one status event, then the agent holds
  const w = await pending;
  assert.equal(w.timedOut, false);
  assert.equal(w.state, 'running');
  assert.deepEqual(
    w.events.map((e) => [e.kind, 'text' in e ? e.text : undefined]),
    [['status', 'past gate lone']],
  );
  engine.cancel('alice', task.taskId);
  assert.equal((await settled(engine, task.taskId)).state, 'cancelled');
});

test('event pages are bounded by 8,192 code points of text; a status page gives message events as their length (rule: event-pages)', async (t) => {
  assert.equal(EVENT_PAGE_TEXT_CODE_POINTS, 8_192, 'the budget is one full message event');
  const { engine, store, run } = setup(t);
  const task = await run('plain');
  const done = await settled(engine, task.taskId);
  const start = engine.status('alice', task.taskId, 0, 500).nextCursor;
  // Written the way the task log writes them: full message events of astral text (code points, not UTF-16 units),
  // a run of short ones, a commentary event, one message longer than the budget, and the capped one.
  const full = '😀'.repeat(8_192);
  const texts = [
    full,
    full.replace('😀', 'a'),
    ...Array.from({ length: 90 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(157)}\n`),
  ];
  const wide = 'w'.repeat(10_000);
  for (const text of texts) store.appendEvent(task.taskId, { time: done.updatedAt, round: 1, kind: 'message', text });
  store.appendEvent(task.taskId, { time: done.updatedAt, round: 1, kind: 'commentary', text: 'c'.repeat(2_000) });
  store.appendEvent(task.taskId, { time: done.updatedAt, round: 1, kind: 'message', text: wide });
  store.appendEvent(task.taskId, { time: done.updatedAt, round: 1, kind: 'message', text: 'end', capped: true });
  const all = [...texts, 'c'.repeat(2_000), wide, 'end'];

  // agent_wait's pages: never past the budget unless one event alone is, never empty, and together every event once.
  const read: string[] = [];
  const sizes: number[] = [];
  for (let after = start; ; ) {
    const page = await engine.wait('alice', task.taskId, after, 0);
    assert.ok(page.events.length > 0, 'a page always advances');
    const text = page.events
      .map((e) => Array.from(String('text' in e ? e.text : undefined)).length)
      .reduce((a, b) => a + b);
    assert.ok(
      text <= 8_192 || page.events.length === 1,
      `a page of ${text} code points in ${page.events.length} events`,
    );
    sizes.push(page.events.length);
    read.push(...page.events.map((e) => String('text' in e ? e.text : undefined)));
    assert.equal(page.nextCursor, page.events.at(-1)!.seq);
    after = page.nextCursor;
    if (!page.hasMore) break;
  }
  assert.deepEqual(read, all);
  assert.deepEqual(sizes.slice(0, 2), [1, 1], 'a full message event fills a page');
  assert.ok(sizes.includes(1) && Math.max(...sizes) > 1, `pages of ${sizes}`);
  // The budget and the count both end a page: 90 short events (160 code points each) fill one page of 51.
  assert.equal(sizes[2], 51);

  // agent_status: the same events in one page of 500, message text left out and given as its length.
  const glance = engine.status('alice', task.taskId, start, 500);
  assert.equal(glance.hasMore, false, 'message text does not count against a status page');
  assert.equal(glance.events.length, all.length);
  const messages = glance.events.filter((e) => e.kind === 'message');
  assert.ok(messages.every((e) => e.text === undefined));
  assert.deepEqual(
    messages.map((e) => e.chars),
    [...texts, wide, 'end'].map((x) => Array.from(x).length),
  );
  assert.equal(messages.at(-1)!.capped, true);
  assert.equal(glance.events.find((e) => e.kind === 'commentary')!.text, 'c'.repeat(2_000), 'other text stays');
  // The dashboard's status with the text pages like agent_wait does.
  const withText = engine.status('alice', task.taskId, start, 500, { messageText: true });
  assert.deepEqual(
    withText.events.map((e) => ('text' in e ? e.text : undefined)),
    [full],
  );
  assert.equal(withText.hasMore, true);
});

test('a result over 10 MiB fails the task atomically; an idle deadline fails a silent agent', async (t) => {
  const { engine, run } = setup(t, { idleTimeoutMs: 300, cancelGraceMs: 200 });
  const big = await run('big');
  const b = await settled(engine, big.taskId);
  assert.equal(b.state, 'failed');
  assert.match(String(b.error), /exceeded 10485760 bytes/);
  assert.equal(b.result, null);
  const silent = await run('silent');
  const s = await settled(engine, silent.taskId);
  assert.equal(s.state, 'failed');
  assert.match(String(s.error), /idle deadline/);
});

test('task ids carry 9 random bytes each and stay distinct across draws of random bytes', () => {
  const ids = Array.from({ length: 300 }, () => newTaskId());
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^t-[A-Za-z0-9_-]{12}$/);
});

test('list pages with a cursor, only the caller’s own tasks', async (t) => {
  const { engine, run } = setup(t);
  const ids = [(await run('reply 1')).taskId, (await run('reply 2')).taskId, (await run('reply 3')).taskId];
  const p1 = engine.list('alice', undefined, 2);
  assert.deepEqual(
    p1.tasks.map((x) => x.taskId),
    ids.slice(0, 2),
  );
  const p2 = engine.list('alice', p1.nextCursor!, 2);
  assert.deepEqual(
    p2.tasks.map((x) => x.taskId),
    ids.slice(2),
  );
  assert.equal(p2.nextCursor, null);
  for (const id of ids) await settled(engine, id);
});

test('recovery stops a leftover worker group and marks unfinished work interrupted; continue starts again', async (t) => {
  const { engine, run, store, agent } = setup(t);
  const task = await run('gate never');
  await reaches(engine, task.taskId, 'running');
  // Simulate a crash: a worker group recorded by the "previous daemon" is still alive.
  const orphan = spawnGroup('sleep', ['300'], { stdio: 'ignore' });
  store.addWorker({ pgid: orphan.pgid, taskId: task.taskId, leaderStart: null }, new Date().toISOString());
  const fresh = new Engine({
    store,
    agents: new Map([['fake', agent]]),
    reachable: () => ['fake'],
    roots: [engine.status('alice', task.taskId).cwd],
    stateDir: '/tmp',
    logger: silentLogger,
    idleTimeoutMs: 0,
    hardTimeoutMs: 0,
    cancelGraceMs: 1_000,
  });
  const rec = await fresh.recover();
  assert.equal(rec.interrupted, 1);
  assert.equal(rec.stoppedGroups, 1);
  await orphan.exited;
  assert.equal(isGroupAlive(orphan.pgid), false);
  assert.equal(fresh.status('alice', task.taskId).state, 'interrupted');
  agent.gate('never').open();
});

test("roots change while the engine runs; baton's own dirs are never a cwd, even under a root", async (t) => {
  const base = tempDir(t);
  const project = join(base, 'project');
  const stateDir = join(project, 'state');
  const configDir = join(base, 'config');
  for (const d of [project, stateDir, configDir]) mkdirSync(d, { recursive: true });
  let roots: string[] = [];
  const agent = new FakeAgent();
  const { engine } = engineFor(t, {
    agents: { fake: agent },
    roots: () => roots,
    stateDir,
    privateDirs: [configDir],
  });
  const run = (cwd: string, key: string) => engine.run('alice', { prompt: 'reply hi', cwd, idempotencyKey: key });
  await assert.rejects(() => run(project, 'k1'), /no project roots are authorised yet: run `baton init`/);
  roots = [project];
  const task = await run(project, 'k2');
  assert.equal((await settle(engine, 'alice', task.taskId)).state, 'succeeded');
  // A layout a hub would refuse at load (state under the root) still never lets a cwd into the state dir.
  await assert.rejects(
    () => run(stateDir, 'k3'),
    (err: EngineError) => {
      assert.equal(err.code, 'forbidden');
      assert.match(err.message, /inside baton's own files/);
      return true;
    },
  );
  symlinkSync(configDir, join(project, 'cfg-link'));
  await assert.rejects(() => run(join(project, 'cfg-link'), 'k4'), /inside baton's own files/);
  // Removing the root stops new rounds there, continue included.
  roots = [];
  await assert.rejects(
    () => engine.continue('alice', { taskId: task.taskId, prompt: 'more', idempotencyKey: 'k5' }),
    /no project roots/,
  );
});

test('a root reached through a link, or spelled with .. or a trailing slash, authorises what its real path holds; a dir that only starts with its name does not', async (t) => {
  const base = tempDir(t);
  const project = join(base, 'project');
  const sibling = join(base, 'project-two');
  const stateDir = join(base, 'state');
  for (const d of [join(project, 'sub'), sibling, stateDir, join(base, 'other')]) mkdirSync(d, { recursive: true });
  symlinkSync(project, join(base, 'link'));
  let roots: string[] = [];
  const { engine } = engineFor(t, { agents: { fake: new FakeAgent() }, roots: () => roots, stateDir });
  let key = 0;
  const run = (cwd: string) => engine.run('alice', { prompt: 'reply hi', cwd, idempotencyKey: `k${key++}` });
  for (const root of [join(base, 'link'), `${join(base, 'other')}/../project`, `${project}/`, project]) {
    roots = [join(base, 'other'), root];
    for (const cwd of [project, join(project, 'sub'), join(base, 'link', 'sub')]) {
      const task = await run(cwd);
      assert.equal((await settle(engine, 'alice', task.taskId)).state, 'succeeded', `${cwd} under root ${root}`);
    }
    await assert.rejects(() => run(sibling), /outside the authorised roots/, `${sibling} under root ${root}`);
  }
  roots = [join(base, 'proj')];
  mkdirSync(join(base, 'proj'));
  await assert.rejects(() => run(project), /outside the authorised roots/);
  // A root that is no absolute path is no leading part of anything (an empty one would lead every absolute path).
  roots = [''];
  await assert.rejects(() => run(project), /no project roots are authorised yet/);
});

test('durability: admission and continue answer after a synced commit; cancel is a synced commit; round ends are synced soon after; progress is not (rule: crash-durability)', async (t) => {
  const { engine, store, run } = setup(t);
  // Each sync, named by the acknowledged events it covers: a synced commit (durableTx) by the events it writes; a commit
  // whose answer waits for its sync (commitThenSync) by the queued events committed since the sync before. Progress
  // events never ask for one.
  const synced: string[] = [];
  let seen = 0;
  const eventsSince = () => {
    const rows = store.db.prepare('SELECT data FROM events ORDER BY rowid LIMIT -1 OFFSET ?').all(seen) as {
      data: string;
    }[];
    seen += rows.length;
    return rows.map((r) => JSON.parse(r.data) as { state?: string; kind: string }).map((e) => e.state ?? e.kind);
  };
  const durableTx = store.durableTx.bind(store);
  store.durableTx = <T>(fn: () => T): T =>
    durableTx(() => {
      eventsSince();
      const out = fn();
      synced.push(eventsSince().join());
      return out;
    });
  const commitThenSync = store.commitThenSync.bind(store);
  store.commitThenSync = (fn) => {
    const committed = commitThenSync(fn);
    synced.push(
      eventsSince()
        .filter((k) => k === 'queued')
        .join(),
    );
    return committed;
  };
  let soon = 0;
  const syncSoon = store.syncSoon.bind(store);
  store.syncSoon = () => {
    soon++;
    syncSoon();
  };
  const task = await run('events');
  await settled(engine, task.taskId);
  await engine.continue('alice', { taskId: task.taskId, prompt: 'reply again', idempotencyKey: 'c1' });
  await settled(engine, task.taskId);
  const held = await run('hold');
  await reaches(engine, held.taskId, 'session');
  engine.cancel('alice', held.taskId);
  await settled(engine, held.taskId);
  // A round's end is synced in the background (syncSoon), except a cancel of queued work, which its answer acknowledges.
  assert.deepEqual(synced, ['queued', 'queued', 'queued', 'cancel_requested']);
  assert.equal(soon, 3);
  const queued = await run('gate never');
  const behind = await run('reply later');
  engine.cancel('alice', behind.taskId);
  assert.deepEqual(synced.slice(4), ['queued', 'queued', 'cancelled']);
  engine.cancel('alice', queued.taskId);
  await settled(engine, queued.taskId);
  // Everything else (running, session, the agent's events) was committed without a sync, and is all there.
  const kinds: string[] = engine.status('alice', task.taskId, 0, 500).events.map((e) => e.kind);
  for (const k of ['session', 'status', 'commentary', 'usage']) assert.ok(kinds.includes(k), k);
});

test('an admission is answered only once its sync is done, with the task as it is then and the cursor of its last event (rules: crash-durability, event-cursor)', async (t) => {
  const { engine, store, run, agent } = setup(t);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const commitThenSync = store.commitThenSync.bind(store);
  store.commitThenSync = (fn) => {
    const committed = commitThenSync(fn);
    return gate.then(() => committed);
  };
  let answered = false;
  const answer = run('gate a').then((v) => {
    answered = true;
    return v;
  });
  // The task is committed and its round scheduled before the sync is asked for.
  const [row] = store.listTasks('alice', null, 10).tasks;
  assert.ok(row);
  await reaches(engine, row.id, 'running');
  assert.equal(answered, false, 'no answer before the sync is done');
  release();
  const view = await answer;
  assert.equal(view.taskId, row.id);
  assert.equal(view.state, 'running');
  const events = engine.status('alice', row.id, 0, 500).events;
  assert.deepEqual(
    events.slice(0, 2).map((e) => (e.kind === 'lifecycle' ? e.state : e.kind)),
    ['queued', 'running'],
  );
  assert.equal(view.nextCursor, events.at(-1)!.seq);
  // A wait from that cursor answers with what came after it, not the queued and running events the answer showed.
  agent.gate('a').open();
  const budget = new WaitBudget(`task ${row.id} to end`);
  const seen: string[] = [];
  for (let after = view.nextCursor; ; ) {
    const page = await engine.wait('alice', row.id, after, budget.left(20_000));
    seen.push(...page.events.map((e) => (e.kind === 'lifecycle' ? e.state : e.kind)));
    after = page.nextCursor;
    if (page.state === 'succeeded' && !page.hasMore) break;
  }
  assert.ok(!seen.includes('queued') && !seen.includes('running'), seen.join());
  assert.equal(seen.at(-1), 'succeeded');
});

test('a round queued behind another in the same dir takes its after-snapshot as its before-snapshot; a later one looks again', async (t) => {
  const { engine, run, root, agent, base } = setup(t);
  git(root, 'init', '-q');
  writeFileSync(join(root, 'f.txt'), 'x');
  git(root, 'add', '.');
  git(root, 'commit', '-qm', 'init');
  // Every git status the engine runs is logged by a wrapper found first on PATH.
  const bin = join(base, 'bin');
  mkdirSync(bin);
  const log = join(base, 'git.log');
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${realGit}' "$@"\n`, { mode: 0o755 });
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  t.after(() => {
    process.env.PATH = path;
  });
  const statuses = () =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => / status /.test(l))
      : [];

  const a = await run('gate a');
  const b = await run('gate b');
  await reaches(engine, a.taskId, 'running');
  writeFileSync(join(root, 'by-a.txt'), 'a');
  agent.gate('a').open();
  await reaches(engine, b.taskId, 'running');
  agent.gate('b').open();
  await settled(engine, b.taskId);
  const aRound = engine.status('alice', a.taskId).rounds[0]!;
  const bRound = engine.status('alice', b.taskId).rounds[0]!;
  assert.deepEqual(bRound.gitBefore, aRound.gitAfter);
  assert.ok(JSON.stringify(bRound.gitBefore).includes('by-a.txt'));
  // a before, a after (= b before), b after.
  assert.equal(statuses().length, 3);

  // Nothing queued behind b: the next round, admitted in a later turn of the event loop (as every request is), takes
  // its own snapshot and sees the edit made meanwhile.
  await new Promise((r) => setImmediate(r));
  writeFileSync(join(root, 'meanwhile.txt'), 'm');
  const c = await run('reply c');
  await settled(engine, c.taskId);
  const cRound = engine.status('alice', c.taskId).rounds[0]!;
  assert.ok(JSON.stringify(cRound.gitBefore).includes('meanwhile.txt'));
  assert.equal(statuses().length, 5);
});
