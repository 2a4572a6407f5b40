// Where the running hub listens (rule: hub-commands): `baton serve` records its real address in the state dir once it
// listens, so every command for this config (stop, tasks, health, ui, doctor, start) reaches it whatever --port it was
// started with. The record is baton's own file (0600); it names the pid, and a record whose process is gone is ignored.
// The OS-held lease, not this file, keeps a second daemon off the state dir.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writePrivateFile } from '../../lib/private-fs.ts';

export interface ListenRecord {
  host: string;
  port: number;
  pid: number;
}

const FILE = 'listen.json';

export function listenRecordPath(stateDir: string): string {
  return join(stateDir, FILE);
}

export function writeListenRecord(stateDir: string, record: ListenRecord): void {
  writePrivateFile(listenRecordPath(stateDir), `${JSON.stringify(record)}\n`);
}

/** The record, when it is well-formed and its process still runs; otherwise undefined. */
export function readListenRecord(stateDir: string): ListenRecord | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(listenRecordPath(stateDir), 'utf8'));
  } catch {
    return undefined;
  }
  const r = raw as Partial<ListenRecord> | null;
  if (!r || typeof r.host !== 'string' || !r.host) return undefined;
  if (!Number.isInteger(r.port) || r.port! < 1 || r.port! > 65535) return undefined;
  if (!Number.isInteger(r.pid) || r.pid! < 1 || !processAlive(r.pid!)) return undefined;
  return { host: r.host, port: r.port!, pid: r.pid! };
}

/** Removes the record if it is this process's own (a newer hub's record is left alone). */
export function removeListenRecord(stateDir: string, pid = process.pid): void {
  try {
    const r = JSON.parse(readFileSync(listenRecordPath(stateDir), 'utf8')) as Partial<ListenRecord>;
    if (r.pid === pid) rmSync(listenRecordPath(stateDir), { force: true });
  } catch {
    // No record, or not one to trust: nothing of ours to remove.
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH: gone; EPERM: another user's process holds that pid now, so it is not this user's hub.
    return false;
  }
}
