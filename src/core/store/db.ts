// The store's database (rule: crash-durability): opening it behind the integrity checks, migrations, transactions
// and the group commit. Every write that acknowledges something to a caller is committed before the answer goes out:
// node:sqlite is synchronous, so a method returning means its transaction is committed. The connection runs with
// `synchronous = NORMAL` (a commit reaches the OS, which survives a crash of the daemon); durableTx() also syncs the
// WAL to the disk before it returns, for what an answer acknowledges, and syncSoon() syncs it in the background for a
// round's end, so a power loss can take back only the last moments' progress (docs/hub.md, "Durability").
// The queries of each table family live in the modules beside this one and run through stmt().
import { chmodSync, closeSync, existsSync, fdatasync, openSync } from 'node:fs';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { PRIVATE_FILE_MODE } from '../../lib/private-fs.ts';
import {
  checkFiles,
  MarkerWriter,
  readHeaderChecksum,
  readMarker,
  StoreDamagedError,
  type StoreMarker,
  walPath,
  writeMarker,
} from '../store-guard.ts';
import { diskFull } from './errors.ts';
import { registerRowSums } from './row-sums.ts';
import { MIGRATIONS } from './schema.ts';

const SQLITE_CORRUPT = 11;
const SQLITE_NOTADB = 26;

/** SQLite's own report of a damaged file (a page or the schema it cannot parse) as the store's refusal. */
function damaged(err: unknown, path: string): unknown {
  const e = err as { errcode?: number; message?: string } | null;
  const code = typeof e?.errcode === 'number' ? e.errcode & 0xff : -1;
  if (
    path === ':memory:' ||
    !(code === SQLITE_CORRUPT || code === SQLITE_NOTADB || /malformed/i.test(String(e?.message)))
  ) {
    return err;
  }
  return new StoreDamagedError(path, `cannot be read: ${e?.message}`);
}

/** How long a round's end may wait for its background sync (syncSoon). */
const SYNC_SOON_MS = 200;

/** Writes made inside another transaction by StoreDb.inWrite, told how that transaction ended. */
export interface JoinedWrite {
  committed(): void;
  rolledBack(): void;
}

export class StoreDb {
  readonly db: DatabaseSync;
  readonly path: string;
  /** The marker beside the DB (null for an in-memory store). */
  private marker: StoreMarker | null = null;
  private markerFile: MarkerWriter | undefined;
  /** A task was inserted in the current transaction: the marker is rewritten once it commits. */
  private markerDirty = false;
  /** The task inserted last (its id and list order), for the marker: inserted, not yet in a written marker. */
  private inserted: { id: string; order: number } | undefined;
  /** The DB header's checksum, kept once settled (see readHeaderChecksum). */
  private settledHeader: string | undefined;
  /**
   * Runs first inside each top-level transaction: the task log writes its queued events there, so they share that
   * transaction's commit and stay before what it writes. What it returns hears whether the transaction committed.
   */
  inWrite: (() => JoinedWrite | undefined) | undefined;

  /**
   * Opens the store at `path`, refusing (StoreDamagedError) when files are missing or damaged where the marker says
   * data existed, and when PRAGMA integrity_check fails. A fresh state dir opens as an empty store.
   */
  constructor(path: string) {
    this.path = path;
    const onDisk = path !== ':memory:';
    const previous = onDisk ? readMarker(path) : null;
    if (onDisk) checkFiles(path, previous);
    const fresh = onDisk && !existsSync(path);
    let opened: DatabaseSync | undefined;
    try {
      opened = new DatabaseSync(path);
      this.db = opened;
      registerRowSums(this.db);
      if (fresh) chmodSync(path, PRIVATE_FILE_MODE);
      this.db.exec(
        'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
      );
    } catch (err) {
      if (opened?.isOpen) opened.close();
      throw damaged(diskFull(err, `cannot open the store ${path}`), path);
    }
    try {
      if (onDisk) this.verify(previous);
      this.migrate();
      if (onDisk) {
        this.marker = { ...this.currentMarker(), clean: false };
        this.markerFile = new MarkerWriter(path);
        this.markerFile.reset(this.marker);
      }
    } catch (err) {
      // Closing without the clean mark: a refused store keeps its files exactly as they were found.
      this.markerFile?.close();
      this.db.close();
      throw damaged(diskFull(err, `cannot open the store ${path}`), path);
    }
  }

