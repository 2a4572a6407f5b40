// Checking, copying and restoring the store: `baton store check|backup|restore` and the hub's scheduled
// online backups. Copies are `VACUUM INTO` snapshots (consistent while the hub keeps writing) in <stateDir>/backups,
// 0600. A restore never runs under a live hub (it needs the daemon lease) and keeps the files it replaces.
import { closeSync, copyFileSync, existsSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { compareCodeUnits } from '../lib/chars.ts';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../lib/private-fs.ts';
import { DaemonLease, LeaseHeldError } from './lease.ts';
import { Store } from './store.ts';
import { markerPath, readMarker, StoreDamagedError, walPath } from './store-guard.ts';

export const DB_FILE = 'baton.db';
export const backupsDir = (stateDir: string) => join(stateDir, 'backups');
const BACKUP_NAME = /^baton-[0-9TZ-]+\.db$/;

export interface BackupInfo {
  name: string;
  path: string;
  size: number;
  mtimeMs: number;
}

/** Backups in the state dir, newest first (names are ASCII time stamps). */
export function listBackups(stateDir: string): BackupInfo[] {
  const dir = backupsDir(stateDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => BACKUP_NAME.test(n))
    .map((name) => {
      const path = join(dir, name);
      const st = statSync(path);
      return { name, path, size: st.size, mtimeMs: st.mtimeMs };
    })
    .sort((a, b) => compareCodeUnits(b.name, a.name));
}

/** Writes a `VACUUM INTO` copy of `db` into <stateDir>/backups (0600) and keeps the newest `keep`. */
export function backupInto(db: DatabaseSync, stateDir: string, keep: number): BackupInfo {
  const dir = ensurePrivateDir(backupsDir(stateDir));
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  let path = join(dir, `baton-${stamp}.db`);
  for (let i = 1; existsSync(path); i++) path = join(dir, `baton-${stamp}-${i}.db`);
  // VACUUM INTO accepts an empty file: creating it first gives it mode 0600 whatever the umask says.
  closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  try {
    db.prepare('VACUUM INTO ?').run(path);
  } catch (err) {
    rmSync(path, { force: true });
    throw err;
  }
  for (const old of listBackups(stateDir).slice(keep)) rmSync(old.path, { force: true });
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

/** quick_check and the marker comparison, as the hub's start would run them. */
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
        const tasks = store.markerState()?.tasks ?? 0;
        store.close();
        return `ok: quick_check passed, ${tasks} task(s), nothing missing`;
      } catch (err) {
        ok = false;
        return err instanceof StoreDamagedError ? err.message : `cannot open the store: ${(err as Error).message}`;
      }
    },
    () => {
      // A hub is running: read through a second connection, change nothing.
      const db = new DatabaseSync(dbPath);
      try {
        const rows = db.prepare('PRAGMA quick_check').all() as { quick_check: string }[];
        const bad = rows.filter((r) => r.quick_check !== 'ok').map((r) => r.quick_check);
        const tasks = (db.prepare('SELECT COALESCE(MAX(list_order), 0) AS n FROM tasks').get() as { n: number }).n;
        if (bad.length) ok = false;
        return bad.length
          ? `damaged (hub running): quick_check: ${bad.slice(0, 3).join('; ')}`
          : `ok (hub running): quick_check passed, ${tasks} task(s)`;
      } finally {
        db.close();
      }
    },
  );
  lines.push(verdict);
  const backups = listBackups(stateDir);
  lines.push(
    backups.length
      ? `backups (newest first): ${backups.map((b) => b.name).join(', ')}`
      : `no backups yet in ${backupsDir(stateDir)}`,
  );
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

/**
 * Replaces the store with a backup. Refused while a hub holds the lease. The replaced files are kept beside it as
 * baton.db.replaced-<time> (and its WAL), and the marker is rewritten from the restored copy.
 */
export function restoreStore(stateDir: string, name: string): { from: string; tasks: number; keptAs: string | null } {
  const dbPath = join(stateDir, DB_FILE);
  const from = findBackup(stateDir, name);
  const check = new DatabaseSync(from, { readOnly: true });
  try {
    const rows = check.prepare('PRAGMA quick_check').all() as { quick_check: string }[];
    if (rows.length !== 1 || rows[0]!.quick_check !== 'ok')
      throw new Error(`the backup ${from} fails quick_check; pick another (\`baton store check\` lists them)`);
  } finally {
    check.close();
  }
  return withLease(
    stateDir,
    () => {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const tmp = `${dbPath}.restoring`;
      rmSync(tmp, { force: true });
      copyFileSync(from, tmp);
      let keptAs: string | null = null;
      if (existsSync(dbPath)) {
        keptAs = `${dbPath}.replaced-${stamp}`;
        renameSync(dbPath, keptAs);
      }
      if (existsSync(walPath(dbPath))) renameSync(walPath(dbPath), `${dbPath}.replaced-${stamp}-wal`);
      rmSync(`${dbPath}-shm`, { force: true });
      if (existsSync(markerPath(dbPath))) renameSync(markerPath(dbPath), `${dbPath}.replaced-${stamp}.marker.json`);
      renameSync(tmp, dbPath);
      // Opened once without a marker: quick_check runs and the marker is written for the restored copy.
      const store = new Store(dbPath);
      const tasks = store.markerState()?.tasks ?? 0;
      store.close();
      return { from, tasks, keptAs };
    },
    () => {
      throw new Error(`a hub is running on ${stateDir}: stop it (\`baton stop\`) before restoring`);
    },
  );
}
