// A task's commentary: the agent's running narration, kept as a bounded tail in chunks with running totals on the
// task's row, so an append costs what the append costs, not what the tail holds.
import { COMMENTARY_TAIL_BYTES, countCodePoints, keepTail } from '../paging.ts';
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import type { Row } from './rows.ts';

/** Small commentary appends are joined into the newest chunk up to this size, so a chunk is never rewritten whole. */
const COMMENTARY_CHUNK_BYTES = 16 * 1024;

/** The commentary tail (at most COMMENTARY_TAIL_BYTES) and how many code points were dropped before it. */
export function getCommentary(db: StoreDb, id: string): { tail: string; dropped: number } {
  const r = checked(
    db.stmt(`SELECT commentary_dropped, ${intact('tasks')} AS intact FROM tasks WHERE id = ?`).get(id) as Row,
    'tasks',
    () => id,
  );
  const chunks = (
    db
      .stmt(`SELECT seq, text, ${intact('commentary')} AS intact FROM commentary WHERE task_id = ? ORDER BY seq`)
      .all(id) as Row[]
  ).map((c) => checked(c, 'commentary', () => `${id} chunk ${c.seq}`));
  return { tail: chunks.map((c) => String(c.text)).join(''), dropped: Number(r.commentary_dropped) };
}

/**
 * Appends to a task's commentary at a cost that depends on the append, not on the tail: the newest chunk grows up to
 * COMMENTARY_CHUNK_BYTES, and while the tail is over `maxBytes` its oldest chunks are dropped whole.
 */
export function appendCommentary(db: StoreDb, id: string, text: string, maxBytes = COMMENTARY_TAIL_BYTES): void {
  if (!text) return;
  db.tx(() => {
    const cut = Buffer.byteLength(text) > maxBytes ? keepTail(text, maxBytes) : { tail: text, droppedCodePoints: 0 };
    const bytes = Buffer.byteLength(cut.tail);
    const chars = countCodePoints(cut.tail);
    const last = db.stmt('SELECT seq, bytes FROM commentary WHERE task_id = ? ORDER BY seq DESC LIMIT 1').get(id) as
      | Row
      | undefined;
    if (last && Number(last.bytes) + bytes <= COMMENTARY_CHUNK_BYTES) {
      db.stmt(
        'UPDATE commentary SET text = text || ?, bytes = bytes + ?, chars = chars + ? WHERE task_id = ? AND seq = ?',
      ).run(cut.tail, bytes, chars, id, last.seq as number);
    } else {
      db.stmt('INSERT INTO commentary (task_id, seq, text, bytes, chars) VALUES (?, ?, ?, ?, ?)').run(
        id,
        last ? Number(last.seq) + 1 : 1,
        cut.tail,
        bytes,
        chars,
      );
    }
    let total = (
      db
        .stmt(
          `UPDATE tasks SET commentary_bytes = commentary_bytes + ?, commentary_chars = commentary_chars + ?,
             commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
        )
        .get(bytes, chars, cut.droppedCodePoints, id) as { commentary_bytes: number }
    ).commentary_bytes;
    while (total > maxBytes) {
      const oldest = db
        .stmt(
          'DELETE FROM commentary WHERE task_id = ? AND seq = (SELECT MIN(seq) FROM commentary WHERE task_id = ?) RETURNING bytes, chars',
        )
        .get(id, id) as { bytes: number; chars: number };
      total = (
        db
          .stmt(
            `UPDATE tasks SET commentary_bytes = commentary_bytes - ?, commentary_chars = commentary_chars - ?,
               commentary_dropped = commentary_dropped + ? WHERE id = ? RETURNING commentary_bytes`,
          )
          .get(oldest.bytes, oldest.chars, oldest.chars, id) as { commentary_bytes: number }
      ).commentary_bytes;
    }
  });
}
