// Job limits and the status interval of the Codex provider, through the provider itself: the real current Codex
// (one app-server per job) against the Responses mock, driven by the MCP SDK client over stdio. The 9th concurrent
// codex-start is refused, at most 32 jobs are kept (the oldest terminal one evicted, never a running one), and
// codex-status waits by default for the status interval (short here), with interval 0 moving the cursor on every
// change. The one-hour retention of terminal jobs is not a flag of the provider; test/core/jobs.test.ts pins it on
// the shared job table with an injected clock.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ResponsesMock, type ResponsesStep, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { WaitBudget } from '../../support/poll.ts';
import { type Connected, connectProvider, type Layout, makeLayout, mockProviderFlag } from './codex/harness.ts';

/** The status interval of the main bridge here, in seconds (short, so default waits stay cheap). */
const INTERVAL_S = 1;
/**
 * Codex's stream idle timeout at its maximum (an hour): a stalled mock model ends its turn only when the test opens its
 * gate or cancels the job. At the mock tables' usual 20 s, a job stalled across a test that runs longer than that on a
 * busy machine failed on its own (the 8-jobs test keeps one stalled through 24 more jobs).
 */
const noStreamIdle = (m: ResponsesMock) => ['--codex-model-provider', mockProviderFlag(m, 3_600_000)];
/** How long a test waits for Codex to reach the model: starts on a cold, busy machine are slow, never this slow. */
const TURN_WAIT_MS = 180_000;
let mock: ResponsesMock;
let layout: Layout;
let conn: Connected;
const gates: Gate[] = [];

before(async () => {
  mock = await ResponsesMock.start();
  layout = makeLayout('baton-codex-limits-');
  conn = await connectProvider(bins.codex(), layout, mock, [
    '--codex_status_interval',
    String(INTERVAL_S),
    '--codex-cancel-grace',
    '2',
    ...noStreamIdle(mock),
  ]);
});
after(async () => {
  for (const g of gates) g.open();
  await conn?.close();
  await mock?.close();
  layout?.cleanup();
});

interface StatusView {
  jobId: string;
  state: string;
  cursor: number;
  phases: string[];
  done: boolean;
  commentaryEndOffset: number;
}
const sc = <T>(res: { structuredContent?: unknown }) => res.structuredContent as T;

function stalledSteps(n: number): Gate {
  const gate = new Gate();
  gates.push(gate);
  mock.push(...Array.from({ length: n }, () => stalledReply(gate)));
  return gate;
}

async function start(c: Connected, prompt: string): Promise<string> {
  const res = await c.call('codex-start', { prompt, cwd: layout.workspace, sandbox: 'read-only' });
  assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
  return sc<{ jobId: string }>(res).jobId;
}

/** Waits for a job to end: lifecycle changes wake a status long-poll at once. */
async function finished(c: Connected, jobId: string): Promise<StatusView> {
  const budget = new WaitBudget(`job ${jobId} to end`);
  let view = sc<StatusView>(await c.call('codex-status', { jobId, cursor: 0, wait_ms: 0 }));
  while (!view.done)
    view = sc<StatusView>(await c.call('codex-status', { jobId, cursor: view.cursor, wait_ms: budget.left(60_000) }));
  return view;
}