  /**
   * integrity_check, then the marker's promise: every task it counted is still there. integrity_check (rather than
   * quick_check) also finds an index that no longer matches its table, through which a read would serve the wrong row;
   * it costs little more (docs/hub.md, "Damage inside pages"). Damage inside a row is found by its checksum
   * when the row is read (row-sums.ts).
   */
  private verify(previous: StoreMarker | null): void {
    let problems: string[];
    try {
      problems = (this.stmt('PRAGMA integrity_check').all() as { integrity_check: string }[]).map(
        (r) => r.integrity_check,
      );
    } catch (err) {
      // A page so damaged that the check itself cannot walk it.
      problems = [(err as Error).message];
    }
    if (problems.length !== 1 || problems[0] !== 'ok') {
      const wal = existsSync(walPath(this.path)) ? ` (read together with its WAL ${walPath(this.path)})` : '';
      throw new StoreDamagedError(this.path, `fails PRAGMA integrity_check${wal}: ${problems.slice(0, 3).join('; ')}`);
    }
    if (!previous || previous.tasks === 0) return;
    const { tasks, last } = this.counts();
    if (tasks < previous.tasks || (previous.lastTaskId !== null && !last.has(previous.lastTaskId))) {
      throw new StoreDamagedError(
        this.path,
        `holds ${tasks} task(s), but the store held ${previous.tasks} (last ${previous.lastTaskId ?? 'unknown'})`,
      );
    }
  }

  /** Task `id` (at list position `order`) was inserted: the marker counts it once its transaction commits. */
  taskInserted(id: string, order: number): void {
    this.markerDirty = true;
    this.inserted = { id, order };
    if (!this.db.isTransaction) this.afterCommit();
  }

  private counts(): { tasks: number; last: { has(id: string): boolean } } {
    const hasTable = this.stmt("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tasks'").get();
    if (!hasTable) return { tasks: 0, last: { has: () => false } };
    const tasks = (this.stmt('SELECT COALESCE(MAX(list_order), 0) AS n FROM tasks').get() as { n: number }).n;
    const byId = this.stmt('SELECT 1 FROM tasks WHERE id = ?');
    return { tasks, last: { has: (id) => byId.get(id) !== undefined } };
  }

  private currentMarker(): StoreMarker {
    const schema = (this.stmt('PRAGMA user_version').get() as { user_version: number }).user_version;
    const last = this.stmt('SELECT id, list_order FROM tasks ORDER BY list_order DESC LIMIT 1').get() as
      | { id: string; list_order: number }
      | undefined;
    return { schema, tasks: last?.list_order ?? 0, lastTaskId: last?.id ?? null, header: this.header(), clean: false };
  }

  private header(): string | null {
    if (this.settledHeader) return this.settledHeader;
    const { checksum, settled } = readHeaderChecksum(this.path);
    if (settled && checksum) this.settledHeader = checksum;
    return checksum;
  }

  /** Prepared statements by SQL text: preparing per call cost more than running the statement in an event flood. */
  private readonly statements = new Map<string, StatementSync>();

  /** A prepared statement for `sql`, prepared once per store: what the table modules run their queries with. */
  stmt(sql: string): StatementSync {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** The marker as it stands (null in memory). */
  markerState(): StoreMarker | null {
    return this.marker;
  }

  private afterCommit(): void {
    if (!this.markerDirty || !this.marker) return;
    // The marker is a lower bound written after the commit: a crash (or a full disk) between the two leaves it behind
    // what is on disk, never ahead. A failed write is retried at the next task. The task inserted last is the one with
    // the highest list order (insertTask gives each the next), so no query is needed to know what the marker counts.
    try {
      const last = this.inserted;
      const next = last
        ? { ...this.marker, tasks: last.order, lastTaskId: last.id, header: this.header(), clean: false }
        : { ...this.currentMarker(), clean: false };
      this.markerFile!.update(next);
      this.marker = next;
      this.markerDirty = false;
      this.inserted = undefined;
    } catch {}
  }

  private migrate(): void {
    const version = (this.stmt('PRAGMA user_version').get() as { user_version: number }).user_version;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.tx(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
    }
  }

  /**
   * Runs `fn` in one transaction (nested calls join the outer one). A full disk fails as StoreFullError; SQLite may
   * already have rolled back by itself then, so ROLLBACK is issued only while a transaction is still open. The commit
   * reaches the OS but is not synced to the disk (synchronous = NORMAL): see durableTx.
   */
  tx<T>(fn: () => T): T {
    return this.transaction(fn, false);
  }

  /**
   * tx() whose commit is synced to the disk before it returns (synchronous = FULL for that one commit): for writes an
   * answer acknowledges (a run, continue or cancel) and for a round's end (rule: crash-durability). The WAL is written
   * in order, so the sync also covers every commit before it. SQLite fixes the level when a transaction begins, so a
   * durableTx may join only an outer durableTx.
   */
  durableTx<T>(fn: () => T): T {
    return this.transaction(fn, true);
  }

  /** The open transaction is a durable one. */
  private durableOpen = false;

  /**
   * tx() for a write an answer acknowledges: commits `fn` now and returns a promise that resolves once the commit is on
   * the disk (synced(): a group commit). The marker for a task it inserts is written when that sync starts, so
   * admissions in the same moment share one marker write as well as one sync.
   */
  commitThenSync(fn: () => void): Promise<void> {
    this.transaction(fn, false, true);
    return this.synced();
  }

  private transaction<T>(fn: () => T, durable: boolean, markerWithSync = false): T {
    if (this.db.isTransaction) {
      if (durable && !this.durableOpen) throw new Error('a durable write cannot join a transaction begun without it');
      return fn();
    }
    let out: T;
    let joined: JoinedWrite | undefined;
    try {
      if (durable) this.db.exec('PRAGMA synchronous = FULL');
      this.durableOpen = durable;
      try {
        // Prepared once like every other statement: exec() would parse the SQL text on each transaction.
        this.stmt('BEGIN IMMEDIATE').run();
        joined = this.inWrite?.();
        out = fn();
        this.stmt('COMMIT').run();
      } catch (err) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        // A task inserted by the rolled-back transaction is not there: the marker must not count it. What an earlier
        // commit inserted and a failed marker write left pending is recounted from the tables.
        this.inserted = undefined;
        throw err;
      } finally {
        this.durableOpen = false;
        if (durable) this.db.exec('PRAGMA synchronous = NORMAL');
      }
    } catch (err) {
      // Told once the transaction is over, so whatever it does next (queue a retry) starts from a closed transaction.
      joined?.rolledBack();
      throw diskFull(err, 'the store could not write');
    }
    joined?.committed();
    if (!markerWithSync) this.afterCommit();
    return out;
  }

