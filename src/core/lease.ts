// The OS-backed daemon lease (rule: crash-durability): an exclusive SQLite lock on `<stateDir>/lease.db`. SQLite's
// locks are POSIX advisory locks held by this process, so the OS releases them the moment the process dies — no stale
// PID files.

import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { PRIVATE_FILE_MODE } from '../lib/private-fs.ts';

export class LeaseHeldError extends Error {
  constructor(stateDir: string) {
    super(`another baton daemon is already running on state dir ${stateDir} (stop it with \`baton stop\`)`);
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
