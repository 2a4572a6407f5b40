// What the table modules share: the row shape node:sqlite returns and a cursor that reads only the rows it keeps.
import type { SQLInputValue } from 'node:sqlite';

export type Row = Record<string, SQLInputValue>;

/** The first `n` rows of a statement's iterator; leaving the loop resets the statement, so SQLite reads no further. */
export function firstRows<T>(rows: Iterable<T>, n: number): T[] {
  const out: T[] = [];
  if (n <= 0) return out;
  for (const row of rows) {
    out.push(row);
    if (out.length === n) break;
  }
  return out;
}