test('8 active jobs at most: the 9th codex-start is a clear tool error; 32 kept, the oldest terminal one evicted', async () => {
  // Eight jobs stall at the model; the ninth is refused before any Codex starts for it.
  const gate = stalledSteps(8);
  const reachedAll = mock.waitForTurn(7, TURN_WAIT_MS);
  const active: string[] = [];
  for (let i = 0; i < 8; i++) active.push(await start(conn, `long ${i}`));
  const refused = await conn.call('codex-start', { prompt: 'ninth', cwd: layout.workspace, sandbox: 'read-only' });
  assert.equal(refused.isError, true);
  assert.equal(sc<{ code: string }>(refused).code, 'limit');
  assert.match(
    (refused.content[0] as { text: string }).text,
    /^8 jobs are already running; wait for one to finish or cancel one, then start again$/,
  );
  await reachedAll;
  assert.equal(mock.turns.length, 8, 'the refused job never reached the model');
  assert.equal(sc<{ turns: unknown[] }>(await conn.call('codex-peek', {})).turns.length, 8);

  // The first job keeps running throughout; the others are cancelled in order, so job 2 is the oldest terminal one.
  const [running, oldestTerminal, ...rest] = active as [string, string, ...string[]];
  for (const jobId of [oldestTerminal, ...rest]) {
    assert.equal(sc<StatusView>(await conn.call('codex-cancel', { jobId })).state, 'cancelled');
  }
  // A slot is free again.
  const fillers: string[] = [];
  // 8 jobs are kept; 24 more finished jobs fill the table to 32 (7 at a time, beside the running one).
  while (fillers.length < 24) {
    const batch: string[] = [];
    for (let i = 0; i < Math.min(7, 24 - fillers.length); i++) batch.push(await start(conn, 'quick'));
    for (const jobId of batch) assert.equal((await finished(conn, jobId)).state, 'completed');
    fillers.push(...batch);
  }
  const kept = [running, oldestTerminal, ...rest, ...fillers];
  assert.equal(kept.length, 32);
  for (const jobId of kept) {
    const res = await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 });
    assert.notEqual(res.isError, true, `job ${jobId} is still kept`);
  }

  // The 33rd job evicts the oldest terminal job — not the older, still running one.
  const newest = await start(conn, 'thirty-third');
  const evicted = await conn.call('codex-status', { jobId: oldestTerminal, cursor: 0, wait_ms: 0 });
  assert.equal(evicted.isError, true);
  assert.equal(sc<{ code: string }>(evicted).code, 'unknown_job');
  assert.match((evicted.content[0] as { text: string }).text, /no job .* expire an hour after finishing/);
  for (const jobId of [running, ...rest, ...fillers, newest]) {
    const res = await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 });
    assert.notEqual(res.isError, true, `job ${jobId} is still kept`);
  }
  assert.equal(
    sc<StatusView>(await conn.call('codex-status', { jobId: running, cursor: 0, wait_ms: 0 })).state,
    'running',
  );
  assert.equal((await finished(conn, newest)).state, 'completed');
  gate.open();
  assert.equal((await finished(conn, running)).state, 'completed');
});

/** Commentary and a command, then a reply that stalls until `gate` opens. */
function commentaryThenStall(gate: Gate): ResponsesStep[] {
  return [
    {
      kind: 'respond',
      output: [
        { type: 'message', text: 'Looking around first.', phase: 'commentary' },
        { type: 'function_call', name: 'exec_command', arguments: { cmd: 'true' } },
      ],
    },
    stalledReply(gate, 'finished'),
  ];
}

