// The durable store (rule: crash-durability): tasks, rounds, events, idempotency keys and worker process groups in
// SQLite (WAL). Every write that acknowledges something to a caller is committed before the answer goes out:
// node:sqlite is synchronous, so a method returning means its transaction is committed. The connection runs with
// `synchronous = NORMAL` (a commit reaches the OS, which survives a crash of the daemon); durableTx() also syncs the
// WAL to the disk before it returns, for what an answer acknowledges, and syncSoon() syncs it in the background for a
// round's end, so a power loss can take back only the last moments' progress (docs/hub.md, "Durability").
import { chmodSync, closeSync, existsSync, fdatasync, openSync } from 'node:fs';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { PRIVATE_FILE_MODE } from '../lib/private-fs.ts';
import { cutCodePoints } from '../lib/text.ts';
import {
  COMMENTARY_TAIL_BYTES,
  countCodePoints,
  keepTail,
  pageText,
  RESULT_PAGE_CODE_POINTS,
  splitCodePoints,
  type TextPage,
} from './paging.ts';
import {
  checkFiles,
  MarkerWriter,
  readHeaderChecksum,
  readMarker,
  StoreDamagedError,
  type StoreMarker,
  walPath,
  writeMarker,
} from './store-guard.ts';
import type { Isolation, RoundSummary, TaskEvent, TaskRow, TaskState } from './task.ts';

const MIGRATIONS: string[] = [
  `CREATE TABLE tasks (
     id TEXT PRIMARY KEY, caller TEXT NOT NULL, agent TEXT NOT NULL, cwd TEXT NOT NULL, workdir TEXT NOT NULL,
     isolation TEXT NOT NULL, model TEXT, effort TEXT, state TEXT NOT NULL, session_id TEXT, rounds INTEGER NOT NULL,
     created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT, last_seq INTEGER NOT NULL DEFAULT 0,
     commentary TEXT NOT NULL DEFAULT '', commentary_dropped INTEGER NOT NULL DEFAULT 0, list_order INTEGER NOT NULL);
   CREATE INDEX tasks_by_caller ON tasks(caller, list_order);
   CREATE TABLE rounds (
     task_id TEXT NOT NULL REFERENCES tasks(id), n INTEGER NOT NULL, prompt TEXT NOT NULL, state TEXT NOT NULL,
     started_at TEXT, ended_at TEXT, before TEXT, after TEXT, result TEXT, error TEXT, abandoned INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (task_id, n));
   CREATE TABLE events (
     task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq));
   CREATE TABLE idempotency (
     caller TEXT NOT NULL, key TEXT NOT NULL, payload_hash TEXT NOT NULL, task_id TEXT NOT NULL, round INTEGER NOT NULL,
     PRIMARY KEY (caller, key));
   CREATE TABLE workers (pgid INTEGER PRIMARY KEY, task_id TEXT NOT NULL, leader_start TEXT, started_at TEXT NOT NULL);`,
  // Reads that cost the same whatever the size of a result or of the commentary (issue 13). A result is kept in pages
  // of RESULT_PAGE_CODE_POINTS in its own table, with its length and preview in the round row (a large value inside
  // the row would make SQLite walk its overflow pages to reach any column stored after it); commentary is appended as
  // chunks with running totals and trimmed from the front a chunk at a time; the operator list and recovery read
  // through indexes. Rounds written before this migration keep their result in rounds.result (result_chars NULL) and
  // are measured and paged from it as before.
  `ALTER TABLE rounds ADD COLUMN result_chars INTEGER;
   ALTER TABLE rounds ADD COLUMN result_preview TEXT;
   CREATE TABLE result_pages (
     task_id TEXT NOT NULL REFERENCES tasks(id), n INTEGER NOT NULL, page INTEGER NOT NULL, text TEXT NOT NULL,
     PRIMARY KEY (task_id, n, page));
   CREATE TABLE commentary (
     task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL, text TEXT NOT NULL, bytes INTEGER NOT NULL,
     chars INTEGER NOT NULL, PRIMARY KEY (task_id, seq));
   ALTER TABLE tasks ADD COLUMN commentary_bytes INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE tasks ADD COLUMN commentary_chars INTEGER NOT NULL DEFAULT 0;
   INSERT INTO commentary (task_id, seq, text, bytes, chars)
     SELECT id, 1, commentary, length(CAST(commentary AS BLOB)), length(commentary) FROM tasks WHERE commentary <> '';
   UPDATE tasks SET commentary_bytes = length(CAST(commentary AS BLOB)), commentary_chars = length(commentary),
     commentary = '' WHERE commentary <> '';
   CREATE INDEX tasks_by_order ON tasks(list_order);
   CREATE INDEX tasks_by_state ON tasks(state, list_order);`,
  // Migration 3 (issue 14, hub): 2025-era MCP sessions outlive a hub restart. A row binds a session (by the SHA-256
  // of its id, never the id) to its caller; nothing else about the client is kept.
  `CREATE TABLE mcp_sessions (
     id_hash TEXT PRIMARY KEY, caller TEXT NOT NULL, created_at TEXT NOT NULL, last_seen TEXT NOT NULL);
   CREATE INDEX mcp_sessions_by_caller ON mcp_sessions(caller, last_seen);`,
  // Migration 4 (issue 13, event pages): an event's text length is a column, and a `message` event's text lives in a
  // column of its own rather than inside its JSON, so a page that leaves message text out (agent_status) reads neither
  // it nor JSON the size of it: its cost no longer grows with how much answer text was streamed.
  // `chars` comes before `text` in the row, so reading it never walks a long text's overflow pages.
  `ALTER TABLE events ADD COLUMN chars INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE events ADD COLUMN text TEXT;
   UPDATE events SET chars = length(json_extract(data, '$.text')) WHERE json_type(data, '$.text') = 'text';
   UPDATE events SET text = json_extract(data, '$.text'), data = json_remove(data, '$.text')
     WHERE json_extract(data, '$.kind') = 'message' AND json_type(data, '$.text') = 'text';`,
];

