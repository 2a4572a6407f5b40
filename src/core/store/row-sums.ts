// A checksum on every stored row, so damage inside a page that SQLite still parses (changed bytes in a row's text or
// numbers) is refused, never served. Each row carries `row_sum`, a CRC-32 of its columns in order (each with its type
// and length, so no two rows share an encoding), written by triggers on every insert and update. A large column a read
// often leaves out (a round's prompt, a message event's text) has a sum of its own that `row_sum` covers instead of
// the text, so a read that leaves it out still checks the rest of the row without reading it.
//
// Why rows and not pages: SQLite's checksum VFS is a C extension built into neither node:sqlite nor SQLite's default
// build, and it needs 8 reserved bytes on every page, which an existing store does not have; node:sqlite offers SQL
// functions written in JS, which is what the triggers and the checks call. Damage to a page's structure or an index is
// PRAGMA integrity_check's to find, at open.
import type { DatabaseSync, SQLOutputValue } from 'node:sqlite';
import { crc32 } from 'node:zlib';
import { BatonError } from '../../lib/errors.ts';

/** Per table: the columns `row_sum` covers, in order; a `*_sum` column stands for the text it sums. */
export const ROW_SUM_COLUMNS: Record<string, string[]> = {
  tasks: [
    'id',
    'caller',
    'agent',
    'cwd',
    'workdir',
    'isolation',
    'model',
    'effort',
    'state',
    'session_id',
    'rounds',
    'created_at',
    'updated_at',
    'error',
    'last_seq',
    'commentary',
    'commentary_dropped',
    'list_order',
    'commentary_bytes',
    'commentary_chars',
  ],
  rounds: [
    'task_id',
    'n',
    'prompt_sum',
    'state',
    'started_at',
    'ended_at',
    'before',
    'after',
    'result',
    'error',
    'abandoned',
    'result_chars',
    'result_preview',
  ],
  events: ['task_id', 'seq', 'data', 'chars', 'text_sum'],
  result_pages: ['task_id', 'n', 'page', 'text'],
  commentary: ['task_id', 'seq', 'text', 'bytes', 'chars'],
  idempotency: ['caller', 'key', 'payload_hash', 'task_id', 'round'],
  workers: ['pgid', 'task_id', 'leader_start', 'started_at'],
  remote_workers: ['pgid', 'target', 'remote_pgid', 'remote_start'],
  mcp_sessions: ['id_hash', 'caller', 'created_at', 'last_seen'],
  round_usage: ['task_id', 'n', 'agent', 'input_tokens', 'output_tokens', 'cost_usd', 'reports'],
  usage_days: ['caller', 'agent', 'day', 'input_tokens', 'output_tokens', 'cost_usd', 'reports'],
};

/** Large columns summed on their own: table → column → its sum column. */
const PART_SUMS: Record<string, Record<string, string>> = {
  rounds: { prompt: 'prompt_sum' },
  events: { text: 'text_sum' },
};

function addValue(v: SQLOutputValue | undefined, c: number): number {
  if (v === null || v === undefined) return crc32('n;', c);
  if (typeof v === 'string') return crc32(v, crc32(`s${v.length};`, c));
  if (typeof v === 'number' || typeof v === 'bigint') return crc32(`i${v};`, c);
  return crc32(v, crc32(`b${v.byteLength};`, c));
}

/** The sum of one value (a `*_sum` column). */
export const partSum = (v: SQLOutputValue): number => addValue(v, 0);

/** The sum of a row's values in order (`row_sum`), for an insert that writes its own sums. */
export const rowSum = (...values: SQLOutputValue[]): number => {
  let c = 0;
  for (const v of values) c = addValue(v, c);
  return c;
};

/** Registers the SQL functions the triggers and checks call; every connection that writes the store needs them. */
export function registerRowSums(db: DatabaseSync): void {
  db.function('baton_sum', { deterministic: true }, partSum);
  db.function('baton_row_sum', { deterministic: true, varargs: true }, rowSum);
}

/** `row_sum` as computed from a row (`NEW.` in a trigger, a table alias in a query), its large columns summed anew. */
function computed(table: string, prefix: string): string {
  const parts = Object.entries(PART_SUMS[table] ?? {});
  const args = ROW_SUM_COLUMNS[table]!.map((col) => {
    const part = parts.find(([, sum]) => sum === col);
    return part ? `baton_sum(${prefix}${part[0]})` : `${prefix}${col}`;
  });
  return `baton_row_sum(${args.join(', ')})`;
}