  /**
   * Runs `fn` inside the open transaction so that its failure takes back its own writes only (a savepoint). A failure
   * after which SQLite already rolled the whole transaction back (a full disk can) leaves that to the caller.
   */
  savepoint<T>(fn: () => T): T {
    this.stmt('SAVEPOINT part').run();
    try {
      const out = fn();
      this.stmt('RELEASE part').run();
      return out;
    } catch (err) {
      if (this.db.isTransaction) {
        this.stmt('ROLLBACK TO part').run();
        this.stmt('RELEASE part').run();
      }
      throw err;
    }
  }

  /** The WAL, opened for syncs in the thread pool once it exists; syncs in flight, and a close waiting for them. */
  private walFd: number | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private syncsInFlight = 0;
  /** The sync in flight, and the next one, which every caller that comes while one is in flight shares. */
  private syncRunning: Promise<void> | undefined;
  private syncQueued: Promise<void> | undefined;

  /**
   * Resolves once every commit made before the call is on the disk (rule: crash-durability): the WAL is synced in the
   * thread pool, so the event loop goes on serving while the disk works, and callers that commit in the same moment
   * share one sync (a group commit). A caller that comes while a sync runs waits for the next one, which covers its
   * commit. Rejects when the sync fails; resolves at once for an in-memory or closed store (close checkpoints).
   */
  synced(): Promise<void> {
    if (!this.marker || !this.db.isOpen) return Promise.resolve();
    this.syncQueued ??= (this.syncRunning ?? Promise.resolve()).then(
      () => this.syncNow(),
      () => this.syncNow(),
    );
    return this.syncQueued;
  }

  private syncNow(): Promise<void> {
    this.syncQueued = undefined;
    // The marker of tasks committed with commitThenSync: one write for the group, after their commits.
    this.afterCommit();
    const run = new Promise<void>((resolve, reject) => {
      if (!this.db.isOpen) return resolve();
      try {
        this.walFd ??= openSync(walPath(this.path), 'r');
      } catch (err) {
        // No WAL: nothing was committed since the last checkpoint left the database file synced.
        return (err as NodeJS.ErrnoException).code === 'ENOENT' ? resolve() : reject(err);
      }
      this.syncsInFlight++;
      fdatasync(this.walFd, (err) => {
        this.syncsInFlight--;
        // close() came while the sync ran: the descriptor is released only now, so no later open can reuse its number
        // under a sync still in flight.
        if (!this.db.isOpen && this.syncsInFlight === 0) this.closeWal();
        if (err) reject(err);
        else resolve();
      });
    });
    this.syncRunning = run;
    const clear = () => {
      if (this.syncRunning === run) this.syncRunning = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  /**
   * synced() within SYNC_SOON_MS, for a commit nobody's answer waits on (a round's end) that should still reach the
   * disk soon, not only at the next synced commit or checkpoint. Calls within the delay share one sync. A failed sync
   * is left to the next one.
   */
  syncSoon(): void {
    if (this.syncTimer || !this.marker) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.synced().catch(() => {});
    }, SYNC_SOON_MS);
    this.syncTimer.unref();
  }

  private closeWal(): void {
    if (this.walFd === undefined) return;
    try {
      closeSync(this.walFd);
    } catch {}
    this.walFd = undefined;
  }

  /**
   * Closes the store: checkpoints the WAL into baton.db, then records the clean stop, so a WAL found missing later
   * while the marker says "not clean" means commits were lost.
   */
  close(): void {
    if (!this.db.isOpen) return;
    if (this.marker) {
      try {
        this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        this.marker = { ...this.currentMarker(), clean: true };
        writeMarker(this.path, this.marker);
      } catch {
        // A failed checkpoint (disk full) leaves the marker "not clean": the WAL stays and is replayed next time.
      }
    }
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.markerFile?.close();
    this.db.close();
    if (this.syncsInFlight === 0) this.closeWal();
  }
}