/** The task columns a TaskRow is built from: never the commentary, which lives in its own table. */
const TASK_COLUMNS =
  'id, caller, agent, cwd, workdir, isolation, model, effort, state, session_id, rounds, created_at, updated_at, error, last_seq';

/** A round without its prompt and result; `legacy_result` is only ever set on a round written before result pages. */
const ROUND_SUMMARY_COLUMNS = `task_id, n, state, started_at, ended_at, before, after, error, abandoned, result_chars,
  result_preview, result AS legacy_result`;

/**
 * Event pages (Store.eventPage). `chars` is the length in code points of the event's text, stored when it was
 * appended; a `message` event keeps its text in `text`, outside `data`.
 *
 * No statement here has `LIMIT ?`: SQLite (3.53) plans a LIMIT with the integer bound to it, so rebinding that
 * parameter expires the statement and every run parses and plans the SQL again. Pages are cut while stepping instead
 * (firstRows): SQLite reads rows only as they are asked for.
 */
const EVENTS_WITH_TEXT = 'SELECT data, text, chars FROM events WHERE task_id = ? AND seq > ? ORDER BY seq';
/** The same without `message` text, which is never read: such an event says how long its text is instead (`chars`). */
const EVENTS_WITHOUT_MESSAGE_TEXT = 'SELECT data, chars FROM events WHERE task_id = ? AND seq > ? ORDER BY seq';
/** Small commentary appends are joined into the newest chunk up to this size, so a chunk is never rewritten whole. */
const COMMENTARY_CHUNK_BYTES = 16 * 1024;
/** A result's preview: its first this many code points, which is all of an answer no longer than that. */
export const RESULT_PREVIEW_CODE_POINTS = 200;

/** What views show of a round's result without reading it. */
export interface ResultSummary {
  chars: number;
  preview: string;
  /** The preview is the whole answer (chars ≤ RESULT_PREVIEW_CODE_POINTS). */
  complete: boolean;
}

const summary = (chars: number, preview: string): ResultSummary => ({
  chars,
  preview,
  complete: chars <= RESULT_PREVIEW_CODE_POINTS,
});
/** How long a round's end may wait for its background sync (syncSoon). */
const SYNC_SOON_MS = 200;

export interface IdempotencyRecord {
  payloadHash: string;
  taskId: string;
  round: number;
}

export interface WorkerRecord {
  pgid: number;
  taskId: string;
  leaderStart: string | null;
}

type Row = Record<string, SQLInputValue>;

/** A write refused because the disk (or the file system holding the state dir) is full. */
export class StoreFullError extends Error {
  constructor(what: string) {
    super(`disk full: ${what}; free space on the disk holding baton's state dir and retry`);
    this.name = 'StoreFullError';
  }
}

const SQLITE_FULL = 13;

/** SQLITE_FULL from SQLite, or ENOSPC from a plain file write. */
export function isDiskFull(err: unknown): boolean {
  const e = err as { errcode?: number; code?: string; message?: string } | null;
  if (!e) return false;
  return (
    e instanceof StoreFullError ||
    (typeof e.errcode === 'number' && (e.errcode & 0xff) === SQLITE_FULL) ||
    e.code === 'ENOSPC' ||
    /database or disk is full|no space left on device/i.test(String(e.message))
  );
}

/** Rethrows a disk-full failure as StoreFullError so every caller sees one clear message. */
function diskFull(err: unknown, what: string): unknown {
  return isDiskFull(err) && !(err instanceof StoreFullError) ? new StoreFullError(what) : err;
}

/** Writes made inside another transaction by Store.inWrite, told how that transaction ended. */
export interface JoinedWrite {
  committed(): void;
  rolledBack(): void;
}

export class Store {
  readonly db: DatabaseSync;
  readonly path: string;
  /** The marker beside the DB (null for an in-memory store). */
  private marker: StoreMarker | null = null;
  private markerFile: MarkerWriter | undefined;
  /** A task was inserted in the current transaction: the marker is rewritten once it commits. */
  private markerDirty = false;
  /** The task inserted last (its id and list order), for the marker: inserted, not yet in a written marker. */
  private inserted: { id: string; order: number } | undefined;
  /** The DB header's checksum, kept once settled (see readHeaderChecksum). */
  private settledHeader: string | undefined;
  /**
   * Runs first inside each top-level transaction: the task log writes its queued events there, so they share that
   * transaction's commit and stay before what it writes. What it returns hears whether the transaction committed.
   */
  inWrite: (() => JoinedWrite | undefined) | undefined;

