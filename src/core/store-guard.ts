// The store knows it had data: a small marker beside baton.db records how many tasks the store held, the
// schema version, a checksum of the DB header's fixed fields and whether the last hub closed cleanly. SQLite opens a
// missing, truncated or WAL-less database as an empty store without complaint; these checks, run before it opens,
// turn that into a refusal that names the damaged file and the way back (`baton store check|backup|restore`).
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { PRIVATE_FILE_MODE } from '../lib/private-fs.ts';

export interface StoreMarker {
  /** The schema version (PRAGMA user_version) the store had. */
  schema: number;
  /** The highest task list order ever committed: tasks are never deleted, so the store must hold at least this. */
  tasks: number;
  /** The last task created (null before the first). */
  lastTaskId: string | null;
  /** sha256 of the DB header's fields that do not change as data is written (null before the file has a header). */
  header: string | null;
  /**
   * False while a hub has the store open. The WAL is checkpointed and removed only by a clean close, so a WAL that is
   * missing while this is false was removed by someone else, and with it commits not yet copied into baton.db.
   */
  clean: boolean;
}

export class StoreDamagedError extends Error {
  /** The file at fault. */
  readonly file: string;
  constructor(file: string, what: string) {
    const dir = dirname(file);
    super(
      `the store is damaged: ${file} ${what}. baton will not start on a store that lost data. ` +
        `Inspect it with \`baton store check\`, then restore a copy with \`baton store restore <backup>\` ` +
        `(copies are in ${join(dir, 'backups')}); to start empty instead, move ${dir} aside.`,
    );
    this.name = 'StoreDamagedError';
    this.file = file;
  }
}

export const markerPath = (dbPath: string) => `${dbPath}.marker.json`;
export const walPath = (dbPath: string) => `${dbPath}-wal`;

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const WAL_MAGIC_LE = 0x377f0682;
const WAL_MAGIC_BE = 0x377f0683;
const WAL_HEADER_BYTES = 32;

export function readMarker(dbPath: string): StoreMarker | null {
  const path = markerPath(dbPath);
  if (!existsSync(path)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new StoreDamagedError(path, 'is not readable JSON (it records what the store held)');
  }
  const m = raw as Partial<StoreMarker>;
  if (typeof m !== 'object' || m === null || typeof m.tasks !== 'number' || typeof m.schema !== 'number') {
    throw new StoreDamagedError(path, 'does not have the fields a store marker has');
  }
  return {
    schema: m.schema,
    tasks: m.tasks,
    lastTaskId: typeof m.lastTaskId === 'string' ? m.lastTaskId : null,
    header: typeof m.header === 'string' ? m.header : null,
    clean: m.clean === true,
  };
}

/**
 * Writes the marker atomically (a temp file renamed over it), 0600. Its dir is the store's own, already private, and
 * one process writes it at a time (the scheduler lease), so the temp name needs only the pid. Used when a hub opens
 * and closes the store; the updates in between go through MarkerWriter. Returns the bytes written.
 */
export function writeMarker(dbPath: string, marker: StoreMarker): number {
  const path = markerPath(dbPath);
  const tmp = `${path}.${process.pid}.tmp`;
  const text = `${JSON.stringify(marker)}\n`;
  writeFileSync(tmp, text, { mode: PRIVATE_FILE_MODE });
  renameSync(tmp, path);
  return Buffer.byteLength(text);
}

/**
 * The marker's updates while a hub has the store open, one per group of admissions: written in place through a
 * descriptor kept open, as one write at offset 0, padded with spaces to at least the length of what it replaces (JSON
 * allows trailing white space). A new file and a rename per update cost the daemon more CPU than the admission's own
 * commit (ext4 looks for a free inode each time). The text stays far below a disk sector (512 bytes), the unit a disk
 * writes whole, so a crash leaves either the old marker or the new one.
 */
export class MarkerWriter {
  private readonly dbPath: string;
  private fd: number | undefined;
  private length = 0;

  constructor(dbPath: string) {
    this.dbPath = dbPath;
  }

  /** Writes `marker` atomically (writeMarker) and keeps the file open for update(). */
  reset(marker: StoreMarker): void {
    this.close();
    this.length = writeMarker(this.dbPath, marker);
    this.fd = openSync(markerPath(this.dbPath), 'r+');
  }

  update(marker: StoreMarker): void {
    if (this.fd === undefined) {
      this.reset(marker);
      return;
    }
    const json = JSON.stringify(marker);
    const text = `${json}${' '.repeat(Math.max(0, this.length - Buffer.byteLength(json) - 1))}\n`;
    const buf = Buffer.from(text);
    if (writeSync(this.fd, buf, 0, buf.length, 0) !== buf.length) throw new Error('short write of the store marker');
    this.length = buf.length;
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {}
    this.fd = undefined;
  }
}

