// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The store's size-independent reads: result length and preview kept with the result, result pages read
// by code point offset, commentary appended in chunks and trimmed from the front, the operator list on an index.
import assert from 'node:assert/strict';
import fs, { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pageText } from '../../src/core/paging.ts';
import { Store } from '../../src/core/store.ts';
import { MarkerWriter, markerPath, readMarker } from '../../src/core/store-guard.ts';
import { taskView } from '../../src/core/views.ts';
import { until } from '../support/poll.ts';

type T = { after: (fn: () => void) => void };

function storeWithTask(t: T) {
  const store = new Store(':memory:');
  t.after(() => store.close());
  const now = new Date().toISOString();
  store.insertTask({ id: 't1', caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now });
  store.insertRound('t1', 'prompt');
  return store;
}

/** Every page of round 1's result, followed offset by offset. */
function allPages(store: Store, pageSize: number) {
  const pages = [];
  for (let offset = 0; ; ) {
    const p = store.resultPage('t1', 1, offset, pageSize);
    pages.push(p);
    if (p.done) return pages;
    offset = p.nextOffset;
  }
}

test('result pages from the store equal paging the text itself: astral, NUL, empty and legacy rows alike', (t) => {
  const store = storeWithTask(t);
  const texts = ['😀a'.repeat(40_000) + 'é'.repeat(1000), `before\0after${'x'.repeat(500)}`, ''];
  for (const text of texts) {
    store.updateRound('t1', 1, { result: text });
    for (const legacy of [false, true]) {
      // A round written before result pages existed keeps its result in the round row, and is read from there.
      if (legacy) {
        store.db.prepare('UPDATE rounds SET result = ?, result_chars = NULL, result_preview = NULL').run(text);
        store.db.prepare('DELETE FROM result_pages').run();
      }
      const pages = allPages(store, 7_777);
      const expected = [];
      for (let offset = 0; ; ) {
        const p = pageText(text, offset, 7_777);
        expected.push(p);
        if (p.done) break;
        offset = p.nextOffset;
      }
      assert.deepEqual(pages, expected);
      assert.deepEqual(store.resultPage('t1', 1, 10 ** 9, 7_777), pageText(text, 10 ** 9, 7_777));
      const summary = store.roundSummary('t1', 1)!;
      assert.equal(summary.resultChars, Array.from(text).length);
      assert.equal(summary.resultPreview, Array.from(text).slice(0, 200).join(''));
    }
  }
  store.updateRound('t1', 1, { result: null });
  assert.equal(store.roundSummary('t1', 1)!.resultChars, null);
  assert.equal(taskView(store, store.getTask('t1')!).result, null);
});

test('commentary: appends past the cap drop whole chunks from the front and count what they dropped', (t) => {
  const store = storeWithTask(t);
  const cap = 64 * 1024;
  let appended = '';
  for (let i = 0; i < 400; i++) {
    const piece = `${i}:${'é'.repeat(200)}😀\n`;
    appended += piece;
    store.appendCommentary('t1', piece, cap);
  }
  const { tail, dropped } = store.getCommentary('t1');
  assert.ok(Buffer.byteLength(tail) <= cap, 'the tail stays within its cap');
  assert.ok(Buffer.byteLength(tail) > cap / 2, 'and keeps most of it');
  assert.ok(appended.endsWith(tail), 'the tail is the end of what was appended');
  assert.equal(dropped + Array.from(tail).length, Array.from(appended).length, 'offsets stay absolute');

  // One append larger than the cap keeps only its own end.
  store.appendCommentary('t1', 'z'.repeat(cap * 2), cap);
  const big = store.getCommentary('t1');
  assert.equal(big.tail, 'z'.repeat(cap));
  assert.equal(big.dropped + cap, Array.from(appended).length + cap * 2);
});

