// How the store reports a full disk: one error whatever layer (SQLite or a plain file write) ran out of space.
import { BatonError } from '../../lib/errors.ts';

/** A write refused because the disk (or the file system holding the state dir) is full. */
export class StoreFullError extends BatonError<'disk_full'> {
  constructor(what: string) {
    super('disk_full', `disk full: ${what}; free space on the disk holding baton's state dir and retry`);
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
export function diskFull(err: unknown, what: string): unknown {
  return isDiskFull(err) && !(err instanceof StoreFullError) ? new StoreFullError(what) : err;
}
