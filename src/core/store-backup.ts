// Checking, copying and restoring the store: `baton store check|backup|restore` and the hub's scheduled
// online backups. Copies are `VACUUM INTO` snapshots (consistent while the hub keeps writing) in <stateDir>/backups,
// 0600. A restore never runs under a live hub (it needs the daemon lease) and keeps the files it replaces.
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { compareCodeUnits } from '../lib/chars.ts';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../lib/private-fs.ts';
import { DaemonLease, LeaseHeldError } from './lease.ts';
import {
  type CopyVerdict,
  contentsOf,
  fileProblem,
  inspectCopy,
  SCHEMA_VERSION,
  type StoreContents,
} from './store/copy-check.ts';
import { damagedRows, registerRowSums } from './store/row-sums.ts';
import { Store } from './store.ts';
import { markerPath, readMarker, StoreDamagedError, type StoreMarker, walPath } from './store-guard.ts';

export const DB_FILE = 'baton.db';
export const backupsDir = (stateDir: string) => join(stateDir, 'backups');
const BACKUP_NAME = /^baton-[0-9TZ-]+\.db$/;
/** A copy being written: renamed to its baton-<time>.db name only once it is synced and verified. */
const PARTIAL_NAME = /^\.baton-[0-9TZ-]+\.(\d+)\.partial(-journal)?$/;

export interface BackupInfo {
  name: string;
  path: string;
  size: number;
  mtimeMs: number;
}

interface JudgedBackup extends BackupInfo {
  verdict: CopyVerdict;
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}

/** Every file under a backup's name, newest first (names are ASCII time stamps), each judged (inspectCopy). */
function judgeBackups(stateDir: string, full: boolean): JudgedBackup[] {
  const dir = backupsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => BACKUP_NAME.test(n))
    .sort((a, b) => compareCodeUnits(b, a))
    .map((name) => {
      const path = join(dir, name);
      const st = statSync(path);
      return { name, path, size: st.size, mtimeMs: st.mtimeMs, verdict: inspectCopy(path, full) };
    });
}

/**
 * The good backups in the state dir, newest first: files under a backup's name that are whole SQLite files holding a
 * baton store (inspectCopy without integrity_check; every copy passed it before it got its name).
 */
export function listBackups(stateDir: string): BackupInfo[] {
  return judgeBackups(stateDir, false)
    .filter((b) => b.verdict.ok)
    .map(({ verdict: _, ...info }) => info);
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Copies whose writer is gone (killed mid-copy): never a backup, removed by the next backup. */
function abandonedPartials(stateDir: string): string[] {
  const dir = backupsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => {
    const m = PARTIAL_NAME.exec(n);
    return m !== null && !alive(Number(m[1]));
  });
}

