// 2025-era MCP sessions, which outlive a hub restart: a row binds a session (by the SHA-256 of its id, never the id)
// to its caller. Writes go through tx() like every other, so a full disk surfaces as StoreFullError (the hub's 507).
import type { StoreDb } from './db.ts';
import { checked, intact } from './row-sums.ts';
import type { Row } from './rows.ts';

export function insertMcpSession(db: StoreDb, idHash: string, caller: string, now: string): void {
  db.tx(() =>
    db
      .stmt('INSERT INTO mcp_sessions (id_hash, caller, created_at, last_seen) VALUES (?, ?, ?, ?)')
      .run(idHash, caller, now, now),
  );
}

export function getMcpSession(db: StoreDb, idHash: string): { caller: string; lastSeen: string } | undefined {
  const row = db
    .stmt(`SELECT caller, last_seen, ${intact('mcp_sessions')} AS intact FROM mcp_sessions WHERE id_hash = ?`)
    .get(idHash) as Row | undefined;
  if (row) checked(row, 'mcp_sessions', () => 'a session');
  return row ? { caller: String(row.caller), lastSeen: String(row.last_seen) } : undefined;
}

export function touchMcpSession(db: StoreDb, idHash: string, now: string): void {
  db.tx(() => db.stmt('UPDATE mcp_sessions SET last_seen = ? WHERE id_hash = ?').run(now, idHash));
}

export function deleteMcpSession(db: StoreDb, idHash: string): boolean {
  return db.tx(() => Number(db.stmt('DELETE FROM mcp_sessions WHERE id_hash = ?').run(idHash).changes) > 0);
}

/** How many sessions the caller holds and its least recently seen one. */
export function mcpSessionsOf(
  db: StoreDb,
  caller: string,
): { count: number; oldest?: { idHash: string; lastSeen: string } } {
  const count = Number((db.stmt('SELECT COUNT(*) AS n FROM mcp_sessions WHERE caller = ?').get(caller) as Row).n);
  const row = db
    .stmt(
      `SELECT id_hash, last_seen, ${intact('mcp_sessions')} AS intact FROM mcp_sessions WHERE caller = ? ORDER BY last_seen LIMIT 1`,
    )
    .get(caller) as Row | undefined;
  if (row) checked(row, 'mcp_sessions', () => `${caller}'s oldest session`);
  return { count, ...(row ? { oldest: { idHash: String(row.id_hash), lastSeen: String(row.last_seen) } } : {}) };
}

/** Drops sessions not seen since `before` (an ISO time); returns how many. */
export function pruneMcpSessions(db: StoreDb, before: string): number {
  return db.tx(() => Number(db.stmt('DELETE FROM mcp_sessions WHERE last_seen < ?').run(before).changes));
}
