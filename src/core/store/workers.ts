// Worker process groups: each running agent's group, kept so a hub that restarts after a crash can end what the
// previous one left running (core/recovery.ts).
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import type { Row } from './rows.ts';

export interface WorkerRecord {
  pgid: number;
  taskId: string;
  leaderStart: string | null;
}

/** In a transaction of its own, which what TaskLog has queued joins (inWrite) rather than committing apart. */
export function addWorker(db: StoreDb, w: WorkerRecord, now: string): void {
  db.tx(() =>
    db
      .stmt('INSERT OR REPLACE INTO workers (pgid, task_id, leader_start, started_at) VALUES (?, ?, ?, ?)')
      .run(w.pgid, w.taskId, w.leaderStart, now),
  );
}

export function removeWorker(db: StoreDb, pgid: number): void {
  db.stmt('DELETE FROM remote_workers WHERE pgid = ?').run(pgid);
  db.stmt('DELETE FROM workers WHERE pgid = ?').run(pgid);
}

export function removeWorkersOfTask(db: StoreDb, taskId: string): void {
  db.stmt('DELETE FROM remote_workers WHERE pgid IN (SELECT pgid FROM workers WHERE task_id = ?)').run(taskId);
  db.stmt('DELETE FROM workers WHERE task_id = ?').run(taskId);
}

/** The group on another machine a worker (the local group of its ssh client) started there. */
export interface RemoteWorkerRecord {
  pgid: number;
  target: string;
  remotePgid: number;
  remoteStart: string | null;
}

export function addRemoteWorker(db: StoreDb, w: RemoteWorkerRecord): void {
  db.tx(() =>
    db
      .stmt('INSERT OR REPLACE INTO remote_workers (pgid, target, remote_pgid, remote_start) VALUES (?, ?, ?, ?)')
      .run(w.pgid, w.target, w.remotePgid, w.remoteStart),
  );
}

export function remoteWorker(db: StoreDb, pgid: number): RemoteWorkerRecord | undefined {
  const r = db.stmt(`SELECT *, ${intact('remote_workers')} AS intact FROM remote_workers WHERE pgid = ?`).get(pgid) as
    | Row
    | undefined;
  if (!r) return undefined;
  checked(r, 'remote_workers', () => `pgid ${r.pgid}`);
  return {
    pgid: Number(r.pgid),
    target: String(r.target),
    remotePgid: Number(r.remote_pgid),
    remoteStart: r.remote_start === null ? null : String(r.remote_start),
  };
}

export function workersOfTask(db: StoreDb, taskId: string): number[] {
  return (
    db.stmt(`SELECT pgid, ${intact('workers')} AS intact FROM workers WHERE task_id = ?`).all(taskId) as Row[]
  ).map((r) => Number(checked(r, 'workers', () => `pgid ${r.pgid}`).pgid));
}

export function workers(db: StoreDb): WorkerRecord[] {
  const rows = (db.stmt(`SELECT *, ${intact('workers')} AS intact FROM workers`).all() as Row[]).map((r) =>
    checked(r, 'workers', () => `pgid ${r.pgid}`),
  );
  return rows.map((r) => ({
    pgid: Number(r.pgid),
    taskId: String(r.task_id),
    leaderStart: r.leader_start === null ? null : String(r.leader_start),
  }));
}
