// Damage inside the store's pages that SQLite still parses: random bytes written into a real store file are either
// refused at open (integrity_check) or refused by the read that would serve the damaged row (its checksum), naming
// `baton store check|restore`; no read ever serves changed data. `baton store check`'s own report names the rows.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { StoreCorruptError } from '../../../src/core/store/row-sums.ts';
import { MIGRATIONS } from '../../../src/core/store/schema.ts';
import { Store } from '../../../src/core/store.ts';
import { checkStore } from '../../../src/core/store-backup.ts';
import { StoreDamagedError } from '../../../src/core/store-guard.ts';
import { tempDir } from '../../support/tmp.ts';

const TASKS = 30;
const time = '2026-01-01T00:00:00.000Z';

function fill(store: Store): void {
  for (let i = 0; i < TASKS; i++) {
    const id = `t-${i}`;
    store.tx(() => {
      store.insertTask({
        id,
        caller: i % 2 ? 'alice' : 'bob',
        agent: 'a',
        cwd: `/w/${i}`,
        workdir: `/w/${i}`,
        isolation: 'none',
        now: time,
      });
      const n = store.insertRound(id, `prompt ${i} `.repeat(40));
      for (let e = 0; e < 6; e++) {
        store.appendEvent(id, { time, round: n, kind: 'message', text: `answer ${i}.${e} `.repeat(20) });
        store.appendEvent(id, { time, round: n, kind: 'commentary', text: `note ${i}.${e}` });
      }
      store.appendCommentary(id, `thinking about ${i} `.repeat(30));
      store.updateRound(id, n, { state: 'succeeded', endedAt: time, result: `result ${i} `.repeat(300) });
      store.setTaskState(id, 'succeeded', time);
    });
  }
}

/** Everything a reader can be served, task by task (a read that throws is recorded as its error). */
function readAll(store: Store): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const read = (key: string, fn: () => unknown) => {
    try {
      out.set(key, fn());
    } catch (err) {
      out.set(key, err);
    }
  };
  read('list', () => store.listTasks(null, null, 1_000).tasks);
  read('overview', () => store.overviewTasks('', Number.MAX_SAFE_INTEGER, 1_000, 100));
  for (let i = 0; i < TASKS; i++) {
    const id = `t-${i}`;
    read(`${id} task`, () => store.getTask(id));
    read(`${id} rounds`, () => store.roundSummaries(id));
    read(`${id} prompts`, () => store.roundPrompts(id, 10_000));
    read(`${id} result`, () => store.resultPage(id, 1, 0, 1_000_000));
    read(`${id} summary`, () => store.resultSummary(id, 1));
    read(`${id} events`, () => store.eventPage(id, 0, 1_000, Number.POSITIVE_INFINITY, true));
    read(`${id} status events`, () => store.eventPage(id, 0, 1_000, Number.POSITIVE_INFINITY, false));
    read(`${id} commentary`, () => store.getCommentary(id));
  }
  return out;
}

/** Deterministic noise from a seed. */
function noise(seed: string, n: number): Buffer {
  const out: Buffer[] = [];
  let h = Buffer.from(seed);
  while (out.length * 32 < n) {
    h = createHash('sha256').update(h).digest();
    out.push(h);
  }
  return Buffer.concat(out).subarray(0, n);
}

function write(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, offset);
  closeSync(fd);
}

/** 20 runs of 64 random bytes at random places past page 1. */
function scatter(path: string, seed: string): void {
  const size = statSync(path).size;
  const pageSize = readFileSync(path).readUInt16BE(16);
  const where = noise(`${seed}-where`, 20 * 4);
  for (let k = 0; k < 20; k++) {
    const offset = pageSize + (where.readUInt32BE(k * 4) % (size - pageSize - 64));
    write(path, offset, noise(`${seed}-${k}`, 64));
  }
}

/** 200 random bytes inside the records at the end of the last page (cells are stored from a page's end). */
function lastPageRecords(path: string, seed: string): void {
  const size = statSync(path).size;
  write(path, size - 260, noise(seed, 200));
}

type Outcome = 'refused at open' | 'refused on read' | 'unharmed';

/** Damages a copy of `good`, then opens and reads it: never a changed answer, and says how the damage was met. */
function damageAndRead(
  t: Parameters<typeof tempDir>[0],
  good: string,
  expected: Map<string, unknown>,
  damage: (p: string) => void,
): Outcome {
  const path = join(tempDir(t), 'baton.db');
  copyFileSync(good, path);
  copyFileSync(`${good}.marker.json`, `${path}.marker.json`);
  damage(path);
  let store: Store;
  try {
    store = new Store(path);
  } catch (err) {
    assert.ok(err instanceof StoreDamagedError, `open fails clearly: ${err}`);
    assert.match(err.message, /baton store check.*baton store restore/s);
    return 'refused at open';
  }
  let refused = 0;
  try {
    for (const [key, value] of readAll(store)) {
      if (value instanceof Error) {
        assert.ok(value instanceof StoreCorruptError, `${key}: a read fails with the store's own error, not ${value}`);
        assert.match(
          value.message,
          /does not match its checksum.*`baton store check`.*`baton store restore <backup>`/s,
        );
        refused++;
      } else {
        assert.deepEqual(value, expected.get(key), `${key}: served as stored, never changed`);
      }
    }
  } finally {
    store.close();
  }
  return refused ? 'refused on read' : 'unharmed';
}

