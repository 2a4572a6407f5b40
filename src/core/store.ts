// The durable store (HB-5): tasks, rounds, events, idempotency keys and worker process groups in SQLite (WAL).
// Every write that acknowledges something to a caller is committed before the answer goes out: node:sqlite is
// synchronous, so a method returning means its transaction is on disk.
import { chmodSync, existsSync } from 'node:fs';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
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
import type { Isolation, RoundRow, RoundSummary, TaskEvent, TaskRow, TaskState } from './task.ts';

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
];

/** The task columns a TaskRow is built from: never the commentary, which lives in its own table. */
const TASK_COLUMNS =
  'id, caller, agent, cwd, workdir, isolation, model, effort, state, session_id, rounds, created_at, updated_at, error, last_seq';

const ROUND_COLUMNS = 'task_id, n, prompt, state, started_at, ended_at, before, after, error, abandoned';

/** A round without its prompt and result; `legacy_result` is only ever set on a round written before result pages. */
const ROUND_SUMMARY_COLUMNS = `task_id, n, state, started_at, ended_at, before, after, error, abandoned, result_chars,
  result_preview, result AS legacy_result`;

/** Small commentary appends are joined into the newest chunk up to this size, so a chunk is never rewritten whole. */
const COMMENTARY_CHUNK_BYTES = 16 * 1024;
const RESULT_PREVIEW_CODE_POINTS = 200;

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

export class Store {
  readonly db: DatabaseSync;

  constructor(path: string) {
    const fresh = path !== ':memory:' && !existsSync(path);
    this.db = new DatabaseSync(path);
    if (fresh) chmodSync(path, PRIVATE_FILE_MODE);
    this.db.exec(
      'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
    );
    this.migrate();
  }

