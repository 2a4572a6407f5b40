// Store copies with real SQLite files: `store check` names every broken copy, rotation keeps good copies whatever
// broken ones lie beside them, and a restore refuses a copy that would lose data (empty, foreign, another schema,
// older than the store) unless forced, saying what it would lose.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { Store } from '../../src/core/store.ts';
import {
  backupInto,
  backupsDir,
  checkStore,
  listBackups,
  RestoreRefusedError,
  restoreStore,
} from '../../src/core/store-backup.ts';
import { ensurePrivateDir } from '../../src/lib/private-fs.ts';
import { tempDir } from '../support/tmp.ts';

const now = () => new Date().toISOString();

function addTasks(store: Store, n: number): void {
  const from = store.markerState()?.tasks ?? 0;
  for (let i = from; i < from + n; i++) {
    store.tx(() => {
      store.insertTask({
        id: `t-${i}`,
        caller: 'alice',
        agent: 'a',
        cwd: '/x',
        workdir: '/x',
        isolation: 'none',
        now: now(),
      });
      store.insertRound(`t-${i}`, `prompt ${i}`);
    });
  }
}

/** A state dir whose store holds `n` tasks, closed cleanly. */
function stateWith(t: Parameters<typeof tempDir>[0], n: number): string {
  const stateDir = tempDir(t);
  const store = new Store(join(stateDir, 'baton.db'));
  addTasks(store, n);
  store.close();
  return stateDir;
}

function backupNow(stateDir: string, keep: number): string {
  const store = new Store(join(stateDir, 'baton.db'));
  try {
    return backupInto(store.db, stateDir, keep).path;
  } finally {
    store.close();
  }
}

/** A pid no process has any more. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  return r.pid!;
}

/**
 * Copies the way a killed or damaged write leaves them, all under backup names newer than any good copy: empty, cut
 * short, with a hot journal beside, not SQLite at all, a SQLite file that is not baton's, and a good copy's
 * stray partial from a writer that is gone.
 */
function plantBroken(stateDir: string, good: string): string[] {
  const dir = backupsDir(stateDir);
  const names = {
    empty: 'baton-2999-01-01T00-00-00-001Z.db',
    cut: 'baton-2999-01-01T00-00-00-002Z.db',
    journal: 'baton-2999-01-01T00-00-00-003Z.db',
    text: 'baton-2999-01-01T00-00-00-004Z.db',
    foreign: 'baton-2999-01-01T00-00-00-005Z.db',
  };
  writeFileSync(join(dir, names.empty), '');
  copyFileSync(good, join(dir, names.cut));
  truncateSync(join(dir, names.cut), Math.floor(statSync(good).size / 2) + 100);
  copyFileSync(good, join(dir, names.journal));
  writeFileSync(join(dir, `${names.journal}-journal`), Buffer.alloc(512, 1));
  writeFileSync(join(dir, names.text), 'not a database\n'.repeat(10));
  const foreign = new DatabaseSync(join(dir, names.foreign));
  foreign.exec('CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES (1);');
  foreign.close();
  copyFileSync(good, join(dir, `.baton-2999-01-01T00-00-00-006Z.${deadPid()}.partial`));
  return Object.values(names);
}

test('store check names each broken copy; rotation keeps every good copy and drops the broken ones', (t) => {
  const stateDir = stateWith(t, 3);
  ensurePrivateDir(backupsDir(stateDir));
  const first = backupNow(stateDir, 5);
  const second = backupNow(stateDir, 5);
  const broken = plantBroken(stateDir, first);

  const report = checkStore(stateDir);
  assert.equal(report.ok, false, 'a broken copy makes check fail');
  const text = report.lines.join('\n');
  const line = (name: string) => report.lines.find((l) => l.includes(name)) ?? '';
  assert.match(line(broken[0]!), /BROKEN: is empty \(0 bytes\)/);
  assert.match(line(broken[1]!), /BROKEN: is truncated/);
  assert.match(line(broken[2]!), /BROKEN: has a rollback journal beside it/);
  assert.match(line(broken[3]!), /BROKEN: is not a SQLite database/);
  assert.match(line(broken[4]!), /BROKEN: is not a baton store/);
  assert.match(text, /\.partial: an unfinished copy whose writer is gone/);
  for (const good of [first, second]) {
    assert.match(line(good.split('/').at(-1)!), /: ok, 3 task\(s\), schema \d+, newest created/);
  }
  assert.match(text, /5 broken backup\(s\)/);
  assert.deepEqual(
    listBackups(stateDir).map((b) => b.path),
    [second, first],
    'only good copies are backups',
  );

  // keep = 3: two good copies and the new one are kept, whatever broken copies are newer than them.
  const third = backupNow(stateDir, 3);
  assert.deepEqual(
    readdirSync(backupsDir(stateDir)).sort(),
    [first, second, third].map((p) => p.split('/').at(-1)).sort(),
    'the good copies stay; broken copies and the stray partial are gone',
  );
  assert.equal(checkStore(stateDir).ok, true);

  // keep = 2 drops the oldest good copy only.
  backupNow(stateDir, 2);
  assert.equal(existsSync(first), false);
  assert.equal(existsSync(third), true);
});

