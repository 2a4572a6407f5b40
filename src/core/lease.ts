// The OS-backed daemon lease (rule: crash-durability): an exclusive SQLite lock on `<stateDir>/lease.db`. SQLite's
// locks are POSIX advisory locks held by this process, so the OS releases them the moment the process dies — no stale
// PID files. A lock on a file that was removed (or replaced) locks nothing the other daemon holds, so a lease taken is
// checked against the other signals a live daemon leaves (liveHubElsewhere) before anything is recovered.

import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PRIVATE_FILE_MODE } from '../lib/private-fs.ts';
import { markerPath } from './store-guard.ts';

export class LeaseHeldError extends Error {
  constructor(stateDir: string, detail?: string) {
    super(
      `another baton daemon is already running on state dir ${stateDir}${detail ? ` (${detail})` : ''} (stop it with \`baton stop\`)`,
    );
    this.name = 'LeaseHeldError';
  }
}

/** SQLite's primary result codes for "another connection holds the lock" (extended codes keep them in the low byte). */
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

/** node:sqlite reports SQLite's own result code as `errcode` on an ERR_SQLITE_ERROR. */
function isLockConflict(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown };
  if (e?.code !== 'ERR_SQLITE_ERROR' || typeof e.errcode !== 'number') return false;
  const primary = e.errcode & 0xff;
  return primary === SQLITE_BUSY || primary === SQLITE_LOCKED;
}

export class DaemonLease {
  private db: DatabaseSync | undefined;

  static acquire(stateDir: string): DaemonLease {
    const lease = new DaemonLease();
    const path = join(stateDir, 'lease.db');
    const db = new DatabaseSync(path);
    chmodSync(path, PRIVATE_FILE_MODE);
    try {
      db.exec('PRAGMA busy_timeout = 0; PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;');
      db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER)');
    } catch (err) {
      db.close();
      if (isLockConflict(err)) throw new LeaseHeldError(stateDir);
      throw err;
    }
    lease.db = db;
    const other = liveHubElsewhere(stateDir);
    if (other) {
      lease.release();
      throw new LeaseHeldError(stateDir, `pid ${other.pid}, ${other.why}; its lease file was missing`);
    }
    return lease;
  }

  release(): void {
    if (!this.db) return;
    try {
      this.db.exec('ROLLBACK');
    } catch {}
    this.db.close();
    this.db = undefined;
  }
}

/**
 * A daemon still running on `stateDir` though this process holds the lease (its lease file was removed), or undefined.
 * Only a store whose marker says no clean stop can be open in a daemon; then a live `baton serve` named by the listen
 * record, or one that is the parent of a worker group the store records, is running on it. A crashed daemon leaves
 * neither: its record names a gone process and its agents were reparented.
 */
export function liveHubElsewhere(stateDir: string): { pid: number; why: string } | undefined {
  const dbPath = join(stateDir, 'baton.db');
  const marker = readJson(markerPath(dbPath)) as { clean?: unknown } | undefined;
  if (!marker || marker.clean === true) return undefined;
  const listen = readJson(join(stateDir, 'listen.json')) as { pid?: unknown } | undefined;
  if (typeof listen?.pid === 'number' && isOtherHub(listen.pid)) return { pid: listen.pid, why: 'it is listening' };
  for (const pgid of workerGroups(dbPath)) {
    const parent = parentOf(pgid);
    if (parent !== undefined && isOtherHub(parent)) return { pid: parent, why: `its agent group ${pgid} is running` };
  }
  return undefined;
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The worker groups the store records (read-only; a store that cannot be read records none). */
function workerGroups(dbPath: string): number[] {
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(dbPath, { readOnly: true });
    return (db.prepare('SELECT pgid FROM workers').all() as { pgid: number }[]).map((r) => r.pgid);
  } catch {
    return [];
  } finally {
    db?.close();
  }
}

/** A process's parent pid from /proc (Linux); undefined where that cannot be read. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) && ppid > 1 ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** A live process other than this one that runs `baton serve` (where /proc cannot say, any live process). */
function isOtherHub(pid: number): boolean {
  if (pid === process.pid || pid <= 1) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve');
  } catch {
    return true;
  }
}