  /**
   * Opens the store at `path`, refusing (StoreDamagedError) when files are missing or damaged where the marker says
   * data existed, and when PRAGMA quick_check fails. A fresh state dir opens as an empty store.
   */
  constructor(path: string) {
    this.path = path;
    const onDisk = path !== ':memory:';
    const previous = onDisk ? readMarker(path) : null;
    if (onDisk) checkFiles(path, previous);
    const fresh = onDisk && !existsSync(path);
    try {
      this.db = new DatabaseSync(path);
      if (fresh) chmodSync(path, PRIVATE_FILE_MODE);
      this.db.exec(
        'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
      );
    } catch (err) {
      throw diskFull(err, `cannot open the store ${path}`);
    }
    try {
      if (onDisk) this.verify(previous);
      this.migrate();
      if (onDisk) {
        this.marker = { ...this.currentMarker(), clean: false };
        this.markerFile = new MarkerWriter(path);
        this.markerFile.reset(this.marker);
      }
    } catch (err) {
      // Closing without the clean mark: a refused store keeps its files exactly as they were found.
      this.markerFile?.close();
      this.db.close();
      throw diskFull(err, `cannot open the store ${path}`);
    }
  }

  /** quick_check, then the marker's promise: every task it counted is still there. */
  private verify(previous: StoreMarker | null): void {
    const problems = (this.stmt('PRAGMA quick_check').all() as { quick_check: string }[]).map((r) => r.quick_check);
    if (problems.length !== 1 || problems[0] !== 'ok') {
      const wal = existsSync(walPath(this.path)) ? ` (read together with its WAL ${walPath(this.path)})` : '';
      throw new StoreDamagedError(this.path, `fails PRAGMA quick_check${wal}: ${problems.slice(0, 3).join('; ')}`);
    }
    if (!previous || previous.tasks === 0) return;
    const { tasks, last } = this.counts();
    if (tasks < previous.tasks || (previous.lastTaskId !== null && !last.has(previous.lastTaskId))) {
      throw new StoreDamagedError(
        this.path,
        `holds ${tasks} task(s), but the store held ${previous.tasks} (last ${previous.lastTaskId ?? 'unknown'})`,
      );
    }
  }

  private counts(): { tasks: number; last: { has(id: string): boolean } } {
    const hasTable = this.stmt("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tasks'").get();
    if (!hasTable) return { tasks: 0, last: { has: () => false } };
    const tasks = (this.stmt('SELECT COALESCE(MAX(list_order), 0) AS n FROM tasks').get() as { n: number }).n;
    const byId = this.stmt('SELECT 1 FROM tasks WHERE id = ?');
    return { tasks, last: { has: (id) => byId.get(id) !== undefined } };
  }

  private currentMarker(): StoreMarker {
    const schema = (this.stmt('PRAGMA user_version').get() as { user_version: number }).user_version;
    const last = this.stmt('SELECT id, list_order FROM tasks ORDER BY list_order DESC LIMIT 1').get() as
      | { id: string; list_order: number }
      | undefined;
    return { schema, tasks: last?.list_order ?? 0, lastTaskId: last?.id ?? null, header: this.header(), clean: false };
  }

  private header(): string | null {
    if (this.settledHeader) return this.settledHeader;
    const { checksum, settled } = readHeaderChecksum(this.path);
    if (settled && checksum) this.settledHeader = checksum;
    return checksum;
  }

  /** Prepared statements by SQL text: preparing per call cost more than running the statement in an event flood. */
  private readonly statements = new Map<string, StatementSync>();

  private stmt(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** The marker as it stands (null in memory). */
  markerState(): StoreMarker | null {
    return this.marker;
  }

  private afterCommit(): void {
    if (!this.markerDirty || !this.marker) return;
    // The marker is a lower bound written after the commit: a crash (or a full disk) between the two leaves it behind
    // what is on disk, never ahead. A failed write is retried at the next task. The task inserted last is the one with
    // the highest list order (insertTask gives each the next), so no query is needed to know what the marker counts.
    try {
      const last = this.inserted;
      const next = last
        ? { ...this.marker, tasks: last.order, lastTaskId: last.id, header: this.header(), clean: false }
        : { ...this.currentMarker(), clean: false };
      this.markerFile!.update(next);
      this.marker = next;
      this.markerDirty = false;
      this.inserted = undefined;
    } catch {}
  }

  private migrate(): void {
    const version = (this.stmt('PRAGMA user_version').get() as { user_version: number }).user_version;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.tx(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
    }
  }

  /**
   * Runs `fn` in one transaction (nested calls join the outer one). A full disk fails as StoreFullError; SQLite may
   * already have rolled back by itself then, so ROLLBACK is issued only while a transaction is still open. The commit
   * reaches the OS but is not synced to the disk (synchronous = NORMAL): see durableTx.
   */
  tx<T>(fn: () => T): T {
    return this.transaction(fn, false);
  }

  /**
   * tx() whose commit is synced to the disk before it returns (synchronous = FULL for that one commit): for writes an
   * answer acknowledges (a run, continue or cancel) and for a round's end (rule: crash-durability). The WAL is written
   * in order, so the sync also covers every commit before it. SQLite fixes the level when a transaction begins, so a
   * durableTx may join only an outer durableTx.
   */
  durableTx<T>(fn: () => T): T {
    return this.transaction(fn, true);
  }

  /** The open transaction is a durable one. */
  private durableOpen = false;

  /**
   * tx() for a write an answer acknowledges: commits `fn` now and returns a promise that resolves once the commit is on
   * the disk (synced(): a group commit). The marker for a task it inserts is written when that sync starts, so
   * admissions in the same moment share one marker write as well as one sync.
   */
  commitThenSync(fn: () => void): Promise<void> {
    this.transaction(fn, false, true);
    return this.synced();
  }

  private transaction<T>(fn: () => T, durable: boolean, markerWithSync = false): T {
    if (this.db.isTransaction) {
      if (durable && !this.durableOpen) throw new Error('a durable write cannot join a transaction begun without it');
      return fn();
    }
    let out: T;
    let joined: JoinedWrite | undefined;
    try {
      if (durable) this.db.exec('PRAGMA synchronous = FULL');
      this.durableOpen = durable;
      try {
        // Prepared once like every other statement: exec() would parse the SQL text on each transaction.
        this.stmt('BEGIN IMMEDIATE').run();
        joined = this.inWrite?.();
        out = fn();
        this.stmt('COMMIT').run();
      } catch (err) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        // A task inserted by the rolled-back transaction is not there: the marker must not count it. What an earlier
        // commit inserted and a failed marker write left pending is recounted from the tables.
        this.inserted = undefined;
        throw err;
      } finally {
        this.durableOpen = false;
        if (durable) this.db.exec('PRAGMA synchronous = NORMAL');
      }
    } catch (err) {
      // Told once the transaction is over, so whatever it does next (queue a retry) starts from a closed transaction.
      joined?.rolledBack();
      throw diskFull(err, 'the store could not write');
    }
    joined?.committed();
    if (!markerWithSync) this.afterCommit();
    return out;
  }

