// A task's rounds: each round's prompt, state, git snapshots and result. A result is kept in pages of
// RESULT_PAGE_CODE_POINTS (result_pages), with its length and preview in the round's row, so every view and every page
// of it costs the same whatever the result's size.
import type { SQLInputValue } from 'node:sqlite';
import { cutCodePoints } from '../../lib/text.ts';
import { countCodePoints, pageText, RESULT_PAGE_CODE_POINTS, splitCodePoints, type TextPage } from '../paging.ts';
import type { RoundSummary, TaskState } from '../task.ts';
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import type { Row } from './rows.ts';

/** A round without its prompt and result; `unpaged_result` is only ever set on a round written before result pages. */
const ROUND_SUMMARY_COLUMNS = `task_id, n, state, started_at, ended_at, before, after, error, abandoned, result_chars,
  result_preview, result AS unpaged_result, ${intact('rounds')} AS intact`;
const roundKey = (taskId: string, n: unknown) => () => `${taskId} round ${n}`;

/** A result's preview: its first this many code points, which is all of an answer no longer than that. */
export const RESULT_PREVIEW_CODE_POINTS = 200;

/** What views show of a round's result without reading it. */
export interface ResultSummary {
  chars: number;
  preview: string;
  /** The preview is the whole answer (chars ≤ RESULT_PREVIEW_CODE_POINTS). */
  complete: boolean;
}

export interface RoundPatch {
  state: TaskState;
  startedAt: string;
  endedAt: string;
  before: unknown;
  after: unknown;
  result: string | null;
  error: string | null;
  abandoned: boolean;
}

const summary = (chars: number, preview: string): ResultSummary => ({
  chars,
  preview,
  complete: chars <= RESULT_PREVIEW_CODE_POINTS,
});

export function insertRound(db: StoreDb, taskId: string, prompt: string): number {
  const n = (
    db.stmt('UPDATE tasks SET rounds = rounds + 1 WHERE id = ? RETURNING rounds').get(taskId) as { rounds: number }
  ).rounds;
  db.stmt(`INSERT INTO rounds (task_id, n, prompt, state) VALUES (?, ?, ?, 'queued')`).run(taskId, n, prompt);
  return n;
}

