// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Events are written in batches: one transaction per flush, bounded by count, never one commit per event;
// a read or another write first flushes what is queued, so nothing acknowledged or read is missing or out of order.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { Store } from '../../src/core/store.ts';
import { TaskLog } from '../../src/core/task-log.ts';
import { Waiters } from '../../src/core/waiters.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { tempDir } from '../support/tmp.ts';

function setup(t: Parameters<typeof tempDir>[0]) {
  const store = new Store(join(tempDir(t), 'baton.db'));
  const log = new TaskLog(store, new Waiters(), silentLogger);
  t.after(() => {
    log.close();
    store.close();
  });
  store.insertTask({ id: 't-1', caller: 'a', agent: 'x', cwd: '/', workdir: '/', isolation: 'none', now: 'now' });
  store.insertRound('t-1', 'p');
  // Count commits: transactions through tx(), and appends that would autocommit on their own.
  let commits = 0;
  const tx = store.tx.bind(store);
  store.tx = <T>(fn: () => T): T => {
    if (!store.db.isTransaction) commits++;
    return tx(fn);
  };
  const append = store.appendEvent.bind(store);
  store.appendEvent = (...args: Parameters<Store['appendEvent']>) => {
    if (!store.db.isTransaction) commits++;
    return append(...args);
  };
  return { store, log, commits: () => commits };
}

/** Every event of task t-1 up to `limit`, with its text (one event page without a text budget). */
const allEvents = (store: Store, limit: number) =>
  store.eventPage('t-1', 0, limit, Number.POSITIVE_INFINITY, true).events;

test('10,000 events become 20 transactions of 500, in order', (t) => {
  const { store, log, commits } = setup(t);
  for (let i = 1; i <= 10_000; i++) log.recordEvent('t-1', 1, { kind: 'status', text: `e${i}` });
  log.flush();
  assert.equal(commits(), 20);
  const events = allEvents(store, 20_000);
  assert.equal(events.length, 10_000);
  assert.deepEqual(
    events.slice(0, 2).map((e) => [e.seq, (e as unknown as { text: string }).text]),
    [
      [1, 'e1'],
      [2, 'e2'],
    ],
  );
});

test('a write of the task flushes queued events first, so their order is kept', (t) => {
  const { store, log } = setup(t);
  log.recordEvent('t-1', 1, { kind: 'status', text: 'before' });
  log.recordEvent('t-1', 1, { kind: 'commentary', text: 'thinking' });
  log.finishRound('t-1', 1, { state: 'failed', error: 'boom' });
  const kinds = allEvents(store, 10).map((e) => e.kind);
  assert.deepEqual(kinds, ['status', 'commentary', 'lifecycle']);
  assert.equal(store.getCommentary('t-1').tail, 'thinking');
});

test("queued events ride in the next write's commit: a round's last events, its end and its worker records are one commit", (t) => {
  const { store, log, commits } = setup(t);
  store.addWorker({ pgid: 4_000_001, taskId: 't-1', leaderStart: null }, 'now');
  const atStart = commits();
  log.recordEvent('t-1', 1, { kind: 'status', text: 'before' });
  log.recordEvent('t-1', 1, { kind: 'commentary', text: 'thinking' });
  log.finishRound('t-1', 1, { state: 'failed', error: 'boom' });
  assert.equal(commits() - atStart, 1, 'the queue joined the round end instead of committing on its own');
  assert.deepEqual(
    allEvents(store, 10).map((e) => e.kind),
    ['status', 'commentary', 'lifecycle'],
  );
  assert.deepEqual(store.workersOfTask('t-1'), [], "the round's process group records went with its end");
});

/** The `reason` of round 1's stored before-snapshot (the tests below store non-git snapshots). */
const reasonOf = (store: Store) => (store.roundSummary('t-1', 1)?.before as { reason?: string } | null)?.reason;

test("a round's before-snapshot waits in the queue for the next write: the session record's commit, a read, or the engine's flush before the turn", (t) => {
  const { store, log, commits } = setup(t);
  const before = { git: false, reason: 'not a git work tree' };
  log.recordBefore('t-1', 1, before);
  assert.equal(commits(), 0, 'no commit of its own');
  assert.equal(store.roundSummary('t-1', 1)?.before, null, 'not written yet');
  log.recordSession('t-1', 1, 'session-1');
  assert.equal(commits(), 1, 'the session record and the before-snapshot are one commit');
  assert.deepEqual(store.roundSummary('t-1', 1)?.before, before);
  assert.deepEqual(
    allEvents(store, 10).map((e) => e.kind),
    ['session'],
    'a before-snapshot is no event',
  );

  // The worker record a spawn writes takes the queue along too; a read with nothing else to join flushes it.
  log.recordBefore('t-1', 1, { ...before, reason: 'second' });
  store.addWorker({ pgid: 4_000_002, taskId: 't-1', leaderStart: null }, 'now');
  assert.equal(commits(), 2);
  assert.equal(reasonOf(store), 'second');
  log.recordBefore('t-1', 1, { ...before, reason: 'third' });
  log.flushForRead();
  assert.equal(reasonOf(store), 'third');

  // No timer writes it: only the next write, a read, or flushBefore (the engine's, before the agent's turn).
  t.mock.timers.enable({ apis: ['setTimeout'] });
  log.recordBefore('t-1', 1, { ...before, reason: 'fourth' });
  t.mock.timers.tick(60_000);
  assert.equal(commits(), 3, 'the flush read above was the third commit; nothing since');
  log.flushBefore('t-2');
  assert.equal(commits(), 3, "another task's snapshot is no reason to write");
  log.flushBefore('t-1');
  assert.equal(commits(), 4);
  assert.equal(reasonOf(store), 'fourth');
  log.flushBefore('t-1');
  assert.equal(commits(), 4, 'nothing left to write');
});