  /**
   * Runs `fn` inside the open transaction so that its failure takes back its own writes only (a savepoint). A failure
   * after which SQLite already rolled the whole transaction back (a full disk can) leaves that to the caller.
   */
  savepoint<T>(fn: () => T): T {
    this.stmt('SAVEPOINT part').run();
    try {
      const out = fn();
      this.stmt('RELEASE part').run();
      return out;
    } catch (err) {
      if (this.db.isTransaction) {
        this.stmt('ROLLBACK TO part').run();
        this.stmt('RELEASE part').run();
      }
      throw err;
    }
  }

  /** The WAL, opened for syncs in the thread pool once it exists; syncs in flight, and a close waiting for them. */
  private walFd: number | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private syncsInFlight = 0;
  /** The sync in flight, and the next one, which every caller that comes while one is in flight shares. */
  private syncRunning: Promise<void> | undefined;
  private syncQueued: Promise<void> | undefined;

  /**
   * Resolves once every commit made before the call is on the disk (rule: crash-durability): the WAL is synced in the
   * thread pool, so the event loop goes on serving while the disk works, and callers that commit in the same moment
   * share one sync (a group commit). A caller that comes while a sync runs waits for the next one, which covers its
   * commit. Rejects when the sync fails; resolves at once for an in-memory or closed store (close checkpoints).
   */
  synced(): Promise<void> {
    if (!this.marker || !this.db.isOpen) return Promise.resolve();
    this.syncQueued ??= (this.syncRunning ?? Promise.resolve()).then(
      () => this.syncNow(),
      () => this.syncNow(),
    );
    return this.syncQueued;
  }

  private syncNow(): Promise<void> {
    this.syncQueued = undefined;
    // The marker of tasks committed with commitThenSync: one write for the group, after their commits.
    this.afterCommit();
    const run = new Promise<void>((resolve, reject) => {
      if (!this.db.isOpen) return resolve();
      try {
        this.walFd ??= openSync(walPath(this.path), 'r');
      } catch (err) {
        // No WAL: nothing was committed since the last checkpoint left the database file synced.
        return (err as NodeJS.ErrnoException).code === 'ENOENT' ? resolve() : reject(err);
      }
      this.syncsInFlight++;
      fdatasync(this.walFd, (err) => {
        this.syncsInFlight--;
        // close() came while the sync ran: the descriptor is released only now, so no later open can reuse its number
        // under a sync still in flight.
        if (!this.db.isOpen && this.syncsInFlight === 0) this.closeWal();
        if (err) reject(err);
        else resolve();
      });
    });
    this.syncRunning = run;
    const clear = () => {
      if (this.syncRunning === run) this.syncRunning = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  /**
   * synced() within SYNC_SOON_MS, for a commit nobody's answer waits on (a round's end) that should still reach the
   * disk soon, not only at the next synced commit or checkpoint. Calls within the delay share one sync. A failed sync
   * is left to the next one.
   */
  syncSoon(): void {
    if (this.syncTimer || !this.marker) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.synced().catch(() => {});
    }, SYNC_SOON_MS);
    this.syncTimer.unref();
  }

  private closeWal(): void {
    if (this.walFd === undefined) return;
    try {
      closeSync(this.walFd);
    } catch {}
    this.walFd = undefined;
  }

  /**
   * Closes the store: checkpoints the WAL into baton.db, then records the clean stop, so a WAL found missing later
   * while the marker says "not clean" means commits were lost.
   */
  close(): void {
    if (!this.db.isOpen) return;
    if (this.marker) {
      try {
        this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        this.marker = { ...this.currentMarker(), clean: true };
        writeMarker(this.path, this.marker);
      } catch {
        // A failed checkpoint (disk full) leaves the marker "not clean": the WAL stays and is replayed next time.
      }
    }
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.markerFile?.close();
    this.db.close();
    if (this.syncsInFlight === 0) this.closeWal();
  }

  // ---- tasks

  insertTask(t: {
    id: string;
    caller: string;
    agent: string;
    cwd: string;
    workdir: string;
    isolation: Isolation;
    model?: string;
    effort?: string;
    now: string;
  }): void {
    const order = (this.stmt('SELECT COALESCE(MAX(list_order), 0) + 1 AS o FROM tasks').get() as { o: number }).o;
    this.stmt(
      `INSERT INTO tasks (id, caller, agent, cwd, workdir, isolation, model, effort, state, rounds, created_at, updated_at, list_order)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?)`,
    ).run(
      t.id,
      t.caller,
      t.agent,
      t.cwd,
      t.workdir,
      t.isolation,
      t.model ?? null,
      t.effort ?? null,
      t.now,
      t.now,
      order,
    );
    this.markerDirty = true;
    this.inserted = { id: t.id, order };
    if (!this.db.isTransaction) this.afterCommit();
  }