/** Every round of a task without prompts and results: what a status shows. */
export function roundSummaries(db: StoreDb, taskId: string): RoundSummary[] {
  return (db.stmt(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? ORDER BY n`).all(taskId) as Row[]).map(
    toRoundSummary,
  );
}

export function roundSummary(db: StoreDb, taskId: string, n: number): RoundSummary | undefined {
  const r = db.stmt(`SELECT ${ROUND_SUMMARY_COLUMNS} FROM rounds WHERE task_id = ? AND n = ?`).get(taskId, n) as
    | Row
    | undefined;
  return r ? toRoundSummary(r) : undefined;
}

/** Each round's prompt, cut to `maxChars`, with its full length in code points. */
export function roundPrompts(
  db: StoreDb,
  taskId: string,
  maxChars: number,
): { n: number; text: string; chars: number }[] {
  return (
    db
      .stmt(
        `SELECT n, substr(prompt, 1, ?) AS text, length(prompt) AS chars, ${intact('rounds', 'rounds', ['prompt'])} AS intact
           FROM rounds WHERE task_id = ? ORDER BY n`,
      )
      .all(maxChars, taskId) as Row[]
  )
    .map((r) => checked(r, 'rounds', roundKey(taskId, r.n)))
    .map((r) => ({ n: Number(r.n), text: String(r.text), chars: Number(r.chars) }));
}

/**
 * A round's result length and preview, or null while it has none: what every task view shows, read without the
 * round's git snapshots (up to 500 dirty paths each, which a view would otherwise parse at every status and wait).
 * `complete` says the preview is the whole answer, so a reader of a short answer needs no agent_result (rule:
 * whole-preview).
 */
export function resultSummary(db: StoreDb, taskId: string, n: number): ResultSummary | null {
  const r = db
    .stmt(
      `SELECT result_chars, result_preview, result AS unpaged_result, ${intact('rounds')} AS intact
         FROM rounds WHERE task_id = ? AND n = ?`,
    )
    .get(taskId, n) as Row | undefined;
  if (!r) return null;
  checked(r, 'rounds', roundKey(taskId, n));
  if (r.result_chars != null) return summary(Number(r.result_chars), String(r.result_preview ?? ''));
  if (r.unpaged_result == null) return null;
  const unpaged = String(r.unpaged_result);
  return summary(countCodePoints(unpaged), cutCodePoints(unpaged, RESULT_PREVIEW_CODE_POINTS));
}

/** A page of a round's result, read from the one or two stored pages it spans, whatever the result's size. */
export function resultPage(db: StoreDb, taskId: string, n: number, offset: number, pageSize: number): TextPage {
  const meta = db
    .stmt(
      `SELECT result_chars, result AS unpaged, ${intact('rounds')} AS intact FROM rounds WHERE task_id = ? AND n = ?`,
    )
    .get(taskId, n) as Row | undefined;
  if (meta) checked(meta, 'rounds', roundKey(taskId, n));
  if (meta?.result_chars == null) {
    return pageText(meta?.unpaged == null ? '' : String(meta.unpaged), offset, pageSize);
  }
  const total = Number(meta.result_chars);
  const start = Math.min(Math.max(0, offset), total);
  const end = Math.min(start + pageSize, total);
  const first = Math.floor(start / RESULT_PAGE_CODE_POINTS);
  const last = Math.floor((end - 1) / RESULT_PAGE_CODE_POINTS);
  const stored =
    end > start
      ? (
          db
            .stmt(
              `SELECT page, text, ${intact('result_pages')} AS intact
                 FROM result_pages WHERE task_id = ? AND n = ? AND page BETWEEN ? AND ? ORDER BY page`,
            )
            .all(taskId, n, first, last) as Row[]
        )
          .map((r) => String(checked(r, 'result_pages', () => `${taskId} round ${n} page ${r.page}`).text))
          .join('')
      : '';
  // Every stored page but the result's last holds RESULT_PAGE_CODE_POINTS code points, so their count is known and
  // need not be walked again (a text without surrogate pairs is then cut by index alone).
  const storedPoints =
    end > start ? Math.min((last + 1) * RESULT_PAGE_CODE_POINTS, total) - first * RESULT_PAGE_CODE_POINTS : 0;
  const text = pageText(stored, start - first * RESULT_PAGE_CODE_POINTS, end - start, storedPoints).text;
  return { text, offset: start, nextOffset: end, done: end >= total, total };
}

export function updateRound(db: StoreDb, taskId: string, n: number, patch: Partial<RoundPatch>): void {
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
  db.tx(() => {
    db.stmt(`UPDATE rounds SET ${cols.join(', ')} WHERE task_id = ? AND n = ?`).run(...vals, taskId, n);
    if (patch.result === undefined) return;
    db.stmt('DELETE FROM result_pages WHERE task_id = ? AND n = ?').run(taskId, n);
    if (patch.result === null) return;
    const insert = db.stmt('INSERT INTO result_pages (task_id, n, page, text) VALUES (?, ?, ?, ?)');
    splitCodePoints(patch.result, RESULT_PAGE_CODE_POINTS).forEach((text, page) => {
      insert.run(taskId, n, page, text);
    });
  });
}

function toRoundSummary(r: Row): RoundSummary {
  checked(r, 'rounds', roundKey(String(r.task_id), r.n));
  const json = (v: SQLInputValue | undefined) => (v === null || v === undefined ? null : JSON.parse(String(v)));
  const unpaged = r.unpaged_result == null ? null : String(r.unpaged_result);
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
    resultChars: r.result_chars != null ? Number(r.result_chars) : unpaged !== null ? countCodePoints(unpaged) : null,
    resultPreview:
      r.result_chars != null
        ? String(r.result_preview)
        : unpaged !== null
          ? cutCodePoints(unpaged, RESULT_PREVIEW_CODE_POINTS)
          : null,
  };
}