/** The assignments that set a row's sums from its values. */
function sumAssignments(table: string, prefix: string): string {
  const parts = Object.entries(PART_SUMS[table] ?? {}).map(([col, sum]) => `${sum} = baton_sum(${prefix}${col})`);
  return [...parts, `row_sum = ${computed(table, prefix)}`].join(', ');
}

/**
 * The migration that adds the sums to `tables`: the columns, the triggers that keep them on every insert and update,
 * and the sums of the rows already there. A migration names its tables, so a table added later gets its sums in its
 * own migration.
 */
export function rowSumMigration(tables: readonly string[]): string {
  const out: string[] = [];
  for (const table of tables) {
    const cols = ROW_SUM_COLUMNS[table]!;
    for (const sum of Object.values(PART_SUMS[table] ?? {}))
      out.push(`ALTER TABLE ${table} ADD COLUMN ${sum} INTEGER;`);
    out.push(`ALTER TABLE ${table} ADD COLUMN row_sum INTEGER;`);
    const written = [...cols.filter((c) => !c.endsWith('_sum')), ...Object.keys(PART_SUMS[table] ?? {})];
    const body = `UPDATE ${table} SET ${sumAssignments(table, 'NEW.')} WHERE rowid = NEW.rowid;`;
    // An update sums the row anew, so it first checks the row it changes: a damaged row is refused, never re-summed
    // into one that looks whole.
    const guard = `SELECT RAISE(ABORT, '${damagedMessage(table, 'the row being changed')}') WHERE NOT ${intact(table, 'OLD', Object.keys(PART_SUMS[table] ?? {}))};`;
    // An insert that brings its own sums (events.ts) is not written twice.
    out.push(`CREATE TRIGGER ${table}_sum_insert AFTER INSERT ON ${table} WHEN NEW.row_sum IS NULL BEGIN ${body} END;`);
    out.push(
      `CREATE TRIGGER ${table}_sum_update AFTER UPDATE OF ${written.join(', ')} ON ${table} BEGIN ${guard} ${body} END;`,
    );
    out.push(`UPDATE ${table} SET ${sumAssignments(table, '')};`);
  }
  return out.join('\n');
}

/**
 * An SQL expression, 1 when the row (under `alias`, or the table's name) matches its sum: `row_sum` and the sums of
 * the large columns named in `parts`, which the read then serves.
 */
export function intact(table: string, alias = table, parts: string[] = []): string {
  const p = `${alias}.`;
  const row = `${p}row_sum IS baton_row_sum(${ROW_SUM_COLUMNS[table]!.map((c) => p + c).join(', ')})`;
  const more = parts.map((col) => ` AND ${p}${PART_SUMS[table]![col]} IS baton_sum(${p}${col})`);
  return `(${row}${more.join('')})`;
}

function damagedMessage(table: string, row: string): string {
  return (
    `the store is damaged: a row of ${table} (${row}) does not match its checksum, so baton will not use it. ` +
    'Inspect the store with `baton store check`, then stop the hub and restore a copy with ' +
    '`baton store restore <backup>`.'
  );
}

/** A read refused: the row it would serve does not match its checksum. */
export class StoreCorruptError extends BatonError<'internal'> {
  constructor(table: string, key: string) {
    super('internal', damagedMessage(table, key));
    this.name = 'StoreCorruptError';
  }
}

/** Throws StoreCorruptError unless the row read with an `intact` column says it matches its sum. */
export function checked<R extends { intact?: unknown }>(row: R, table: string, key: () => string): R {
  if (row.intact !== 1) throw new StoreCorruptError(table, key());
  return row;
}

/** Rows of each table that do not match their sums: what `baton store check` reports. */
export function damagedRows(db: DatabaseSync): { table: string; rowid: number }[] {
  const out: { table: string; rowid: number }[] = [];
  for (const table of Object.keys(ROW_SUM_COLUMNS)) {
    const all = Object.keys(PART_SUMS[table] ?? {});
    for (const r of db.prepare(`SELECT rowid FROM ${table} WHERE NOT ${intact(table, table, all)}`).all() as {
      rowid: number;
    }[]) {
      out.push({ table, rowid: Number(r.rowid) });
    }
  }
  return out;
}