  getTask(id: string): TaskRow | undefined {
    const r = this.stmt(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`).get(id) as Row | undefined;
    return r ? toTask(r) : undefined;
  }

  setTaskState(id: string, state: TaskState, now: string, error: string | null = null): void {
    this.stmt('UPDATE tasks SET state = ?, updated_at = ?, error = ? WHERE id = ?').run(state, now, error, id);
  }

  setSessionId(id: string, sessionId: string): void {
    this.stmt('UPDATE tasks SET session_id = ? WHERE id = ?').run(sessionId, id);
  }

  setWorkdir(id: string, workdir: string): void {
    this.stmt('UPDATE tasks SET workdir = ? WHERE id = ?').run(workdir, id);
  }

  tasksInStates(states: TaskState[]): TaskRow[] {
    const q = `SELECT ${TASK_COLUMNS} FROM tasks WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY list_order`;
    return (this.stmt(q).all(...states) as Row[]).map(toTask);
  }

  /**
   * One caller's tasks, or every caller's when `caller` is null (the operator), after list position `from` in the
   * given order (`from` null: from the start of that order).
   */
  listTasks(
    caller: string | null,
    from: number | null,
    limit: number,
    order: 'oldest' | 'newest' = 'oldest',
  ): { tasks: TaskRow[]; orders: number[] } {
    const newest = order === 'newest';
    const where = [
      ...(caller === null ? [] : ['caller = ?']),
      ...(from === null ? [] : [newest ? 'list_order < ?' : 'list_order > ?']),
    ];
    const q = `SELECT ${TASK_COLUMNS}, list_order FROM tasks${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY list_order${newest ? ' DESC' : ''}`;
    const params = [...(caller === null ? [] : [caller]), ...(from === null ? [] : [from])];
    const rows = firstRows(this.stmt(q).iterate(...params) as Iterable<Row>, limit);
    return { tasks: rows.map(toTask), orders: rows.map((r) => Number(r.list_order)) };
  }

  /** The list position of task `id` if `caller` may list it (any caller for null), for resolving a list cursor. */
  listOrderOf(caller: string | null, id: string): number | undefined {
    const r = this.stmt('SELECT caller, list_order FROM tasks WHERE id = ?').get(id) as Row | undefined;
    if (!r || (caller !== null && r.caller !== caller)) return undefined;
    return Number(r.list_order);
  }

  /**
   * The dashboard's list: every caller's tasks newest first, before list position `beforeOrder`, with the start of each
   * task's first prompt; `filter` (lower case, may be empty) keeps tasks whose id, caller, agent, state, cwd or prompt
   * start contains it. The operator's view only; the filter scans, which a page of a local dashboard can afford.
   */
  overviewTasks(
    filter: string,
    beforeOrder: number,
    limit: number,
    promptChars: number,
  ): { task: TaskRow; order: number; promptStart: string }[] {
    const rows = this.stmt(
      // Newest first through the list_order index; the prompt start is read per row the scan reaches, so an unfiltered
      // page reads about `limit` rows however many tasks there are.
      `SELECT ${TASK_COLUMNS}, list_order,
         (SELECT substr(prompt, 1, ?) FROM rounds r WHERE r.task_id = tasks.id AND r.n = 1) AS prompt_start
       FROM tasks
       WHERE list_order < ? AND (? = '' OR instr(lower(id || ' ' || caller || ' ' || agent || ' ' || state || ' ' ||
         cwd || ' ' || coalesce(prompt_start, '')), ?) > 0)
       ORDER BY list_order DESC`,
    ).iterate(promptChars, beforeOrder, filter, filter) as Iterable<Row>;
    return firstRows(rows, limit).map((r) => ({
      task: toTask(r),
      order: Number(r.list_order),
      promptStart: String(r.prompt_start ?? ''),
    }));
  }

  /** Each round's prompt, cut to `maxChars`, with its full length in code points. */
  roundPrompts(taskId: string, maxChars: number): { n: number; text: string; chars: number }[] {
    return (
      this.stmt(
        'SELECT n, substr(prompt, 1, ?) AS text, length(prompt) AS chars FROM rounds WHERE task_id = ? ORDER BY n',
      ).all(maxChars, taskId) as Row[]
    ).map((r) => ({ n: Number(r.n), text: String(r.text), chars: Number(r.chars) }));
  }

  /** The commentary tail (at most COMMENTARY_TAIL_BYTES) and how many code points were dropped before it. */
  getCommentary(id: string): { tail: string; dropped: number } {
    const r = this.stmt('SELECT commentary_dropped FROM tasks WHERE id = ?').get(id) as Row;
    const chunks = this.stmt('SELECT text FROM commentary WHERE task_id = ? ORDER BY seq').all(id) as Row[];
    return { tail: chunks.map((c) => String(c.text)).join(''), dropped: Number(r.commentary_dropped) };
  }

  /**
   * Appends to a task's commentary at a cost that depends on the append, not on the tail: the newest chunk grows up to
   * COMMENTARY_CHUNK_BYTES, and while the tail is over `maxBytes` its oldest chunks are dropped whole.
   */
  appendCommentary(id: string, text: string, maxBytes = COMMENTARY_TAIL_BYTES): void {
    if (!text) return;
    this.tx(() => {
      const cut = Buffer.byteLength(text) > maxBytes ? keepTail(text, maxBytes) : { tail: text, droppedCodePoints: 0 };
      const bytes = Buffer.byteLength(cut.tail);
      const chars = countCodePoints(cut.tail);
      const last = this.stmt('SELECT seq, bytes FROM commentary WHERE task_id = ? ORDER BY seq DESC LIMIT 1').get(id) as
        | Row
        | undefined;
      if (last && Number(last.bytes) + bytes <= COMMENTARY_CHUNK_BYTES) {
        this.stmt(
          'UPDATE commentary SET text = text || ?, bytes = bytes + ?, chars = chars + ? WHERE task_id = ? AND seq = ?',
        ).run(cut.tail, bytes, chars, id, last.seq as number);
      } else {
        this.stmt('INSERT INTO commentary (task_id, seq, text, bytes, chars) VALUES (?, ?, ?, ?, ?)').run(
          id,
          last ? Number(last.seq) + 1 : 1,
          cut.tail,
          bytes,
          chars,
        );
      }
      let total = (
        this.stmt(
          `UPDATE tasks SET commentary_bytes = commentary_bytes + ?, commentary_chars = commentary_chars + ?,
               commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
        ).get(bytes, chars, cut.droppedCodePoints, id) as { commentary_bytes: number }
      ).commentary_bytes;
      while (total > maxBytes) {
        const oldest = this.stmt(
          'DELETE FROM commentary WHERE task_id = ? AND seq = (SELECT MIN(seq) FROM commentary WHERE task_id = ?) RETURNING bytes, chars',
        ).get(id, id) as { bytes: number; chars: number };
        total = (
          this.stmt(
            `UPDATE tasks SET commentary_bytes = commentary_bytes - ?, commentary_chars = commentary_chars - ?,
                 commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
          ).get(oldest.bytes, oldest.chars, oldest.chars, id) as { commentary_bytes: number }
        ).commentary_bytes;
      }
    });
  }

  // ---- rounds

  insertRound(taskId: string, prompt: string): number {
    const n = (
      this.stmt('UPDATE tasks SET rounds = rounds + 1 WHERE id = ? RETURNING rounds').get(taskId) as { rounds: number }
    ).rounds;
    this.stmt(`INSERT INTO rounds (task_id, n, prompt, state) VALUES (?, ?, ?, 'queued')`).run(taskId, n, prompt);
    return n;
  }

  /** Every round of a task without prompts and results: what a status shows. */
  roundSummaries(taskId: string): RoundSummary[] {
    return (
      this.stmt(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? ORDER BY n`).all(taskId) as Row[]
    ).map(toRoundSummary);
  }

  roundSummary(taskId: string, n: number): RoundSummary | undefined {
    const r = this.stmt(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? AND n = ?`).get(taskId, n) as
      | Row
      | undefined;
    return r ? toRoundSummary(r) : undefined;
  }

  /**
   * A round's result length and preview, or null while it has none: what every task view shows, read without the
   * round's git snapshots (up to 500 dirty paths each, which a view would otherwise parse at every status and wait).
   * `complete` says the preview is the whole answer, so a reader of a short answer needs no agent_result (rule:
   * whole-preview).
   */
  resultSummary(taskId: string, n: number): ResultSummary | null {
    const r = this.stmt(
      'SELECT result_chars, result_preview, result AS legacy_result FROM rounds WHERE task_id = ? AND n = ?',
    ).get(taskId, n) as Row | undefined;
    if (!r) return null;
    if (r.result_chars != null) return summary(Number(r.result_chars), String(r.result_preview ?? ''));
    if (r.legacy_result == null) return null;
    const legacy = String(r.legacy_result);
    return summary(countCodePoints(legacy), cutCodePoints(legacy, RESULT_PREVIEW_CODE_POINTS));
  }

  /** A page of a round's result, read from the one or two stored pages it spans, whatever the result's size. */
  resultPage(taskId: string, n: number, offset: number, pageSize: number): TextPage {
    const meta = this.stmt('SELECT result_chars, result AS legacy FROM rounds WHERE task_id = ? AND n = ?').get(
      taskId,
      n,
    ) as Row | undefined;
    if (meta?.result_chars == null) {
      return pageText(meta?.legacy == null ? '' : String(meta.legacy), offset, pageSize);
    }
    const total = Number(meta.result_chars);
    const start = Math.min(Math.max(0, offset), total);
    const end = Math.min(start + pageSize, total);
    const first = Math.floor(start / RESULT_PAGE_CODE_POINTS);
    const last = Math.floor((end - 1) / RESULT_PAGE_CODE_POINTS);
    const stored =
      end > start
        ? (
            this.stmt(
              'SELECT text FROM result_pages WHERE task_id = ? AND n = ? AND page BETWEEN ? AND ? ORDER BY page',
            ).all(taskId, n, first, last) as Row[]
          )
            .map((r) => String(r.text))
            .join('')
        : '';
    // Every stored page but the result's last holds RESULT_PAGE_CODE_POINTS code points, so their count is known and
    // need not be walked again (a text without surrogate pairs is then cut by index alone).
    const storedPoints =
      end > start ? Math.min((last + 1) * RESULT_PAGE_CODE_POINTS, total) - first * RESULT_PAGE_CODE_POINTS : 0;
    const text = pageText(stored, start - first * RESULT_PAGE_CODE_POINTS, end - start, storedPoints).text;
    return { text, offset: start, nextOffset: end, done: end >= total, total };
  }

  updateRound(
    taskId: string,
    n: number,
    patch: Partial<{
      state: TaskState;
      startedAt: string;
      endedAt: string;
      before: unknown;
      after: unknown;
      result: string | null;
      error: string | null;
      abandoned: boolean;
    }>,
  ): void {
    const cols: string[] = [];
    const vals: SQLInputValue[] = [];
    const set = (col: string, v: SQLInputValue) => {
      cols.push(`${col} = ?`);
      vals.push(v);
    };
    if (patch.state !== undefined) set('state', patch.state);
    if (patch.startedAt !== undefined) set('started_at', patch.startedAt);
    if (patch.endedAt !== undefined) set('ended_at', patch.endedAt);
    if (patch.before !== undefined) set('before', JSON.stringify(patch.before));
    if (patch.after !== undefined) set('after', JSON.stringify(patch.after));
    if (patch.result !== undefined) {
      set('result', null);
      set('result_chars', patch.result === null ? null : countCodePoints(patch.result));
      set('result_preview', patch.result === null ? null : cutCodePoints(patch.result, RESULT_PREVIEW_CODE_POINTS));
    }
    if (patch.error !== undefined) set('error', patch.error);
    if (patch.abandoned !== undefined) set('abandoned', patch.abandoned ? 1 : 0);
    if (!cols.length) return;
    this.tx(() => {
      this.stmt(`UPDATE rounds SET ${cols.join(', ')} WHERE task_id = ? AND n = ?`).run(...vals, taskId, n);
      if (patch.result === undefined) return;
      this.stmt('DELETE FROM result_pages WHERE task_id = ? AND n = ?').run(taskId, n);
      if (patch.result === null) return;
      const insert = this.stmt('INSERT INTO result_pages (task_id, n, page, text) VALUES (?, ?, ?, ?)');
      splitCodePoints(patch.result, RESULT_PAGE_CODE_POINTS).forEach((text, page) => {
        insert.run(taskId, n, page, text);
      });
    });
  }

  // ---- events

  appendEvent(taskId: string, event: Omit<TaskEvent, 'seq'>): TaskEvent {
    const seq = (
      this.stmt('UPDATE tasks SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq').get(taskId) as {
        last_seq: number;
      }
    ).last_seq;
    const full = { seq, ...event } as TaskEvent;
    const text = typeof full.text === 'string' ? full.text : undefined;
    const moved = full.kind === 'message' && text !== undefined;
    this.stmt('INSERT INTO events (task_id, seq, data, text, chars) VALUES (?, ?, ?, ?, ?)').run(
      taskId,
      seq,
      JSON.stringify(moved ? { ...full, text: undefined } : full),
      moved ? text : null,
      text === undefined ? 0 : countCodePoints(text),
    );
    return full;
  }

  /**
   * A page of a task's events after `after` (rule: event-pages): at most `limit`, and no more event text than
   * `textBudget` code points unless one event alone holds more (a page always has an event when one exists, so a
   * cursor always advances). Without `messageText`, `message` events come without their text, as `chars` (its length
   * in code points), and the text is never read out of SQLite. Rows are read one at a time, so a page that ends early
   * costs only what it returns.
   */
  eventPage(
    taskId: string,
    after: number,
    limit: number,
    textBudget: number,
    messageText: boolean,
  ): { events: TaskEvent[]; hasMore: boolean } {
    const rows = this.stmt(messageText ? EVENTS_WITH_TEXT : EVENTS_WITHOUT_MESSAGE_TEXT).iterate(
      taskId,
      after,
    ) as Iterable<EventRow>;
    const events: TaskEvent[] = [];
    let text = 0;
    for (const row of rows) {
      if (events.length === limit) return { events, hasMore: true };
      const ev = eventOf(row);
      // A message whose text stayed in its column: the page says how long it is instead.
      const withoutText = ev.kind === 'message' && ev.text === undefined;
      const chars = withoutText ? 0 : row.chars;
      if (events.length > 0 && text + chars > textBudget) return { events, hasMore: true };
      text += chars;
      events.push(withoutText ? { ...ev, chars: row.chars } : ev);
    }
    return { events, hasMore: false };
  }

  // ---- idempotency

  getIdempotency(caller: string, key: string): IdempotencyRecord | undefined {
    const r = this.stmt('SELECT * FROM idempotency WHERE caller = ? AND key = ?').get(caller, key) as Row | undefined;
    return r ? { payloadHash: String(r.payload_hash), taskId: String(r.task_id), round: Number(r.round) } : undefined;
  }

  putIdempotency(caller: string, key: string, rec: IdempotencyRecord): void {
    this.stmt('INSERT INTO idempotency (caller, key, payload_hash, task_id, round) VALUES (?, ?, ?, ?, ?)').run(
      caller,
      key,
      rec.payloadHash,
      rec.taskId,
      rec.round,
    );
  }

  // ---- worker process groups

  /** In a transaction of its own, which what TaskLog has queued joins (inWrite) rather than committing apart. */
  addWorker(w: WorkerRecord, now: string): void {
    this.tx(() =>
      this.stmt('INSERT OR REPLACE INTO workers (pgid, task_id, leader_start, started_at) VALUES (?, ?, ?, ?)').run(
        w.pgid,
        w.taskId,
        w.leaderStart,
        now,
      ),
    );
  }

  // ---------------------------------------------------------------- MCP sessions (issue 14)
  // Writes go through tx() like every other, so a full disk surfaces as StoreFullError (the hub's 507).

  insertMcpSession(idHash: string, caller: string, now: string): void {
    this.tx(() =>
      this.stmt('INSERT INTO mcp_sessions (id_hash, caller, created_at, last_seen) VALUES (?, ?, ?, ?)').run(
        idHash,
        caller,
        now,
        now,
      ),
    );
  }

  getMcpSession(idHash: string): { caller: string; lastSeen: string } | undefined {
    const row = this.stmt('SELECT caller, last_seen FROM mcp_sessions WHERE id_hash = ?').get(idHash) as
      | Row
      | undefined;
    return row ? { caller: String(row.caller), lastSeen: String(row.last_seen) } : undefined;
  }

  touchMcpSession(idHash: string, now: string): void {
    this.tx(() => this.stmt('UPDATE mcp_sessions SET last_seen = ? WHERE id_hash = ?').run(now, idHash));
  }

  deleteMcpSession(idHash: string): boolean {
    return this.tx(() => Number(this.stmt('DELETE FROM mcp_sessions WHERE id_hash = ?').run(idHash).changes) > 0);
  }

  /** How many sessions the caller holds and its least recently seen one. */
  mcpSessionsOf(caller: string): { count: number; oldest?: { idHash: string; lastSeen: string } } {
    const count = Number((this.stmt('SELECT COUNT(*) AS n FROM mcp_sessions WHERE caller = ?').get(caller) as Row).n);
    const row = this.stmt(
      'SELECT id_hash, last_seen FROM mcp_sessions WHERE caller = ? ORDER BY last_seen LIMIT 1',
    ).get(caller) as Row | undefined;
    return { count, ...(row ? { oldest: { idHash: String(row.id_hash), lastSeen: String(row.last_seen) } } : {}) };
  }

  /** Drops sessions not seen since `before` (an ISO time); returns how many. */
  pruneMcpSessions(before: string): number {
    return this.tx(() => Number(this.stmt('DELETE FROM mcp_sessions WHERE last_seen < ?').run(before).changes));
  }

  removeWorker(pgid: number): void {
    this.stmt('DELETE FROM workers WHERE pgid = ?').run(pgid);
  }

  removeWorkersOfTask(taskId: string): void {
    this.stmt('DELETE FROM workers WHERE task_id = ?').run(taskId);
  }

  workersOfTask(taskId: string): number[] {
    return (this.stmt('SELECT pgid FROM workers WHERE task_id = ?').all(taskId) as Row[]).map((r) => Number(r.pgid));
  }

  workers(): WorkerRecord[] {
    return (this.stmt('SELECT * FROM workers').all() as Row[]).map((r) => ({
      pgid: Number(r.pgid),
      taskId: String(r.task_id),
      leaderStart: r.leader_start === null ? null : String(r.leader_start),
    }));
  }

  stats(): Record<TaskState, number> {
    const out = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0 };
    for (const r of this.stmt('SELECT state, COUNT(*) AS c FROM tasks GROUP BY state').all() as Row[]) {
      out[r.state as TaskState] = Number(r.c);
    }
    return out;
  }
}

/** The first `n` rows of a statement's iterator; leaving the loop resets the statement, so SQLite reads no further. */
function firstRows<T>(rows: Iterable<T>, n: number): T[] {
  const out: T[] = [];
  if (n <= 0) return out;
  for (const row of rows) {
    out.push(row);
    if (out.length === n) break;
  }
  return out;
}

function toTask(r: Row): TaskRow {
  return {
    id: String(r.id),
    caller: String(r.caller),
    agent: String(r.agent),
    cwd: String(r.cwd),
    workdir: String(r.workdir),
    isolation: r.isolation as Isolation,
    model: r.model === null ? null : String(r.model),
    effort: r.effort === null ? null : String(r.effort),
    state: r.state as TaskState,
    sessionId: r.session_id === null ? null : String(r.session_id),
    rounds: Number(r.rounds),
    createdAt: String(r.created_at),
    updatedAt: String(r.updated_at),
    error: r.error === null ? null : String(r.error),
    lastSeq: Number(r.last_seq),
  };
}

function toRoundSummary(r: Row): RoundSummary {
  const json = (v: SQLInputValue | undefined) => (v === null || v === undefined ? null : JSON.parse(String(v)));
  const legacy = r.legacy_result == null ? null : String(r.legacy_result);
  return {
    taskId: String(r.task_id),
    n: Number(r.n),
    state: r.state as TaskState,
    startedAt: r.started_at === null ? null : String(r.started_at),
    endedAt: r.ended_at === null ? null : String(r.ended_at),
    before: json(r.before),
    after: json(r.after),
    error: r.error === null ? null : String(r.error),
    abandoned: Number(r.abandoned) === 1,
    resultChars: r.result_chars != null ? Number(r.result_chars) : legacy !== null ? countCodePoints(legacy) : null,
    resultPreview:
      r.result_chars != null
        ? String(r.result_preview)
        : legacy !== null
          ? cutCodePoints(legacy, RESULT_PREVIEW_CODE_POINTS)
          : null,
  };
}

interface EventRow {
  data: string;
  chars: number;
  /** Selected only when a page carries message text. */
  text?: string | null;
}

/** An event as appended: a `message` event's text goes back in from its own column. */
function eventOf(row: EventRow): TaskEvent {
  const ev = JSON.parse(row.data) as TaskEvent;
  return typeof row.text === 'string' ? { ...ev, text: row.text } : ev;
}
