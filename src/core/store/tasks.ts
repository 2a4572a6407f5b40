// The tasks table: a task's row, its list order (the cursor of every list), the operator's overview and the counts
// by state. A task's commentary and rounds live in tables of their own (commentary.ts, rounds.ts).
import type { Isolation, TaskRow, TaskState } from '../task.ts';
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import { firstRows, type Row } from './rows.ts';

/** The task columns a TaskRow is built from: never the commentary, which lives in its own table. */
const TASK_COLUMNS =
  'id, caller, agent, cwd, workdir, isolation, model, effort, state, session_id, rounds, created_at, updated_at, error, last_seq';
/** The same with whether the row matches its checksum: every read that serves a task checks it (toTask). */
const CHECKED_TASK_COLUMNS = `${TASK_COLUMNS}, ${intact('tasks')} AS intact`;

export interface NewTask {
  id: string;
  caller: string;
  agent: string;
  cwd: string;
  workdir: string;
  isolation: Isolation;
  model?: string;
  effort?: string;
  now: string;
}

export function insertTask(db: StoreDb, t: NewTask): void {
  const order = (db.stmt('SELECT COALESCE(MAX(list_order), 0) + 1 AS o FROM tasks').get() as { o: number }).o;
  db.stmt(
    `INSERT INTO tasks (id, caller, agent, cwd, workdir, isolation, model, effort, state, rounds, created_at, updated_at, list_order)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?, ?)`,
  ).run(t.id, t.caller, t.agent, t.cwd, t.workdir, t.isolation, t.model ?? null, t.effort ?? null, t.now, t.now, order);
  db.taskInserted(t.id, order);
}

export function getTask(db: StoreDb, id: string): TaskRow | undefined {
  const r = db.stmt(`SELECT ${CHECKED_TASK_COLUMNS} FROM tasks WHERE id = ?`).get(id) as Row | undefined;
  return r ? toTask(r) : undefined;
}

export function setTaskState(db: StoreDb, id: string, state: TaskState, now: string, error: string | null): void {
  db.stmt('UPDATE tasks SET state = ?, updated_at = ?, error = ? WHERE id = ?').run(state, now, error, id);
}

export function setSessionId(db: StoreDb, id: string, sessionId: string): void {
  db.stmt('UPDATE tasks SET session_id = ? WHERE id = ?').run(sessionId, id);
}

export function setWorkdir(db: StoreDb, id: string, workdir: string): void {
  db.stmt('UPDATE tasks SET workdir = ? WHERE id = ?').run(workdir, id);
}

export function tasksInStates(db: StoreDb, states: TaskState[]): TaskRow[] {
  const q = `SELECT ${CHECKED_TASK_COLUMNS} FROM tasks WHERE state IN (${states.map(() => '?').join(',')}) ORDER BY list_order`;
  return (db.stmt(q).all(...states) as Row[]).map(toTask);
}

/**
 * One caller's tasks, or every caller's when `caller` is null (the operator), after list position `from` in the
 * given order (`from` null: from the start of that order).
 */
export function listTasks(
  db: StoreDb,
  caller: string | null,
  from: number | null,
  limit: number,
  order: 'oldest' | 'newest',
): { tasks: TaskRow[]; orders: number[] } {
  const newest = order === 'newest';
  const where = [
    ...(caller === null ? [] : ['caller = ?']),
    ...(from === null ? [] : [newest ? 'list_order < ?' : 'list_order > ?']),
  ];
  const q = `SELECT ${CHECKED_TASK_COLUMNS}, list_order FROM tasks${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY list_order${newest ? ' DESC' : ''}`;
  const params = [...(caller === null ? [] : [caller]), ...(from === null ? [] : [from])];
  const rows = firstRows(db.stmt(q).iterate(...params) as Iterable<Row>, limit);
  return { tasks: rows.map(toTask), orders: rows.map((r) => Number(r.list_order)) };
}

/** The list position of task `id` if `caller` may list it (any caller for null), for resolving a list cursor. */
export function listOrderOf(db: StoreDb, caller: string | null, id: string): number | undefined {
  const r = db.stmt(`SELECT caller, list_order, ${intact('tasks')} AS intact FROM tasks WHERE id = ?`).get(id) as
    | Row
    | undefined;
  if (!r) return undefined;
  checked(r, 'tasks', () => id);
  if (caller !== null && r.caller !== caller) return undefined;
  return Number(r.list_order);
}

/**
 * The dashboard's list: every caller's tasks newest first, before list position `beforeOrder`, with the start of each
 * task's first prompt; `filter` (lower case, may be empty) keeps tasks whose id, caller, agent, state, cwd or prompt
 * start contains it. The operator's view only; the filter scans, which a page of a local dashboard can afford.
 */
export function overviewTasks(
  db: StoreDb,
  filter: string,
  beforeOrder: number,
  limit: number,
  promptChars: number,
): { task: TaskRow; order: number; promptStart: string }[] {
  const rows = db
    .stmt(
      // Newest first through the list_order index; the prompt start is read per row the scan reaches, so an unfiltered
      // page reads about `limit` rows however many tasks there are.
      `SELECT ${CHECKED_TASK_COLUMNS}, list_order,
         (SELECT substr(prompt, 1, ?) FROM rounds r WHERE r.task_id = tasks.id AND r.n = 1) AS prompt_start,
         (SELECT ${intact('rounds', 'r', ['prompt'])} FROM rounds r WHERE r.task_id = tasks.id AND r.n = 1) AS prompt_intact
       FROM tasks
       WHERE list_order < ? AND (? = '' OR instr(lower(id || ' ' || caller || ' ' || agent || ' ' || state || ' ' ||
         cwd || ' ' || coalesce(prompt_start, '')), ?) > 0)
       ORDER BY list_order DESC`,
    )
    .iterate(promptChars, beforeOrder, filter, filter) as Iterable<Row>;
  return firstRows(rows, limit).map((r) => {
    // The prompt start is served too: its round's row is checked with the whole prompt (no round yet: null).
    if (r.prompt_intact !== null) checked({ intact: r.prompt_intact }, 'rounds', () => `${r.id} round 1`);
    return { task: toTask(r), order: Number(r.list_order), promptStart: String(r.prompt_start ?? '') };
  });
}

/** How many tasks are in each state. */
export function taskStats(db: StoreDb): Record<TaskState, number> {
  const out = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, interrupted: 0 };
  for (const r of db.stmt('SELECT state, COUNT(*) AS c FROM tasks GROUP BY state').all() as Row[]) {
    out[r.state as TaskState] = Number(r.c);
  }
  return out;
}

function toTask(r: Row): TaskRow {
  checked(r, 'tasks', () => String(r.id));
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
