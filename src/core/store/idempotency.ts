// Idempotency keys: a caller's key bound to the payload it came with and the task and round it started.
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import type { Row } from './rows.ts';

export interface IdempotencyRecord {
  payloadHash: string;
  taskId: string;
  round: number;
}

export function getIdempotency(db: StoreDb, caller: string, key: string): IdempotencyRecord | undefined {
  const r = db
    .stmt(`SELECT *, ${intact('idempotency')} AS intact FROM idempotency WHERE caller = ? AND key = ?`)
    .get(caller, key) as Row | undefined;
  if (r) checked(r, 'idempotency', () => `${caller}'s key`);
  return r ? { payloadHash: String(r.payload_hash), taskId: String(r.task_id), round: Number(r.round) } : undefined;
}

export function putIdempotency(db: StoreDb, caller: string, key: string, rec: IdempotencyRecord): void {
  db.stmt('INSERT INTO idempotency (caller, key, payload_hash, task_id, round) VALUES (?, ?, ?, ?, ?)').run(
    caller,
    key,
    rec.payloadHash,
    rec.taskId,
    rec.round,
  );
}