test('a copy that fails integrity_check is broken though its file looks whole', (t) => {
  const stateDir = stateWith(t, 40);
  const good = backupNow(stateDir, 5);
  const damaged = join(backupsDir(stateDir), 'baton-2999-01-01T00-00-00-000Z.db');
  copyFileSync(good, damaged);
  // Swap two pages past the schema: every byte is SQLite's own, but the tree no longer fits together.
  const db = readFileSync(damaged);
  const pageSize = db.readUInt16BE(16);
  const a = db.subarray(pageSize * 2, pageSize * 3);
  const b = Buffer.from(db.subarray(pageSize * 3, pageSize * 4));
  Buffer.from(a).copy(db, pageSize * 3);
  b.copy(db, pageSize * 2);
  writeFileSync(damaged, db);
  const report = checkStore(stateDir);
  assert.equal(report.ok, false);
  assert.match(
    report.lines.join('\n'),
    /baton-2999-01-01T00-00-00-000Z\.db: BROKEN: (fails PRAGMA integrity_check|cannot be read)/,
  );
  assert.throws(() => restoreStore(stateDir, damaged), RestoreRefusedError);
});

test('restore refuses an empty, foreign, other-schema or older copy unless forced, and says what it would lose', (t) => {
  const stateDir = stateWith(t, 2);
  const older = backupNow(stateDir, 5);
  const dir = tempDir(t);
  const empty = join(dir, 'empty.db');
  writeFileSync(empty, '');
  const foreign = join(dir, 'foreign.db');
  const f = new DatabaseSync(foreign);
  f.exec('CREATE TABLE tasks (id TEXT); PRAGMA user_version = 7;');
  f.close();
  const otherSchema = join(dir, 'other-schema.db');
  copyFileSync(older, otherSchema);
  const o = new DatabaseSync(otherSchema);
  o.exec('PRAGMA user_version = 3');
  o.close();

  const newer = join(dir, 'newer-schema.db');
  copyFileSync(older, newer);
  const w = new DatabaseSync(newer);
  w.exec('PRAGMA user_version = 99');
  w.close();

  // The store moves on: three more tasks after the copy was taken.
  const store = new Store(join(stateDir, 'baton.db'));
  addTasks(store, 3);
  store.close();

  const refused = (file: string, why: RegExp) =>
    assert.throws(
      () => restoreStore(stateDir, file),
      (err: unknown) => {
        assert.ok(err instanceof RestoreRefusedError, String(err));
        assert.match(err.message, why);
        assert.match(err.message, /the store holds 5 task\(s\)/i);
        assert.match(err.message, /--force/);
        return true;
      },
    );
  refused(empty, /is empty \(0 bytes\).*loses 5 task\(s\)/);
  refused(foreign, /is not a baton store/);
  refused(otherSchema, /schema version 3, the store \d+/);
  refused(
    older,
    /older than the store: it holds 2 task\(s\) and not the store's last task t-4, the store held 5.*the copy holds 2 task\(s\).*loses 3 task\(s\) and every change made after/,
  );

  // A copy from a later baton is refused even with --force: this baton cannot read its tables.
  assert.throws(
    () => restoreStore(stateDir, newer, true),
    /schema version 99, newer than this baton's .*the baton that wrote it/,
  );

  // Nothing was touched by the refusals.
  const still = new Store(join(stateDir, 'baton.db'));
  assert.equal(still.markerState()?.tasks, 5);
  still.close();

  const forced = restoreStore(stateDir, older, true);
  assert.equal(forced.tasks, 2);
  assert.match(forced.lost ?? '', /loses 3 task\(s\)/);
  assert.ok(forced.keptAs && existsSync(forced.keptAs), 'the replaced store is kept');
  const after = new Store(join(stateDir, 'baton.db'));
  assert.equal(after.getTask('t-4'), undefined);
  assert.equal(after.getTask('t-1')?.id, 't-1');
  after.close();
});

test('a forced restore of a copy the store cannot open puts the old files back', (t) => {
  const stateDir = stateWith(t, 2);
  const dir = tempDir(t);
  const text = join(dir, 'text.db');
  writeFileSync(text, 'not a database\n'.repeat(10));
  assert.throws(() => restoreStore(stateDir, text, true), /the old files are back/);
  const store = new Store(join(stateDir, 'baton.db'));
  assert.equal(store.markerState()?.tasks, 2);
  store.close();
});