test('queued events survive a write they joined that fails, and a batch that cannot be written does not fail that write', (t) => {
  const logged: string[] = [];
  const store = new Store(join(tempDir(t), 'baton.db'));
  const log = new TaskLog(store, new Waiters(), { ...silentLogger, error: (msg) => logged.push(msg) });
  t.after(() => {
    log.close();
    store.close();
  });
  store.insertTask({ id: 't-1', caller: 'a', agent: 'x', cwd: '/', workdir: '/', isolation: 'none', now: 'now' });
  store.insertRound('t-1', 'p');
  log.recordEvent('t-1', 1, { kind: 'status', text: 'kept' });
  assert.throws(
    () =>
      store.tx(() => {
        throw new Error('the joined write fails');
      }),
    /the joined write fails/,
  );
  assert.deepEqual(allEvents(store, 10), [], 'taken back with the write that failed');
  log.flush();
  assert.deepEqual(
    allEvents(store, 10).map((e) => (e as unknown as { text: string }).text),
    ['kept'],
    'written by the next flush',
  );

  // A batch failing for its own reason (not a full disk) is dropped and said so; the write it joined still commits.
  const append = store.appendCommentary.bind(store);
  store.appendCommentary = () => {
    throw new Error('cannot append');
  };
  log.recordEvent('t-1', 1, { kind: 'commentary', text: 'lost' });
  log.finishRound('t-1', 1, { state: 'failed', error: 'boom' });
  store.appendCommentary = append;
  assert.deepEqual(
    allEvents(store, 10).map((e) => e.kind),
    ['status', 'lifecycle'],
  );
  assert.equal(store.getTask('t-1')?.state, 'failed');
  assert.deepEqual(logged, ['events could not be written and were dropped']);
});

// Live text (rule `live-text`): streamed answer text becomes `message` events, coalesced, redacted and bounded.
const messages = (store: Store) =>
  allEvents(store, 1_000).filter((e) => e.kind === 'message') as unknown as { text: string; capped?: true }[];

test('streamed text is coalesced into message events, shown before a later event, and finished at the end', (t) => {
  const { store, log } = setup(t);
  for (let i = 0; i < 500; i++) log.recordMessage('t-1', 1, `line ${i}\n`);
  log.recordMessage('t-1', 1, 'unfinished');
  // A later event of the task puts the settled text before it; the unfinished line waits.
  log.recordEvent('t-1', 1, { kind: 'status', text: 'after the text' });
  log.flush();
  const before = allEvents(store, 100).map((e) => e.kind);
  assert.deepEqual(before, ['message', 'status'], '500 chunks became one event');
  assert.equal(messages(store)[0]!.text.split('\n').length - 1, 500);
  log.finishRound('t-1', 1, { state: 'failed' });
  const all = messages(store);
  assert.equal(all.at(-1)!.text, 'unfinished', 'the rest is written with the round’s end');
  assert.deepEqual(
    allEvents(store, 100).map((e) => e.kind),
    ['message', 'status', 'message', 'lifecycle'],
  );
});

test('message events are redacted whole, stripped of terminal controls, cut per event and capped per round', (t) => {
  const { store, log } = setup(t);
  log.recordMessage('t-1', 1, 'Authorization: Bearer abc123');
  log.recordMessage('t-1', 1, 'def456\n\u001b[31mred\u001b[0m\n');
  log.flush();
  log.recordEvent('t-1', 1, { kind: 'status', text: 'x' });
  log.flush();
  assert.equal(messages(store)[0]!.text, 'Authorization: Bearer [redacted]\nred\n');

  // 20 lines of 10,000 code points: 8,192 per event, 131,072 in the round (the 37 above included), the last marked.
  for (let i = 0; i < 20; i++) log.recordMessage('t-1', 1, `${'é'.repeat(9_999)}\n`);
  log.finishRound('t-1', 1, { state: 'failed' });
  const big = messages(store).slice(1);
  assert.equal(big.length, 16);
  assert.deepEqual(
    big.map((e) => Array.from(e.text).length),
    [...Array(15).fill(8_192), 131_072 - 37 - 15 * 8_192],
  );
  assert.deepEqual(
    big.map((e) => e.capped ?? false),
    [...Array(15).fill(false), true],
  );
});
