// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of the job table with a FAKE agent (a scripted in-process Agent): limits, cursors, paging, deadlines and
// cancellation without spawning anything. The real agents are exercised through it in test/e2e/provider/.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Agent, AgentEvent, AgentSession, OpenSessionOptions } from '../../src/agents/agent.ts';
import { JobError, JobTable, MAX_ACTIVE_JOBS, MAX_STATUS_WAIT_MS, TERMINAL_RETENTION_MS } from '../../src/core/jobs.ts';
import { MAX_RESULT_BYTES, RESULT_PAGE_CODE_POINTS } from '../../src/core/paging.ts';
import { Gate } from '../mock-models/server.ts';
import { WaitBudget } from '../support/poll.ts';

/** A fake agent whose turn emits `events`, optionally waiting on a gate first; honours abort as a cancel. */
function fakeAgent(script: { events: AgentEvent[]; gate?: Gate }): Agent {
  return {
    name: 'fake',
    kind: 'fake',
    probe: async () => ({ name: 'fake', kind: 'fake', available: true }),
    openSession: async (_opts: OpenSessionOptions): Promise<AgentSession> => ({
      id: undefined,
      async *turn(_prompt, { signal }) {
        yield { kind: 'status', text: 'Fake: working' } as AgentEvent;
        if (script.gate) {
          const aborted = new Promise((r) => {
            if (signal.aborted) r(undefined);
            signal.addEventListener('abort', r);
          });
          await Promise.race([script.gate.promise, aborted]);
        }
        if (signal.aborted) {
          yield { kind: 'end', outcome: 'cancelled', acknowledged: true } as AgentEvent;
          return;
        }
        yield* script.events;
      },
      close: async () => {},
    }),
  };
}

const spec = (agent: Agent) => ({ agent, prompt: 'p', cwd: '/tmp', sandbox: 'read-only' as const, label: 'Fake' });
const done = (text: string): AgentEvent[] => [
  { kind: 'message', text },
  { kind: 'end', outcome: 'succeeded' },
];

test('a job runs to completion; status long-polls on the cursor; the result pages in code points', async () => {
  const table = new JobTable();
  const gate = new Gate();
  const big = '😀'.repeat(RESULT_PAGE_CODE_POINTS + 10);
  const { jobId, cursor } = table.start(spec(fakeAgent({ events: done(big), gate })));
  let first = await table.status(jobId, cursor, 1_000);
  assert.equal(first.state, 'running');
  assert.ok(first.cursor > cursor);
  assert.equal(first.phases[0], 'Fake: started');
  const working = new WaitBudget('the status "Fake: working"');
  while (first.status !== 'Fake: working') first = await table.status(jobId, first.cursor, working.left(1_000));
  const waiting = table.status(jobId, first.cursor, 30_000);
  gate.open();
  const woken = await waiting;
  assert.equal(woken.state, 'completed', 'the terminal transition wakes the waiter at once');
  assert.equal(woken.resultCodePoints, RESULT_PAGE_CODE_POINTS + 10);
  const p1 = table.result(jobId);
  assert.equal(p1.done, false);
  const p2 = table.result(jobId, p1.nextOffset);
  assert.equal(p2.done, true);
  assert.equal(p1.text + p2.text, big);
});

test(`at most ${MAX_ACTIVE_JOBS} jobs run at once; the next is refused with a clear error`, async () => {
  const table = new JobTable();
  const gate = new Gate();
  const ids = Array.from(
    { length: MAX_ACTIVE_JOBS },
    () => table.start(spec(fakeAgent({ events: done('x'), gate }))).jobId,
  );
  assert.throws(
    () => table.start(spec(fakeAgent({ events: done('x') }))),
    (err: unknown) => err instanceof JobError && err.code === 'limit' && /8 jobs are already running/.test(err.message),
  );
  await table.cancel(ids[0]!);
  const next = table.start(spec(fakeAgent({ events: done('x') })));
  assert.ok(next.jobId);
  await table.closeAll();
  assert.equal(table.activeCount, 0);
});

test('at most 32 jobs are kept: the oldest terminal one is evicted', async () => {
  const table = new JobTable();
  const ids: string[] = [];
  for (let i = 0; i < 33; i++) {
    const { jobId } = table.start(spec(fakeAgent({ events: done(String(i)) })));
    ids.push(jobId);
    await table.status(jobId, 0, 0);
    const ended = new WaitBudget(`job ${i} to end`);
    while ((await table.status(jobId, 0, 0)).state === 'running')
      await table.status(jobId, 1_000_000, ended.left(1_000));
  }
  assert.equal(table.size, 32);
  assert.throws(() => table.result(ids[0]!), /no job/);
  assert.equal(table.result(ids[32]!).text, '32');
});

test('terminal jobs stay readable for an hour, then expire', async () => {
  let now = 1_000_000;
  const table = new JobTable({ clock: () => now });
  const { jobId } = table.start(spec(fakeAgent({ events: done('x') })));
  let view = await table.status(jobId, 0, 0);
  const budget = new WaitBudget(`job ${jobId} to end`);
  while (!view.done) view = await table.status(jobId, view.cursor, budget.left(1_000));
  now += TERMINAL_RETENTION_MS - 1;
  assert.equal(table.result(jobId).text, 'x');
  now += 1;
  await assert.rejects(table.status(jobId, 0, 0), /no job/);
});

test('cancel stops a running job; results of cancelled and running jobs are refused', async () => {
  const table = new JobTable();
  const gate = new Gate();
  const { jobId } = table.start(spec(fakeAgent({ events: done('x'), gate })));
  assert.throws(() => table.result(jobId), /still running/);
  const view = await table.cancel(jobId);
  assert.equal(view.state, 'cancelled');
  assert.throws(() => table.result(jobId), /was cancelled/);
});

test('the hard deadline fails a job and is reported', async () => {
  const table = new JobTable({ hardDeadlineMs: 20 });
  const { jobId } = table.start(spec(fakeAgent({ events: done('x'), gate: new Gate() })));
  let view = await table.status(jobId, 0, 0);
  const budget = new WaitBudget(`job ${jobId} to end`);
  while (!view.done) view = await table.status(jobId, view.cursor, budget.left(5_000));
  assert.equal(view.state, 'failed');
  assert.match(view.error ?? '', /hard deadline/);
});

test('a result over 10 MiB fails the job atomically', async () => {
  const table = new JobTable();
  const chunk = 'a'.repeat(1024 * 1024);
  const events: AgentEvent[] = [
    ...Array.from({ length: MAX_RESULT_BYTES / chunk.length + 1 }, () => ({ kind: 'message', text: chunk }) as const),
    { kind: 'end', outcome: 'succeeded' },
  ];
  const { jobId } = table.start(spec(fakeAgent({ events })));
  let view = await table.status(jobId, 0, 0);
  const budget = new WaitBudget(`job ${jobId} to end`);
  while (!view.done) view = await table.status(jobId, view.cursor, budget.left(5_000));
  assert.equal(view.state, 'failed');
  assert.match(view.error ?? '', /exceeded/);
  assert.throws(() => table.result(jobId), /failed/);
});

test('status waits are capped at 60 s', () => {
  assert.equal(MAX_STATUS_WAIT_MS, 60_000);
});