  private migrate(): void {
    const version = (this.db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.tx(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
    }
  }

  /** Runs `fn` in one transaction (nested calls join the outer one). */
  tx<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
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
    const order = (this.db.prepare('SELECT COALESCE(MAX(list_order), 0) + 1 AS o FROM tasks').get() as { o: number }).o;
    this.db
      .prepare(
        `INSERT INTO tasks (id, caller, agent, cwd, workdir, isolation, model, effort, state, rounds, created_at, updated_at, list_order)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?)`,
      )
      .run(
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
  }

  getTask(id: string): TaskRow | undefined {
    const r = this.db.prepare(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`).get(id) as Row | undefined;
    return r ? toTask(r) : undefined;
  }

  setTaskState(id: string, state: TaskState, now: string, error: string | null = null): void {
    this.db.prepare('UPDATE tasks SET state = ?, updated_at = ?, error = ? WHERE id = ?').run(state, now, error, id);
  }

  setSessionId(id: string, sessionId: string): void {
    this.db.prepare('UPDATE tasks SET session_id = ? WHERE id = ?').run(sessionId, id);
  }

  setWorkdir(id: string, workdir: string): void {
    this.db.prepare('UPDATE tasks SET workdir = ? WHERE id = ?').run(workdir, id);
  }

  tasksInStates(states: TaskState[]): TaskRow[] {
    const q = `SELECT ${TASK_COLUMNS} FROM tasks WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY list_order`;
    return (this.db.prepare(q).all(...states) as Row[]).map(toTask);
  }

  /** One caller's tasks, or every caller's when `caller` is null (the operator). */
  listTasks(caller: string | null, afterOrder: number, limit: number): { tasks: TaskRow[]; orders: number[] } {
    const rows = (
      caller === null
        ? this.db
            .prepare(`SELECT ${TASK_COLUMNS}, list_order FROM tasks WHERE list_order > ? ORDER BY list_order LIMIT ?`)
            .all(afterOrder, limit)
        : this.db
            .prepare(
              `SELECT ${TASK_COLUMNS}, list_order FROM tasks WHERE caller = ? AND list_order > ? ORDER BY list_order LIMIT ?`,
            )
            .all(caller, afterOrder, limit)
    ) as Row[];
    return { tasks: rows.map(toTask), orders: rows.map((r) => Number(r.list_order)) };
  }

  /** The commentary tail (at most COMMENTARY_TAIL_BYTES) and how many code points were dropped before it. */
  getCommentary(id: string): { tail: string; dropped: number } {
    const r = this.db.prepare('SELECT commentary_dropped FROM tasks WHERE id = ?').get(id) as Row;
    const chunks = this.db.prepare('SELECT text FROM commentary WHERE task_id = ? ORDER BY seq').all(id) as Row[];
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
      const last = this.db
        .prepare('SELECT seq, bytes FROM commentary WHERE task_id = ? ORDER BY seq DESC LIMIT 1')
        .get(id) as Row | undefined;
      if (last && Number(last.bytes) + bytes <= COMMENTARY_CHUNK_BYTES) {
        this.db
          .prepare(
            'UPDATE commentary SET text = text || ?, bytes = bytes + ?, chars = chars + ? WHERE task_id = ? AND seq = ?',
          )
          .run(cut.tail, bytes, chars, id, last.seq as number);
      } else {
        this.db
          .prepare('INSERT INTO commentary (task_id, seq, text, bytes, chars) VALUES (?, ?, ?, ?, ?)')
          .run(id, last ? Number(last.seq) + 1 : 1, cut.tail, bytes, chars);
      }
      let total = (
        this.db
          .prepare(
            `UPDATE tasks SET commentary_bytes = commentary_bytes + ?, commentary_chars = commentary_chars + ?,
               commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
          )
          .get(bytes, chars, cut.droppedCodePoints, id) as { commentary_bytes: number }
      ).commentary_bytes;
      while (total > maxBytes) {
        const oldest = this.db
          .prepare(
            'DELETE FROM commentary WHERE task_id = ? AND seq = (SELECT MIN(seq) FROM commentary WHERE task_id = ?) RETURNING bytes, chars',
          )
          .get(id, id) as { bytes: number; chars: number };
        total = (
          this.db
            .prepare(
              `UPDATE tasks SET commentary_bytes = commentary_bytes - ?, commentary_chars = commentary_chars - ?,
                 commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
            )
            .get(oldest.bytes, oldest.chars, oldest.chars, id) as { commentary_bytes: number }
        ).commentary_bytes;
      }
    });
  }

  // ---- rounds

  insertRound(taskId: string, prompt: string): number {
    this.db.prepare('UPDATE tasks SET rounds = rounds + 1 WHERE id = ?').run(taskId);
    const n = (this.db.prepare('SELECT rounds FROM tasks WHERE id = ?').get(taskId) as { rounds: number }).rounds;
    this.db.prepare(`INSERT INTO rounds (task_id, n, prompt, state) VALUES (?, ?, ?, 'queued')`).run(taskId, n, prompt);
    return n;
  }

  getRound(taskId: string, n: number): RoundRow | undefined {
    const r = this.db.prepare(`SELECT ${ROUND_COLUMNS} FROM rounds WHERE task_id = ? AND n = ?`).get(taskId, n) as
      | Row
      | undefined;
    return r ? toRound(r) : undefined;
  }

  /** Every round of a task without prompts and results: what a status shows. */
  roundSummaries(taskId: string): RoundSummary[] {
    return (
      this.db.prepare(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? ORDER BY n`).all(taskId) as Row[]
    ).map(toRoundSummary);
  }

  roundSummary(taskId: string, n: number): RoundSummary | undefined {
    const r = this.db
      .prepare(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? AND n = ?`)
      .get(taskId, n) as Row | undefined;
    return r ? toRoundSummary(r) : undefined;
  }

  /** A page of a round's result, read from the one or two stored pages it spans, whatever the result's size. */
  resultPage(taskId: string, n: number, offset: number, pageSize: number): TextPage {
    const meta = this.db
      .prepare('SELECT result_chars, result AS legacy FROM rounds WHERE task_id = ? AND n = ?')
      .get(taskId, n) as Row | undefined;
    if (meta?.result_chars == null) {
      return pageText(meta?.legacy == null ? '' : String(meta.legacy), offset, pageSize);
    }
    const total = Number(meta.result_chars);
    const start = Math.min(Math.max(0, offset), total);
    const end = Math.min(start + pageSize, total);
    const first = Math.floor(start / RESULT_PAGE_CODE_POINTS);
    const stored =
      end > start
        ? (
            this.db
              .prepare(
                'SELECT text FROM result_pages WHERE task_id = ? AND n = ? AND page BETWEEN ? AND ? ORDER BY page',
              )
              .all(taskId, n, first, Math.floor((end - 1) / RESULT_PAGE_CODE_POINTS)) as Row[]
          )
            .map((r) => String(r.text))
            .join('')
        : '';
    const text = pageText(stored, start - first * RESULT_PAGE_CODE_POINTS, end - start).text;
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
      this.db.prepare(`UPDATE rounds SET ${cols.join(', ')} WHERE task_id = ? AND n = ?`).run(...vals, taskId, n);
      if (patch.result === undefined) return;
      this.db.prepare('DELETE FROM result_pages WHERE task_id = ? AND n = ?').run(taskId, n);
      if (patch.result === null) return;
      const insert = this.db.prepare('INSERT INTO result_pages (task_id, n, page, text) VALUES (?, ?, ?, ?)');
      splitCodePoints(patch.result, RESULT_PAGE_CODE_POINTS).forEach((text, page) => {
        insert.run(taskId, n, page, text);
      });
    });
  }

  // ---- events

  appendEvent(taskId: string, event: Omit<TaskEvent, 'seq'>): TaskEvent {
    const seq = (
      this.db.prepare('UPDATE tasks SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq').get(taskId) as {
        last_seq: number;
      }
    ).last_seq;
    const full = { seq, ...event } as TaskEvent;
    this.db.prepare('INSERT INTO events (task_id, seq, data) VALUES (?, ?, ?)').run(taskId, seq, JSON.stringify(full));
    return full;
  }

  events(taskId: string, after: number, limit: number): TaskEvent[] {
    return (
      this.db
        .prepare('SELECT data FROM events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?')
        .all(taskId, after, limit) as { data: string }[]
    ).map((r) => JSON.parse(r.data) as TaskEvent);
  }

  // ---- idempotency

  getIdempotency(caller: string, key: string): IdempotencyRecord | undefined {
    const r = this.db.prepare('SELECT * FROM idempotency WHERE caller = ? AND key = ?').get(caller, key) as
      | Row
      | undefined;
    return r ? { payloadHash: String(r.payload_hash), taskId: String(r.task_id), round: Number(r.round) } : undefined;
  }

  putIdempotency(caller: string, key: string, rec: IdempotencyRecord): void {
    this.db
      .prepare('INSERT INTO idempotency (caller, key, payload_hash, task_id, round) VALUES (?, ?, ?, ?, ?)')
      .run(caller, key, rec.payloadHash, rec.taskId, rec.round);
  }

  // ---- worker process groups

  addWorker(w: WorkerRecord, now: string): void {
    this.db
      .prepare('INSERT OR REPLACE INTO workers (pgid, task_id, leader_start, started_at) VALUES (?, ?, ?, ?)')
      .run(w.pgid, w.taskId, w.leaderStart, now);
  }

  removeWorker(pgid: number): void {
    this.db.prepare('DELETE FROM workers WHERE pgid = ?').run(pgid);
  }

  removeWorkersOfTask(taskId: string): void {
    this.db.prepare('DELETE FROM workers WHERE task_id = ?').run(taskId);
  }

  workersOfTask(taskId: string): number[] {
    return (this.db.prepare('SELECT pgid FROM workers WHERE task_id = ?').all(taskId) as Row[]).map((r) =>
      Number(r.pgid),
    );
  }

  workers(): WorkerRecord[] {
    return (this.db.prepare('SELECT * FROM workers').all() as Row[]).map((r) => ({
      pgid: Number(r.pgid),
      taskId: String(r.task_id),
      leaderStart: r.leader_start === null ? null : String(r.leader_start),
    }));
  }

  stats(): Record<TaskState, number> {
    const out = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0 };
    for (const r of this.db.prepare('SELECT state, COUNT(*) AS c FROM tasks GROUP BY state').all() as Row[]) {
      out[r.state as TaskState] = Number(r.c);
    }
    return out;
  }
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

function toRound(r: Row): RoundRow {
  const json = (v: SQLInputValue | undefined) => (v === null || v === undefined ? null : JSON.parse(String(v)));
  return {
    taskId: String(r.task_id),
    n: Number(r.n),
    prompt: String(r.prompt),
    state: r.state as TaskState,
    startedAt: r.started_at === null ? null : String(r.started_at),
    endedAt: r.ended_at === null ? null : String(r.ended_at),
    before: json(r.before),
    after: json(r.after),
    error: r.error === null ? null : String(r.error),
    abandoned: Number(r.abandoned) === 1,
  };
}
