// A task's events: appended in order (seq), read in pages. A `message` event's text lives in a column of its own and
// its length in `chars`, so a page that leaves message text out reads neither it nor JSON the size of it.
import { countCodePoints } from '../paging.ts';
import type { NewTaskEvent, TaskEvent } from '../task.ts';
import type { StoreDb } from './db.ts';
import { checked, intact, partSum, rowSum } from './row-sums.ts';

/**
 * Event pages (eventPage). `chars` is the length in code points of the event's text, stored when it was appended; a
 * `message` event keeps its text in `text`, outside `data`.
 *
 * No statement here has `LIMIT ?`: SQLite (3.53) plans a LIMIT with the integer bound to it, so rebinding that
 * parameter expires the statement and every run parses and plans the SQL again. Pages are cut while stepping instead:
 * SQLite reads rows only as they are asked for.
 */
const EVENTS_WITH_TEXT = `SELECT seq, data, text, chars, ${intact('events', 'events', ['text'])} AS intact
  FROM events WHERE task_id = ? AND seq > ? ORDER BY seq`;
/** The same without `message` text, which is never read: such an event says how long its text is instead (`chars`). */
const EVENTS_WITHOUT_MESSAGE_TEXT = `SELECT seq, data, chars, ${intact('events')} AS intact
  FROM events WHERE task_id = ? AND seq > ? ORDER BY seq`;

interface EventRow {
  seq: number;
  data: string;
  /** 1 when the row matches its checksum (row-sums.ts); a message's text is checked only when it is read. */
  intact: number;
  chars: number;
  /** Selected only when a page carries message text. */
  text?: string | null;
}

export function appendEvent(db: StoreDb, taskId: string, event: NewTaskEvent): TaskEvent {
  const seq = (
    db.stmt('UPDATE tasks SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq').get(taskId) as {
      last_seq: number;
    }
  ).last_seq;
  const full: TaskEvent = { seq, ...event };
  const text = 'text' in full && typeof full.text === 'string' ? full.text : undefined;
  const moved = full.kind === 'message' && text !== undefined;
  const data = JSON.stringify(moved ? { ...full, text: undefined } : full);
  const stored = moved ? text : null;
  const chars = text === undefined ? 0 : countCodePoints(text);
  // The sums are computed here rather than by the insert trigger, which would write the row a second time: events are
  // the store's most frequent write.
  const textSum = partSum(stored);
  db.stmt('INSERT INTO events (task_id, seq, data, text, chars, text_sum, row_sum) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    taskId,
    seq,
    data,
    stored,
    chars,
    textSum,
    rowSum(taskId, seq, data, chars, textSum),
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
export function eventPage(
  db: StoreDb,
  taskId: string,
  after: number,
  limit: number,
  textBudget: number,
  messageText: boolean,
): { events: TaskEvent[]; hasMore: boolean } {
  const rows = db
    .stmt(messageText ? EVENTS_WITH_TEXT : EVENTS_WITHOUT_MESSAGE_TEXT)
    .iterate(taskId, after) as Iterable<EventRow>;
  const events: TaskEvent[] = [];
  let text = 0;
  for (const row of rows) {
    if (events.length === limit) return { events, hasMore: true };
    const ev = eventOf(checked(row, 'events', () => `${taskId} event ${row.seq}`));
    // A message whose text stayed in its column: the page says how long it is instead.
    const withoutText = ev.kind === 'message' && ev.text === undefined;
    const chars = withoutText ? 0 : row.chars;
    if (events.length > 0 && text + chars > textBudget) return { events, hasMore: true };
    text += chars;
    events.push(withoutText ? { ...ev, chars: row.chars } : ev);
  }
  return { events, hasMore: false };
}

/** An event as appended: a `message` event's text goes back in from its own column. */
function eventOf(row: EventRow): TaskEvent {
  const ev = JSON.parse(row.data) as TaskEvent;
  return typeof row.text === 'string' ? ({ ...ev, text: row.text } as TaskEvent) : ev;
}

/**
 * The permission request round `n` of a task still waited for when its events end (rule: approvals): its last
 * `approval_requested` event with no `approval_answered` after it, or undefined.
 */
export function unansweredApproval(
  db: StoreDb,
  taskId: string,
  n: number,
): { requestId: string; what: string } | undefined {
  const row = db
    .stmt(
      `SELECT data FROM events WHERE task_id = ? AND json_extract(data, '$.round') = ?
         AND json_extract(data, '$.kind') IN ('approval_requested', 'approval_answered') ORDER BY seq DESC LIMIT 1`,
    )
    .get(taskId, n) as { data: string } | undefined;
  if (!row) return undefined;
  const ev = JSON.parse(row.data) as { kind: string; requestId: string; what: string };
  return ev.kind === 'approval_requested' ? { requestId: ev.requestId, what: ev.what } : undefined;
}

/** The rounds of a task the operator queued (its `queued` lifecycle event says `by: "operator"`), in order. */
export function operatorRounds(db: StoreDb, taskId: string): number[] {
  const rows = db
    .stmt(
      `SELECT json_extract(data, '$.round') AS n FROM events WHERE task_id = ?
         AND json_extract(data, '$.kind') = 'lifecycle' AND json_extract(data, '$.state') = 'queued'
         AND json_extract(data, '$.by') = 'operator' ORDER BY seq`,
    )
    .all(taskId) as { n: number }[];
  return rows.map((r) => r.n);
}