test('a view takes the stored length and preview; the operator list reads through its index', (t) => {
  const store = storeWithTask(t);
  store.updateRound('t1', 1, { result: 'r'.repeat(300) });
  store.setTaskState('t1', 'succeeded', new Date().toISOString());
  store.appendCommentary('t1', 'c'.repeat(1000));
  const view = taskView(store, store.getTask('t1')!);
  assert.deepEqual(view.result, { chars: 300, preview: 'r'.repeat(200), complete: false });
  // 200 code points (400 UTF-16 units) is still whole; one more is not (rule: whole-preview).
  store.updateRound('t1', 1, { result: '😀'.repeat(200) });
  assert.deepEqual(taskView(store, store.getTask('t1')!).result, {
    chars: 200,
    preview: '😀'.repeat(200),
    complete: true,
  });
  store.updateRound('t1', 1, { result: '😀'.repeat(201) });
  assert.equal(taskView(store, store.getTask('t1')!).result?.complete, false);
  const plan = store.db
    .prepare('EXPLAIN QUERY PLAN SELECT id FROM tasks WHERE list_order > ? ORDER BY list_order LIMIT ?')
    .all(0, 10)
    .map((r) => String((r as { detail: string }).detail))
    .join('; ');
  assert.match(plan, /USING INDEX tasks_by_order/, 'the operator list reads through its index');
});

test('durability: commits run at synchronous NORMAL; a durableTx commits at FULL and may join only a durable one', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-sync-'));
  const store = new Store(join(dir, 'baton.db'));
  t.after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // 1 = NORMAL, 2 = FULL: the level SQLite applies to the commit of the transaction the callback runs in.
  const level = () => (store.db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous;
  const now = new Date().toISOString();
  const seen: Record<string, number> = {};
  store.tx(() => {
    seen.tx = level();
    store.insertTask({ id: 't1', caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now });
  });
  store.durableTx(() => {
    seen.durable = level();
    store.tx(() => {
      seen.nested = level();
      store.insertRound('t1', 'prompt');
    });
  });
  seen.after = level();
  assert.deepEqual(seen, { tx: 1, durable: 2, nested: 2, after: 1 });
  assert.throws(
    () => store.tx(() => store.durableTx(() => store.insertRound('t1', 'lost'))),
    /durable write cannot join a transaction begun without it/,
  );
  // The refused write rolled the outer transaction back: one round, and the level is NORMAL again.
  assert.equal(store.getTask('t1')?.rounds, 1);
  assert.equal(level(), 1);
});

test('syncSoon syncs the WAL from a descriptor of its own, which close() releases', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-sync-soon-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'baton.db');
  const store = new Store(path);
  const walFds = () =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === `${path}-wal`;
      } catch {
        return false;
      }
    });
  const sqliteOwn = walFds().length;
  const now = new Date().toISOString();
  store.tx(() =>
    store.insertTask({ id: 't1', caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now }),
  );
  store.syncSoon();
  store.syncSoon(); // joins the pending one
  await until(() => walFds().length === sqliteOwn + 1, { what: 'the background sync to open the WAL' });
  store.close();
  await until(() => walFds().length === 0, { what: 'close() to release every descriptor of the WAL' });
  // A sync asked for just before close() is dropped with it.
  const again = new Store(path);
  again.syncSoon();
  again.close();
  assert.deepEqual(walFds(), []);
  const reopened = new Store(path);
  assert.equal(reopened.getTask('t1')?.id, 't1');
  reopened.close();
});

test('admissions committed together share one WAL sync and one marker write; a commit during a sync waits for the next (rule: crash-durability)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-group-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'baton.db');
  // Counts the WAL syncs the store asks the thread pool for (store.ts imports fdatasync from node:fs).
  const realSync = fs.fdatasync;
  let syncs = 0;
  let holdNext: Promise<void> | undefined;
  fs.fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    syncs++;
    const hold = holdNext;
    holdNext = undefined;
    void (hold ?? Promise.resolve()).then(() => realSync(fd, cb));
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
  t.after(() => {
    fs.fdatasync = realSync;
    syncBuiltinESMExports();
  });
  const store = new Store(path);
  t.after(() => store.close());
  const now = new Date().toISOString();
  const admit = (id: string) =>
    store.commitThenSync(() =>
      store.insertTask({ id, caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now }),
    );
  const a = admit('t-a');
  const b = admit('t-b');
  // Committed at once, marked only when their sync starts.
  assert.equal(store.getTask('t-b')?.id, 't-b');
  assert.equal(readMarker(path)?.tasks, 0);
  await Promise.all([a, b]);
  assert.equal(syncs, 1, 'one sync for both');
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [2, 't-b']);

  // A commit made while a sync runs is not covered by it: its answer waits for the next sync.
  let release!: () => void;
  holdNext = new Promise<void>((resolve) => {
    release = resolve;
  });
  const c = admit('t-c');
  await until(() => syncs === 2, { what: 'the sync of t-c to start' });
  const d = admit('t-d');
  let dSynced = false;
  void d.then(() => {
    dSynced = true;
  });
  release();
  await c;
  assert.equal(dSynced, false, 't-d came while the sync of t-c ran');
  await d;
  assert.equal(syncs, 3);
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [4, 't-d']);
});

