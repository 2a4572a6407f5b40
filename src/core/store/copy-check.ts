// What a store file (a backup copy, or a file offered for restore) holds and whether it can be trusted: checked on
// the file before SQLite opens it (empty, not SQLite, truncated, an unfinished write beside it), then inside it
// (baton's tables and schema version, PRAGMA integrity_check, every row's checksum), and summed up as what a restore
// would keep or lose.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { damagedRows, registerRowSums } from './row-sums.ts';
import { MIGRATIONS } from './schema.ts';

/** The schema version this baton writes (PRAGMA user_version after every migration). */
export const SCHEMA_VERSION = MIGRATIONS.length;

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** Tables every baton store has had since its first schema version. */
const BATON_TABLES = ['tasks', 'rounds', 'events', 'idempotency', 'workers'];

/** What a store file holds: its schema version and tasks, the newest by creation and by last change. */
export interface StoreContents {
  schema: number;
  tasks: number;
  lastTaskId: string | null;
  newestCreated: string | null;
  newestUpdated: string | null;
  /** Whether the task asked about (`wanted`) is there; true when none was asked about. */
  holdsWanted: boolean;
}

export type CopyVerdict =
  | { ok: true; contents: StoreContents }
  /** `newerSchema`: a baton store written by a later baton, which this one cannot read. */
  | { ok: false; problem: string; newerSchema?: number };

function head(path: string, bytes: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    return buf.subarray(0, readSync(fd, buf, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

/**
 * What can be told from the file alone, without SQLite: empty, not a SQLite database, shorter than its header says,
 * or with a rollback journal beside it (a write that did not finish; SQLite would roll it back on open). Null: none.
 */
export function fileProblem(path: string): string | null {
  if (!existsSync(path)) return 'is missing';
  const size = statSync(path).size;
  if (size === 0) return 'is empty (0 bytes)';
  const h = head(path, 100);
  if (h.length < 100 || !h.subarray(0, 16).equals(SQLITE_MAGIC)) return 'is not a SQLite database';
  const rawPage = h.readUInt16BE(16);
  const pageSize = rawPage === 1 ? 65_536 : rawPage;
  const pages = h.readUInt32BE(28);
  const countValid = h.readUInt32BE(24) === h.readUInt32BE(92);
  if (size % pageSize !== 0 || (countValid && pages > 0 && size < pages * pageSize)) {
    return `is truncated (${size} bytes; its header says ${pages} pages of ${pageSize})`;
  }
  if (existsSync(`${path}-journal`)) return 'has a rollback journal beside it: a write into it did not finish';
  return null;
}

/** The contents of an open baton store, or why it is not one. */
export function contentsOf(db: DatabaseSync, wanted: string | null = null): StoreContents | string {
  const schema = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  const tables = new Set(
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name),
  );
  const missing = BATON_TABLES.filter((t) => !tables.has(t));
  if (schema === 0 || missing.length) {
    return `is not a baton store (schema version ${schema}; ${missing.length ? `no table ${missing.join(', ')}` : 'tables unknown'})`;
  }
  const last = db.prepare('SELECT id, list_order FROM tasks ORDER BY list_order DESC LIMIT 1').get() as
    | { id: string; list_order: number }
    | undefined;
  const newest = db.prepare('SELECT MAX(created_at) AS created, MAX(updated_at) AS updated FROM tasks').get() as {
    created: string | null;
    updated: string | null;
  };
  return {
    schema,
    tasks: last?.list_order ?? 0,
    lastTaskId: last?.id ?? null,
    newestCreated: newest.created,
    newestUpdated: newest.updated,
    holdsWanted: wanted === null || db.prepare('SELECT 1 FROM tasks WHERE id = ?').get(wanted) !== undefined,
  };
}

/**
 * A copy judged whole: the file checks, then (opened read only) baton's tables and PRAGMA integrity_check, which reads
 * every page and compares every index with its table. `full: false` skips integrity_check, for judging many copies;
 * `wanted` names a task whose presence is reported (holdsWanted).
 */
export function inspectCopy(path: string, full = true, wanted: string | null = null): CopyVerdict {
  const problem = fileProblem(path);
  if (problem) return { ok: false, problem };
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly: true });
  } catch (err) {
    return { ok: false, problem: `cannot be opened: ${(err as Error).message}` };
  }
  try {
    if (full) {
      const rows = (db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[]).map(
        (r) => r.integrity_check,
      );
      if (rows.length !== 1 || rows[0] !== 'ok') {
        return { ok: false, problem: `fails PRAGMA integrity_check: ${rows.slice(0, 3).join('; ')}` };
      }
    }
    const contents = contentsOf(db, wanted);
    if (typeof contents === 'string') return { ok: false, problem: contents };
    if (full && contents.schema >= SCHEMA_VERSION) {
      registerRowSums(db);
      const bad = damagedRows(db);
      if (bad.length) {
        return {
          ok: false,
          problem: `has ${bad.length} row(s) that do not match their checksums (first in ${bad[0]!.table})`,
        };
      }
    }
    if (contents.schema > SCHEMA_VERSION) {
      return {
        ok: false,
        problem: `has schema version ${contents.schema}, newer than this baton's (${SCHEMA_VERSION})`,
        newerSchema: contents.schema,
      };
    }
    return { ok: true, contents };
  } catch (err) {
    return { ok: false, problem: `cannot be read: ${(err as Error).message}` };
  } finally {
    db.close();
  }
}
