// The store knows it had data: each way of losing baton.db or its WAL is refused at open with a message
// naming the file and the recovery commands, instead of SQLite quietly opening an empty store.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Store } from '../../src/core/store.ts';
import { readMarker, StoreDamagedError } from '../../src/core/store-guard.ts';
import { REPO_ROOT } from '../support/bins.ts';
import { tempDir } from '../support/tmp.ts';

const now = () => new Date().toISOString();

function addTasks(store: Store, n: number, from = 0): void {
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
      const r = store.insertRound(`t-${i}`, 'p'.repeat(2_000));
      store.appendEvent(`t-${i}`, { time: now(), round: r, kind: 'lifecycle', state: 'queued' });
    });
  }
}

/** A store with 50 tasks, closed cleanly (everything checkpointed into baton.db). */
function storeWithData(t: Parameters<typeof tempDir>[0]): string {
  const path = join(tempDir(t), 'baton.db');
  const store = new Store(path);
  addTasks(store, 50);
  store.close();
  return path;
}

function assertRefused(path: string, file: string): void {
  assert.throws(
    () => new Store(path),
    (err: unknown) => {
      assert.ok(err instanceof StoreDamagedError, String(err));
      assert.equal(err.file, file);
      assert.match(err.message, new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.match(err.message, /baton store check/);
      assert.match(err.message, /baton store restore/);
      return true;
    },
  );
}

/** Deterministic "random" bytes. */
function noise(n: number): Buffer {
  const out: Buffer[] = [];
  let h = Buffer.from('baton');
  while (out.length * 32 < n) {
    h = createHash('sha256').update(h).digest();
    out.push(h);
  }
  return Buffer.concat(out).subarray(0, n);
}

function overwrite(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, offset);
  closeSync(fd);
}

test('a fresh state dir opens as an empty store and writes its marker', (t) => {
  const path = join(tempDir(t), 'baton.db');
  const store = new Store(path);
  assert.equal(store.stats().queued, 0);
  addTasks(store, 2);
  assert.equal(store.markerState()?.tasks, 2);
  store.close();
  const marker = readMarker(path);
  assert.equal(marker?.tasks, 2);
  assert.equal(marker?.lastTaskId, 't-1');
  assert.equal(marker?.clean, true);
  assert.equal((statSync(`${path}.marker.json`).mode & 0o777).toString(8), '600');
  const again = new Store(path);
  assert.equal(again.stats().queued, 2);
  again.close();
});

test('a deleted baton.db is refused, not replaced by an empty store', (t) => {
  const path = storeWithData(t);
  rmSync(path);
  assertRefused(path, path);
  assert.equal(existsSync(path), false, 'the refusal created no new database');
});

test('a truncated baton.db is refused', (t) => {
  const path = storeWithData(t);
  truncateSync(path, statSync(path).size / 2);
  assertRefused(path, path);
});

test('a baton.db truncated to 0 bytes is refused', (t) => {
  const path = storeWithData(t);
  truncateSync(path, 0);
  assertRefused(path, path);
});

test('random bytes inside a page are refused (integrity_check)', (t) => {
  const path = storeWithData(t);
  // Page 3 onwards hold table b-trees; a whole page of noise breaks its structure.
  overwrite(path, 4096 * 3, noise(4096));
  assertRefused(path, path);
});

test('a deleted WAL holding commits not yet checkpointed is refused', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'baton.db');
  // A hub that dies (SIGKILL) never checkpoints: its last commits live only in the WAL.
  const child = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { Store } from ${JSON.stringify(join(REPO_ROOT, 'src/core/store.ts'))};
       const s = new Store(${JSON.stringify(path)});
       for (let i = 0; i < 5; i++) s.insertTask({ id: 't-' + i, caller: 'a', agent: 'a', cwd: '/', workdir: '/', isolation: 'none', now: 'x' });
       process.kill(process.pid, 'SIGKILL');`,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(child.signal, 'SIGKILL', child.stderr);
  assert.ok(statSync(`${path}-wal`).size > 0, 'the killed writer left its commits in the WAL');
  assert.equal(readMarker(path)?.tasks, 5);
  assert.equal(readMarker(path)?.clean, false);
  rmSync(`${path}-wal`);
  assertRefused(path, `${path}-wal`);
});

test('a WAL deleted after a clean stop is fine: everything was checkpointed', (t) => {
  const path = storeWithData(t);
  assert.equal(existsSync(`${path}-wal`), false);
  const store = new Store(path);
  assert.equal(store.stats().queued, 50);
  store.close();
});

test('a damaged WAL header is refused', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'baton.db');
  const store = new Store(path);
  addTasks(store, 5);
  // While the store is open its commits are in the WAL; damage the header as a crash image would have it.
  const wal = `${path}-wal`;
  assert.ok(statSync(wal).size > 32);
  overwrite(wal, 12, noise(8));
  assertRefused(path, wal);
  store.close();
});