test('the marker never counts a task whose transaction rolled back', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-rollback-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'baton.db');
  const store = new Store(path);
  t.after(() => store.close());
  const now = new Date().toISOString();
  const task = (id: string) => ({
    id,
    caller: 'c',
    agent: 'a',
    cwd: '/',
    workdir: '/',
    isolation: 'none' as const,
    now,
  });
  store.tx(() => store.insertTask(task('t-1')));
  assert.throws(
    () =>
      store.tx(() => {
        store.insertTask(task('t-gone'));
        throw new Error('refused after the insert');
      }),
    /refused after the insert/,
  );
  assert.equal(store.getTask('t-gone'), undefined);
  // The next commit inserts nothing, yet rewrites the marker (the failed insert left it to do): still t-1.
  store.tx(() => store.setTaskState('t-1', 'running', now));
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [1, 't-1']);
  store.tx(() => store.insertTask(task('t-2')));
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [2, 't-2']);
});

test('the marker is updated in place while the store is open: same file, never truncated, always whole JSON', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-marker-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'baton.db');
  const file = markerPath(path);
  const writer = new MarkerWriter(path);
  t.after(() => writer.close());
  const base = { schema: 4, header: null, clean: false };
  writer.reset({ ...base, tasks: 9, lastTaskId: 'a-rather-long-task-id-0000000000' });
  const ino = fs.statSync(file).ino;
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  // A shorter marker over a longer one: padded, so nothing of the old text is left after its end.
  writer.update({ ...base, tasks: 10, lastTaskId: 't-10' });
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [10, 't-10']);
  const padded = fs.statSync(file).size;
  // A longer one grows the file.
  writer.update({ ...base, tasks: 11, lastTaskId: `t-${'x'.repeat(100)}` });
  assert.deepEqual([readMarker(path)?.tasks, readMarker(path)?.lastTaskId], [11, `t-${'x'.repeat(100)}`]);
  assert.ok(fs.statSync(file).size > padded);
  assert.equal(fs.statSync(file).ino, ino, 'written in place, not replaced');
  assert.deepEqual(
    readdirSync(dir).filter((f) => f.includes('tmp')),
    [],
    'no temp files',
  );
});

test('event pages: message text is kept apart from the event JSON and a page without it never reads it; old rows migrate', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-store-events-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'state.db');
  const text = `${'😀'.repeat(3)}answer\n`;
  const time = new Date().toISOString();
  const open = () => {
    const s = new Store(path);
    if (!s.getTask('t1'))
      s.insertTask({ id: 't1', caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now: time });
    return s;
  };
  let store = open();
  store.appendEvent('t1', { time, round: 1, kind: 'commentary', text: 'looking' });
  store.appendEvent('t1', { time, round: 1, kind: 'message', text });
  const stored = store.db.prepare('SELECT data, text, chars FROM events ORDER BY seq').all() as {
    data: string;
    text: string | null;
    chars: number;
  }[];
  assert.deepEqual(
    stored.map((r) => [JSON.parse(r.data).text, r.text, r.chars]),
    [
      ['looking', null, 7],
      [undefined, text, 10],
    ],
    "a message's text is in its own column, not in the JSON; chars counts code points",
  );
  const expectPages = (s: Store) => {
    assert.deepEqual(s.eventPage('t1', 0, 10, Number.POSITIVE_INFINITY, true).events, [
      { seq: 1, time, round: 1, kind: 'commentary', text: 'looking' },
      { seq: 2, time, round: 1, kind: 'message', text },
    ]);
    assert.deepEqual(s.eventPage('t1', 0, 10, 8_192, false).events[1], {
      seq: 2,
      time,
      round: 1,
      kind: 'message',
      chars: 10,
    });
    // The text budget counts the message's text only where the page carries it.
    assert.equal(s.eventPage('t1', 0, 10, 8, true).events.length, 1);
    assert.equal(s.eventPage('t1', 0, 10, 8, false).events.length, 2);
  };
  expectPages(store);
  // A store written before migration 4 held every text inside the event JSON: put the rows back that way.
  // Without the row checksums and the usage and remote worker tables that came after, too.
  for (const { name } of store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all() as {
    name: string;
  }[]) {
    store.db.exec(`DROP TRIGGER ${name}`);
  }
  for (const { name: table } of store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
    name: string;
  }[]) {
    for (const { name } of store.db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]) {
      if (name.endsWith('_sum')) store.db.exec(`ALTER TABLE ${table} DROP COLUMN ${name}`);
    }
  }
  store.db.exec(`UPDATE events SET data = json_set(data, '$.text', text) WHERE text IS NOT NULL;
    ALTER TABLE events DROP COLUMN text; ALTER TABLE events DROP COLUMN chars;
    DROP TABLE round_usage; DROP TABLE usage_days; DROP TABLE remote_workers; PRAGMA user_version = 3;`);
  store.close();
  store = open();
  t.after(() => store.close());
  expectPages(store);
});