test('codex-status waits for the status interval by default; coalesced progress is delivered, lifecycle at once', async () => {
  const gate = new Gate();
  gates.push(gate);
  // The job's second model request, the one that stalls (waitForTurn counts from 0).
  const stalled = mock.waitForTurn(mock.turns.length + 1, TURN_WAIT_MS);
  mock.push(...commentaryThenStall(gate));
  const jobId = await start(conn, 'look around');
  await stalled;
  // Progress is coalesced to one cursor step per interval, but delivered: the commentary shows up without a lifecycle
  // change, while the job still waits for the model.
  const progress = new WaitBudget('commentary past the start');
  let view = sc<StatusView>(await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 }));
  while (view.cursor <= 1 || view.commentaryEndOffset === 0) {
    progress.left();
    view = sc<StatusView>(await conn.call('codex-status', { jobId, cursor: view.cursor }));
  }
  const all = sc<StatusView>(await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 }));
  assert.equal(all.state, 'running');
  assert.ok(all.cursor > 1, 'progress moved the cursor past the start');
  assert.ok(
    all.phases.some((p) => p.includes('Looking around first.')),
    JSON.stringify(all.phases),
  );

  // At the head of a running job, a status call without wait_ms returns with the same cursor once the interval has
  // passed (a heartbeat). Bounded: a call that does return unchanged must have waited out its whole wait.
  let unchanged: { view: StatusView; elapsedMs: number } | undefined;
  for (let i = 0; i < 10 && !unchanged; i++) {
    const head = sc<StatusView>(await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 })).cursor;
    const t0 = performance.now();
    const next = sc<StatusView>(await conn.call('codex-status', { jobId, cursor: head }));
    if (next.cursor === head) unchanged = { view: next, elapsedMs: performance.now() - t0 };
  }
  assert.ok(unchanged, 'a heartbeat at the head of the job');
  assert.equal(unchanged.view.state, 'running');
  assert.deepEqual(unchanged.view.phases, []);
  assert.ok(unchanged.elapsedMs >= INTERVAL_S * 1000 - 50, `waited the interval: ${unchanged.elapsedMs} ms`);
  assert.ok(unchanged.elapsedMs < 30_000, 'not the 60 s cap');

  // Completion wakes a waiting reader with the terminal state.
  const waiting = conn.call('codex-status', { jobId, cursor: unchanged.view.cursor, wait_ms: 60_000 });
  gate.open();
  const done = sc<StatusView>(await waiting);
  assert.equal(done.state, 'completed');
  assert.ok(done.phases.includes('Codex: completed'), JSON.stringify(done.phases));
});

test('--codex_status_interval 0: every change moves the cursor, and the default wait is 0', async () => {
  const zero = await connectProvider(bins.codex(), layout, mock, [
    '--codex_status_interval',
    '0',
    ...noStreamIdle(mock),
  ]);
  try {
    const gate = new Gate();
    gates.push(gate);
    mock.push(...commentaryThenStall(gate));
    const stalled = mock.waitForTurn(mock.turns.length + 1, TURN_WAIT_MS);
    const jobId = await start(zero, 'look around');
    // Each change is its own cursor step: a reader at the start's step is woken by progress, not only by lifecycle.
    const started = sc<StatusView>(await zero.call('codex-status', { jobId, cursor: 0, wait_ms: 0 }));
    const progressed = sc<StatusView>(
      await zero.call('codex-status', { jobId, cursor: started.cursor, wait_ms: 60_000 }),
    );
    assert.equal(progressed.state, 'running', 'woken by progress while the model still stalls');
    assert.ok(progressed.cursor > started.cursor);
    const budget = new WaitBudget(`job ${jobId} to end`);
    let view = progressed;
    while (view.commentaryEndOffset === 0) {
      view = sc<StatusView>(
        await zero.call('codex-status', { jobId, cursor: view.cursor, wait_ms: budget.left(60_000) }),
      );
    }
    await stalled;
    const all = sc<StatusView>(await zero.call('codex-status', { jobId, cursor: 0, wait_ms: 0 }));
    assert.ok(all.cursor >= all.phases.length, 'one step per phase (commentary steps too)');
    assert.ok(
      all.phases.some((p) => p.includes('Looking around first.')),
      JSON.stringify(all.phases),
    );
    // At the head, no wait_ms means no wait: the call returns at once, the job still running.
    const t0 = performance.now();
    const head = sc<StatusView>(await zero.call('codex-status', { jobId, cursor: all.cursor }));
    assert.ok(performance.now() - t0 < 10_000, 'no long-poll');
    assert.ok(head.cursor >= all.cursor);
    assert.equal(head.state, 'running');
    gate.open();
    let end = head;
    while (!end.done)
      end = sc<StatusView>(
        await zero.call('codex-status', { jobId, cursor: end.cursor, wait_ms: budget.left(60_000) }),
      );
    assert.equal(end.state, 'completed');
  } finally {
    await zero.close();
  }
});