/** fsync of a file or a dir, so a rename that follows is not ahead of the data on the disk. */
function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a `VACUUM INTO` copy of `db` into <stateDir>/backups (0600) and keeps the newest `keep` good copies. The copy
 * is written under a temporary name, synced, verified (integrity_check, a baton store of the source's schema holding
 * every task the store's marker counted before the copy began) and only then renamed to its baton-<time>.db name, so
 * a copy killed half-way never looks like a backup. Rotation counts good copies only: a broken one (written by an
 * older baton, or damaged since) never takes a good one's place; broken ones and abandoned partial copies are removed.
 */
export function backupInto(db: DatabaseSync, stateDir: string, keep: number): BackupInfo {
  const dir = ensurePrivateDir(backupsDir(stateDir));
  // Read before the copy begins: every task the marker counts was committed before it, so the copy must hold it.
  const marker = (() => {
    try {
      return readMarker(join(stateDir, DB_FILE));
    } catch {
      return null;
    }
  })();
  const source = contentsOf(db);
  const when = stamp();
  const tmp = join(dir, `.baton-${when}.${process.pid}.partial`);
  rmSync(tmp, { force: true });
  rmSync(`${tmp}-journal`, { force: true });
  // VACUUM INTO accepts an empty file: creating it first gives it mode 0600 whatever the umask says.
  closeSync(openSync(tmp, 'wx', PRIVATE_FILE_MODE));
  let path: string;
  try {
    db.prepare('VACUUM INTO ?').run(tmp);
    // VACUUM INTO writes its output without syncing it.
    syncPath(tmp);
    const verdict = inspectCopy(tmp, true, marker?.lastTaskId ?? null);
    if (!verdict.ok) throw new Error(`the copy ${verdict.problem}`);
    const c = verdict.contents;
    if (typeof source !== 'string' && c.schema !== source.schema) {
      throw new Error(`the copy has schema version ${c.schema}, the store ${source.schema}`);
    }
    if (marker && (c.tasks < marker.tasks || !c.holdsWanted)) {
      throw new Error(
        `the copy holds ${c.tasks} task(s) without ${marker.lastTaskId ?? '-'}; the store's marker records ${marker.tasks}`,
      );
    }
    path = join(dir, `baton-${when}.db`);
    for (let i = 1; existsSync(path); i++) path = join(dir, `baton-${when}-${i}.db`);
    renameSync(tmp, path);
    syncPath(dir);
  } catch (err) {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}-journal`, { force: true });
    throw new Error(`backup not written: ${(err as Error).message}`);
  }
  const judged = judgeBackups(stateDir, false);
  const good = judged.filter((b) => b.verdict.ok);
  for (const old of [...good.slice(keep), ...judged.filter((b) => !b.verdict.ok)]) {
    rmSync(old.path, { force: true });
    rmSync(`${old.path}-journal`, { force: true });
  }
  for (const n of abandonedPartials(stateDir)) rmSync(join(dir, n), { force: true });
  const st = statSync(path);
  return { name: basename(path), path, size: st.size, mtimeMs: st.mtimeMs };
}

/** Runs `fn` holding the daemon lease, or reports that a hub is running. */
function withLease<T>(stateDir: string, fn: () => T, busy: () => T): T {
  let lease: DaemonLease;
  try {
    lease = DaemonLease.acquire(ensurePrivateDir(stateDir));
  } catch (err) {
    if (err instanceof LeaseHeldError) return busy();
    throw err;
  }
  try {
    return fn();
  } finally {
    lease.release();
  }
}

export interface CheckReport {
  ok: boolean;
  lines: string[];
}

/** Rows that do not match their checksums, as report lines (none: empty). */
function rowDamage(db: DatabaseSync): string[] {
  const bad = damagedRows(db);
  if (!bad.length) return [];
  const byTable = new Map<string, number>();
  for (const b of bad) byTable.set(b.table, (byTable.get(b.table) ?? 0) + 1);
  return [
    `damaged rows: ${[...byTable].map(([t, n]) => `${n} in ${t}`).join(', ')} do not match their checksums; ` +
      'baton refuses to serve them: restore a copy (`baton store restore <backup>`, with the hub stopped)',
  ];
}

/** integrity_check, every row's checksum and the marker comparison, as the hub's start and reads would run them. */
export function checkStore(stateDir: string): CheckReport {
  const dbPath = join(stateDir, DB_FILE);
  const lines = [`store: ${dbPath}`];
  let ok = true;
  const marker = (() => {
    try {
      return readMarker(dbPath);
    } catch (err) {
      ok = false;
      lines.push((err as Error).message);
      return null;
    }
  })();
  if (marker)
    lines.push(
      `marker: ${marker.tasks} task(s), last ${marker.lastTaskId ?? '-'}, schema ${marker.schema}, ` +
        `${marker.clean ? 'stopped cleanly' : 'not stopped cleanly (or a hub is running)'}`,
    );
  if (!existsSync(dbPath) && !marker && ok) {
    lines.push('no store yet: a hub started here begins with an empty one');
    return { ok: true, lines };
  }
  const verdict = withLease(
    stateDir,
    () => {
      try {
        const store = new Store(dbPath);
        try {
          const damage = rowDamage(store.db);
          if (damage.length) {
            ok = false;
            return damage.join('\n');
          }
          const tasks = store.markerState()?.tasks ?? 0;
          return `ok: integrity_check passed, every row matches its checksum, ${tasks} task(s), nothing missing`;
        } finally {
          store.close();
        }
      } catch (err) {
        ok = false;
        return err instanceof StoreDamagedError ? err.message : `cannot open the store: ${(err as Error).message}`;
      }
    },
    () => {
      // A hub is running: read through a second connection, change nothing.
      const db = new DatabaseSync(dbPath, { readOnly: true });
      registerRowSums(db);
      try {
        const rows = db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
        const bad = rows.filter((r) => r.integrity_check !== 'ok').map((r) => r.integrity_check);
        const schema = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
        const damage = !bad.length && schema >= SCHEMA_VERSION ? rowDamage(db) : [];
        const tasks = (db.prepare('SELECT COALESCE(MAX(list_order), 0) AS n FROM tasks').get() as { n: number }).n;
        if (bad.length || damage.length) ok = false;
        return bad.length
          ? `damaged (hub running): integrity_check: ${bad.slice(0, 3).join('; ')}`
          : damage.length
            ? `damaged (hub running): ${damage.join('; ')}`
            : `ok (hub running): integrity_check passed, every row matches its checksum, ${tasks} task(s)`;
      } finally {
        db.close();
      }
    },
  );
  lines.push(verdict);
  const judged = judgeBackups(stateDir, true);
  if (!judged.length) lines.push(`no backups yet in ${backupsDir(stateDir)}`);
  else lines.push(`backups in ${backupsDir(stateDir)} (newest first):`);
  for (const b of judged)
    lines.push(`  ${b.name}: ${b.verdict.ok ? `ok, ${describe(b.verdict.contents)}` : `BROKEN: ${b.verdict.problem}`}`);
  for (const n of abandonedPartials(stateDir))
    lines.push(`  ${n}: an unfinished copy whose writer is gone (the next backup removes it)`);
  const broken = judged.filter((b) => !b.verdict.ok).length;
  if (broken) {
    ok = false;
    lines.push(
      `${broken} broken backup(s): they cannot be restored and do not count toward the ${'`backups.keep`'} copies; the next backup removes them`,
    );
  }
  return { ok, lines };
}

/** A backup now, whether or not a hub is running (a second connection reads a consistent snapshot). */
export function backupStore(stateDir: string, keep: number): BackupInfo {
  const dbPath = join(stateDir, DB_FILE);
  if (!existsSync(dbPath)) throw new Error(`no store at ${dbPath} to back up`);
  return withLease(
    stateDir,
    () => {
      const store = new Store(dbPath);
      try {
        return backupInto(store.db, stateDir, keep);
      } finally {
        store.close();
      }
    },
    () => {
      const db = new DatabaseSync(dbPath);
      try {
        return backupInto(db, stateDir, keep);
      } finally {
        db.close();
      }
    },
  );
}

/** Resolves a backup given by name (in backups/) or by path. */
function findBackup(stateDir: string, name: string): string {
  const inDir = join(backupsDir(stateDir), basename(name));
  const path = existsSync(inDir) && basename(name) === name ? inDir : resolve(name);
  if (!existsSync(path)) {
    const known = listBackups(stateDir).map((b) => b.name);
    throw new Error(`no backup ${name}${known.length ? ` (backups: ${known.join(', ')})` : ' (no backups yet)'}`);
  }
  return path;
}

/** How many tasks, the newest, and the last change: what a restore keeps or loses. */
function describe(c: Pick<StoreContents, 'schema' | 'tasks' | 'newestCreated' | 'newestUpdated'>): string {
  return (
    `${c.tasks} task(s), schema ${c.schema}` +
    (c.newestCreated ? `, newest created ${c.newestCreated}, last changed ${c.newestUpdated}` : '')
  );
}

/** The store as it stands, read without changing it: its contents when it opens, else null. */
function currentContents(dbPath: string): StoreContents | null {
  if (fileProblem(dbPath)) return null;
  try {
    const db = new DatabaseSync(dbPath, { readOnly: true });
    try {
      const c = contentsOf(db);
      return typeof c === 'string' ? null : c;
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

/** A restore refused: the copy is broken, foreign, of another schema or older than the store. */
export class RestoreRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreRefusedError';
  }
}

export interface RestoreResult {
  from: string;
  tasks: number;
  keptAs: string | null;
  /** What the store held that the copy does not, when the restore was forced past an objection. */
  lost: string | null;
}

/**
 * Replaces the store with a backup. Refused while a hub holds the lease. Refused (RestoreRefusedError, saying what it
 * would lose) unless `force` when the copy is empty, not a whole baton store (integrity_check), of another schema
 * version than the store, or older than the store (fewer tasks than it or its marker counted, or without the last
 * task). The replaced files are kept beside it as baton.db.replaced-<time> (and its WAL and marker), and the marker is
 * rewritten from the restored copy; a copy the store then cannot open is rolled back and the old files put back.
 */
export function restoreStore(stateDir: string, name: string, force = false): RestoreResult {
  const dbPath = join(stateDir, DB_FILE);
  const from = findBackup(stateDir, name);
  let marker: StoreMarker | null = null;
  try {
    marker = readMarker(dbPath);
  } catch {}
  const current = currentContents(dbPath);
  const verdict = inspectCopy(from, true, marker?.lastTaskId ?? null);
  const objections: string[] = [];
  const held = Math.max(current?.tasks ?? 0, marker?.tasks ?? 0);
  const storeSchema = current?.schema ?? marker?.schema ?? null;
  if (!verdict.ok) objections.push(`the copy ${from} ${verdict.problem}`);
  else {
    const c = verdict.contents;
    if (storeSchema !== null && c.schema !== storeSchema) {
      objections.push(
        `the copy has schema version ${c.schema}, the store ${storeSchema}` +
          (c.schema < storeSchema ? ' (an older copy is brought up to date when the store opens)' : ''),
      );
    }
    if (c.tasks < held || !c.holdsWanted) {
      objections.push(
        `the copy is older than the store: it holds ${c.tasks} task(s)` +
          `${marker?.lastTaskId && !c.holdsWanted ? ` and not the store's last task ${marker.lastTaskId}` : ''}, the store held ${held}`,
      );
    }
  }
  const storeSays = current
    ? `the store holds ${describe(current)}`
    : marker
      ? `the store's marker records ${marker.tasks} task(s) (last ${marker.lastTaskId ?? '-'}, schema ${marker.schema})`
      : null;
  const copySays = verdict.ok ? `the copy holds ${describe(verdict.contents)}` : 'nothing can be read from the copy';
  const lostTasks = verdict.ok ? Math.max(0, held - verdict.contents.tasks) : held;
  const lost =
    storeSays && held > 0
      ? `${storeSays}; ${copySays}: restoring it loses ${lostTasks} task(s)` +
        (verdict.ok && verdict.contents.newestUpdated
          ? ` and every change made after ${verdict.contents.newestUpdated}`
          : '')
      : null;
  if (!verdict.ok && verdict.newerSchema !== undefined) {
    // Not even --force: this baton would run on tables it does not know.
    throw new RestoreRefusedError(
      `not restored: the copy ${from} ${verdict.problem}; restore it with the baton that wrote it`,
    );
  }
  if (objections.length && !force) {
    throw new RestoreRefusedError(
      `not restored: ${objections.join('; ')}.${lost ? ` ${lost[0]!.toUpperCase()}${lost.slice(1)}.` : ''} ` +
        'Pick another copy (`baton store check` lists them and says which are good), or pass --force to restore this one anyway.',
    );
  }
  return withLease(
    stateDir,
    () => {
      const when = stamp();
      const tmp = `${dbPath}.restoring`;
      rmSync(tmp, { force: true });
      copyFileSync(from, tmp);
      syncPath(tmp);
      const moved: [string, string][] = [];
      const moveAside = (file: string, to: string) => {
        if (!existsSync(file)) return null;
        renameSync(file, to);
        moved.push([file, to]);
        return to;
      };
      const keptAs = moveAside(dbPath, `${dbPath}.replaced-${when}`);
      moveAside(walPath(dbPath), `${dbPath}.replaced-${when}-wal`);
      rmSync(`${dbPath}-shm`, { force: true });
      moveAside(markerPath(dbPath), `${dbPath}.replaced-${when}.marker.json`);
      renameSync(tmp, dbPath);
      try {
        // Opened once without a marker: integrity_check runs and the marker is written for the restored copy.
        const store = new Store(dbPath);
        const tasks = store.markerState()?.tasks ?? 0;
        store.close();
        return { from, tasks, keptAs, lost: objections.length ? lost : null };
      } catch (err) {
        for (const f of [dbPath, walPath(dbPath), `${dbPath}-shm`, markerPath(dbPath)]) rmSync(f, { force: true });
        for (const [file, to] of moved) renameSync(to, file);
        throw new Error(
          `not restored: the store cannot open the copy (${(err as Error).message}); the old files are back`,
        );
      }
    },
    () => {
      throw new Error(`a hub is running on ${stateDir}: stop it (\`baton stop\`) before restoring`);
    },
  );
}