test('pages are cut while stepping: each page query is prepared once whatever its limit, and the lists stay on their indexes', (t) => {
  const store = new Store(':memory:');
  t.after(() => store.close());
  const time = new Date().toISOString();
  for (const id of ['t1', 't2', 't3']) {
    store.insertTask({ id, caller: 'c', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now: time });
    store.insertRound(id, `prompt of ${id}`);
  }
  for (let i = 0; i < 5; i++) store.appendEvent('t1', { time, round: 1, kind: 'commentary', text: `step ${i}` });
  const statements = (store as unknown as { statements: Map<string, unknown> }).statements;
  const pages = () => {
    const seen: unknown[] = [];
    for (const limit of [1, 2, 4, 5, 9]) {
      const page = store.eventPage('t1', 0, limit, Number.POSITIVE_INFINITY, false);
      seen.push([page.events.map((e) => e.seq), page.hasMore]);
      seen.push(store.listTasks(null, null, limit, 'newest').tasks.map((r) => r.id));
      seen.push(store.listTasks('c', 1, limit, 'oldest').tasks.map((r) => r.id));
      seen.push(store.overviewTasks('', Number.MAX_SAFE_INTEGER, limit, 20).map((r) => r.task.id));
    }
    return seen;
  };
  assert.deepEqual(pages(), [
    [[1], true],
    ['t3'],
    ['t2'],
    ['t3'],
    [[1, 2], true],
    ['t3', 't2'],
    ['t2', 't3'],
    ['t3', 't2'],
    [[1, 2, 3, 4], true],
    ['t3', 't2', 't1'],
    ['t2', 't3'],
    ['t3', 't2', 't1'],
    [[1, 2, 3, 4, 5], false],
    ['t3', 't2', 't1'],
    ['t2', 't3'],
    ['t3', 't2', 't1'],
    [[1, 2, 3, 4, 5], false],
    ['t3', 't2', 't1'],
    ['t2', 't3'],
    ['t3', 't2', 't1'],
  ]);
  const prepared = statements.size;
  pages();
  assert.equal(statements.size, prepared, 'other limits reuse the same statements');
  const pageSql = [...statements.keys()].filter((sql) => /ORDER BY (seq|list_order)/.test(sql));
  assert.ok(pageSql.length >= 4, 'the page queries went through the statement cache');
  for (const sql of pageSql) {
    // A bound LIMIT makes SQLite parse and plan the statement again at every run (3.53 plans with the bound value).
    assert.doesNotMatch(sql, /LIMIT\s+\?/, sql);
    const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail);
    assert.ok(
      plan.some((d) => /USING (INDEX|PRIMARY KEY)|sqlite_autoindex/.test(d)) &&
        !plan.some((d) => /TEMP B-TREE/.test(d)),
      `${sql}: ${plan.join('; ')}`,
    );
  }
});