function readHead(path: string, bytes: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** sha256 of the header fields fixed at creation: magic, page size, format versions, encoding, application id. */
export function headerChecksum(dbPath: string): string | null {
  return readHeaderChecksum(dbPath).checksum;
}

/**
 * headerChecksum, and whether it is settled: a new WAL-mode database's file has its schema format and text encoding
 * still 0 until the first checkpoint writes page 1; from then on these fields never change, so a caller may keep it.
 */
export function readHeaderChecksum(dbPath: string): { checksum: string | null; settled: boolean } {
  if (!existsSync(dbPath)) return { checksum: null, settled: false };
  const head = readHead(dbPath, 100);
  if (head.length < 100) return { checksum: null, settled: false };
  const fixed = Buffer.concat([
    head.subarray(0, 24),
    head.subarray(44, 48),
    head.subarray(56, 60),
    head.subarray(68, 72),
  ]);
  return { checksum: createHash('sha256').update(fixed).digest('hex'), settled: head.readUInt32BE(56) !== 0 };
}

/** SQLite's WAL checksum over `data` (a multiple of 8 bytes), in the byte order the WAL magic names. */
function walChecksum(data: Buffer, bigEndian: boolean): [number, number] {
  let s0 = 0;
  let s1 = 0;
  for (let i = 0; i < data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/**
 * What can be checked before SQLite opens the files (it would silently ignore a WAL with a bad header, and treat a
 * missing or emptied DB as a new one). Throws StoreDamagedError; returns quietly for a fresh state dir.
 */
export function checkFiles(dbPath: string, marker: StoreMarker | null): void {
  const wal = walPath(dbPath);
  const hadData = marker !== null && marker.tasks > 0;
  if (!existsSync(dbPath)) {
    if (marker !== null) throw new StoreDamagedError(dbPath, `is missing, but the store held ${marker.tasks} task(s)`);
    if (existsSync(wal)) throw new StoreDamagedError(dbPath, `is missing, but its WAL ${basename(wal)} is there`);
    return;
  }
  const size = statSync(dbPath).size;
  if (size === 0) {
    if (hadData) throw new StoreDamagedError(dbPath, `is empty (0 bytes), but the store held ${marker.tasks} task(s)`);
  } else {
    const head = readHead(dbPath, 100);
    if (head.length < 100 || !head.subarray(0, 16).equals(SQLITE_MAGIC)) {
      throw new StoreDamagedError(dbPath, 'does not start with a SQLite header (overwritten or truncated)');
    }
    const rawPage = head.readUInt16BE(16);
    const pageSize = rawPage === 1 ? 65_536 : rawPage;
    const pages = head.readUInt32BE(28);
    // The in-header page count is valid only when the change counter matches version-valid-for; with a WAL present a
    // checkpoint may be half-way (quick_check judges that case), so the file size is compared only without one.
    const walFrames = existsSync(wal) && statSync(wal).size > 0;
    const countValid = !walFrames && head.readUInt32BE(24) === head.readUInt32BE(92);
    if (size % pageSize !== 0 || (countValid && pages > 0 && size < pages * pageSize)) {
      throw new StoreDamagedError(
        dbPath,
        `is truncated (${size} bytes; its header says ${pages} pages of ${pageSize})`,
      );
    }
    if (marker?.header && headerChecksum(dbPath) !== marker.header) {
      throw new StoreDamagedError(dbPath, 'has a header that differs from the one recorded for this store');
    }
  }
  if (existsSync(wal)) {
    const walSize = statSync(wal).size;
    if (walSize > 0) {
      const h = readHead(wal, WAL_HEADER_BYTES);
      const magic = h.length === WAL_HEADER_BYTES ? h.readUInt32BE(0) : 0;
      const ok =
        (magic === WAL_MAGIC_LE || magic === WAL_MAGIC_BE) &&
        (() => {
          const [c0, c1] = walChecksum(h.subarray(0, 24), magic === WAL_MAGIC_BE);
          return c0 === h.readUInt32BE(24) && c1 === h.readUInt32BE(28);
        })();
      // SQLite would ignore every frame behind a bad header: commits in it would vanish without a word.
      if (!ok) throw new StoreDamagedError(wal, 'has a damaged header, so the commits it holds cannot be read');
    }
  } else if (marker !== null && !marker.clean && hadData) {
    throw new StoreDamagedError(
      wal,
      'is missing after a hub that did not stop cleanly; it held commits not yet copied into the database',
    );
  }
}