function goodStore(t: Parameters<typeof tempDir>[0]): { path: string; expected: Map<string, unknown> } {
  const path = join(tempDir(t), 'baton.db');
  const store = new Store(path);
  fill(store);
  const expected = readAll(store);
  for (const [key, v] of expected) assert.ok(!(v instanceof Error), `${key} reads on the undamaged store`);
  store.close();
  return { path, expected };
}

test('random bytes inside pages are refused at open or by the read that meets them, never served', (t) => {
  const { path, expected } = goodStore(t);
  const outcomes: Outcome[] = [];
  for (let seed = 0; seed < 8; seed++)
    outcomes.push(damageAndRead(t, path, expected, (p) => scatter(p, `scatter-${seed}`)));
  // 20 runs of 64 bytes across a store this size always hit something in use.
  assert.ok(!outcomes.includes('unharmed'), outcomes.join(', '));
});

test('200 bytes inside the last page’s records: the rows they changed are refused when read, and by store check', (t) => {
  const { path, expected } = goodStore(t);
  const outcomes: Outcome[] = [];
  for (let seed = 0; seed < 4; seed++)
    outcomes.push(damageAndRead(t, path, expected, (p) => lastPageRecords(p, `last-${seed}`)));
  assert.ok(
    outcomes.includes('refused on read'),
    `damage inside records passes integrity_check and is met on read: ${outcomes}`,
  );
  assert.ok(!outcomes.includes('unharmed'), outcomes.join(', '));

  // store check reads every row's checksum, whatever reads the hub has served.
  const stateDir = tempDir(t);
  const db = join(stateDir, 'baton.db');
  copyFileSync(path, db);
  copyFileSync(`${path}.marker.json`, `${db}.marker.json`);
  lastPageRecords(db, 'last-0');
  const report = checkStore(stateDir);
  assert.equal(report.ok, false);
  assert.match(report.lines.join('\n'), /damaged rows: \d+ in \w+.*do not match their checksums/);
});

test('a row changed in the file is refused by reads and never re-summed by a later write', (t) => {
  const { path } = goodStore(t);
  // t-13's cwd and workdir, changed in place to text of the same length: SQLite parses the row as before.
  const bytes = readFileSync(path);
  const from = Buffer.from('/w/13');
  let hits = 0;
  for (let at = bytes.indexOf(from); at >= 0; at = bytes.indexOf(from, at + 1)) {
    Buffer.from('/x/13').copy(bytes, at);
    hits++;
  }
  assert.equal(hits, 2, 'the cwd and the workdir');
  writeFileSync(path, bytes);
  const store = new Store(path);
  t.after(() => store.close());
  assert.throws(() => store.getTask('t-13'), StoreCorruptError);
  assert.throws(() => store.listTasks('alice', null, 100), StoreCorruptError);
  assert.throws(() => store.setTaskState('t-13', 'failed', time), /a row of tasks .* does not match its checksum/);
  assert.throws(() => store.getTask('t-13'), StoreCorruptError, 'the refused write summed nothing anew');
  assert.equal(store.getTask('t-14')?.cwd, '/w/14', 'other rows are served');
});

test('a store written before row checksums migrates: every row gets its sum and reads as before', (t) => {
  const path = join(tempDir(t), 'baton.db');
  const old = new DatabaseSync(path);
  for (const m of MIGRATIONS.slice(0, 4)) old.exec(m);
  old.exec(`PRAGMA user_version = 4;
    INSERT INTO tasks (id, caller, agent, cwd, workdir, isolation, state, rounds, created_at, updated_at, list_order, last_seq)
      VALUES ('t-old', 'alice', 'a', '/w', '/w', 'none', 'succeeded', 1, '${time}', '${time}', 1, 1);
    INSERT INTO rounds (task_id, n, prompt, state, result_chars, result_preview) VALUES ('t-old', 1, 'old prompt', 'succeeded', 2, 'ok');
    INSERT INTO result_pages (task_id, n, page, text) VALUES ('t-old', 1, 0, 'ok');
    INSERT INTO events (task_id, seq, data, text, chars) VALUES ('t-old', 1, '{"seq":1,"kind":"message"}', 'hello', 5);`);
  old.close();
  const store = new Store(path);
  t.after(() => store.close());
  assert.equal(store.getTask('t-old')?.caller, 'alice');
  assert.equal(store.resultPage('t-old', 1, 0, 100).text, 'ok');
  assert.deepEqual(store.roundPrompts('t-old', 100), [{ n: 1, text: 'old prompt', chars: 10 }]);
  assert.deepEqual(store.eventPage('t-old', 0, 10, 100, true).events, [{ seq: 1, kind: 'message', text: 'hello' }]);
  const unsummed = store.db.prepare('SELECT COUNT(*) AS n FROM tasks WHERE row_sum IS NULL').get() as { n: number };
  assert.equal(unsummed.n, 0);
  // The migrated rows are guarded like new ones.
  store.db.exec("DROP TRIGGER events_sum_update; UPDATE events SET text = 'HELLO'");
  assert.throws(() => store.eventPage('t-old', 0, 10, 100, true), StoreCorruptError);
  assert.equal(
    store.eventPage('t-old', 0, 10, 100, false).events.length,
    1,
    'a page without the text does not read it',
  );
});
