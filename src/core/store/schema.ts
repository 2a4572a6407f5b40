// The store's schema: one migration per step, applied in order and counted in PRAGMA user_version.
import { rowSumMigration } from './row-sums.ts';

export const MIGRATIONS: string[] = [
  `CREATE TABLE tasks (
     id TEXT PRIMARY KEY, caller TEXT NOT NULL, agent TEXT NOT NULL, cwd TEXT NOT NULL, workdir TEXT NOT NULL,
     isolation TEXT NOT NULL, model TEXT, effort TEXT, state TEXT NOT NULL, session_id TEXT, rounds INTEGER NOT NULL,
     created_at TEXT NOT NULL, updated_at TEXT NOT NULL, error TEXT, last_seq INTEGER NOT NULL DEFAULT 0,
     commentary TEXT NOT NULL DEFAULT '', commentary_dropped INTEGER NOT NULL DEFAULT 0, list_order INTEGER NOT NULL);
   CREATE INDEX tasks_by_caller ON tasks(caller, list_order);
   CREATE TABLE rounds (
     task_id TEXT NOT NULL REFERENCES tasks(id), n INTEGER NOT NULL, prompt TEXT NOT NULL, state TEXT NOT NULL,
     started_at TEXT, ended_at TEXT, before TEXT, after TEXT, result TEXT, error TEXT, abandoned INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (task_id, n));
   CREATE TABLE events (
     task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq));
   CREATE TABLE idempotency (
     caller TEXT NOT NULL, key TEXT NOT NULL, payload_hash TEXT NOT NULL, task_id TEXT NOT NULL, round INTEGER NOT NULL,
     PRIMARY KEY (caller, key));
   CREATE TABLE workers (pgid INTEGER PRIMARY KEY, task_id TEXT NOT NULL, leader_start TEXT, started_at TEXT NOT NULL);`,
  // Reads that cost the same whatever the size of a result or of the commentary. A result is kept in pages
  // of RESULT_PAGE_CODE_POINTS in its own table, with its length and preview in the round row (a large value inside
  // the row would make SQLite walk its overflow pages to reach any column stored after it); commentary is appended as
  // chunks with running totals and trimmed from the front a chunk at a time; the operator list and recovery read
  // through indexes. Rounds written before this migration keep their result in rounds.result (result_chars NULL) and
  // are measured and paged from it as before.
  `ALTER TABLE rounds ADD COLUMN result_chars INTEGER;
   ALTER TABLE rounds ADD COLUMN result_preview TEXT;
   CREATE TABLE result_pages (
     task_id TEXT NOT NULL REFERENCES tasks(id), n INTEGER NOT NULL, page INTEGER NOT NULL, text TEXT NOT NULL,
     PRIMARY KEY (task_id, n, page));
   CREATE TABLE commentary (
     task_id TEXT NOT NULL REFERENCES tasks(id), seq INTEGER NOT NULL, text TEXT NOT NULL, bytes INTEGER NOT NULL,
     chars INTEGER NOT NULL, PRIMARY KEY (task_id, seq));
   ALTER TABLE tasks ADD COLUMN commentary_bytes INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE tasks ADD COLUMN commentary_chars INTEGER NOT NULL DEFAULT 0;
   INSERT INTO commentary (task_id, seq, text, bytes, chars)
     SELECT id, 1, commentary, length(CAST(commentary AS BLOB)), length(commentary) FROM tasks WHERE commentary <> '';
   UPDATE tasks SET commentary_bytes = length(CAST(commentary AS BLOB)), commentary_chars = length(commentary),
     commentary = '' WHERE commentary <> '';
   CREATE INDEX tasks_by_order ON tasks(list_order);
   CREATE INDEX tasks_by_state ON tasks(state, list_order);`,
  // 2025-era MCP sessions outlive a hub restart. A row binds a session (by the SHA-256
  // of its id, never the id) to its caller; nothing else about the client is kept.
  `CREATE TABLE mcp_sessions (
     id_hash TEXT PRIMARY KEY, caller TEXT NOT NULL, created_at TEXT NOT NULL, last_seen TEXT NOT NULL);
   CREATE INDEX mcp_sessions_by_caller ON mcp_sessions(caller, last_seen);`,
  // Event pages: an event's text length is a column, and a `message` event's text lives in a
  // column of its own rather than inside its JSON, so a page that leaves message text out (agent_status) reads neither
  // it nor JSON the size of it: its cost no longer grows with how much answer text was streamed.
  // `chars` comes before `text` in the row, so reading it never walks a long text's overflow pages.
  `ALTER TABLE events ADD COLUMN chars INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE events ADD COLUMN text TEXT;
   UPDATE events SET chars = length(json_extract(data, '$.text')) WHERE json_type(data, '$.text') = 'text';
   UPDATE events SET text = json_extract(data, '$.text'), data = json_remove(data, '$.text')
     WHERE json_extract(data, '$.kind') = 'message' AND json_type(data, '$.text') = 'text';`,
  // A checksum on every row (row-sums.ts), kept by triggers, computed here for the rows already stored.
  rowSumMigration([
    'tasks',
    'rounds',
    'events',
    'result_pages',
    'commentary',
    'idempotency',
    'workers',
    'mcp_sessions',
  ]),
  // Usage as agents report it (rule: usage-budgets): summed per round, and per caller, agent and UTC day for the
  // totals of a period and the daily budgets. A NULL column is one the agent never reported.
  `CREATE TABLE round_usage (
     task_id TEXT NOT NULL REFERENCES tasks(id), n INTEGER NOT NULL, agent TEXT NOT NULL, input_tokens INTEGER,
     output_tokens INTEGER, cost_usd REAL, reports INTEGER NOT NULL, PRIMARY KEY (task_id, n));
   CREATE TABLE usage_days (
     caller TEXT NOT NULL, agent TEXT NOT NULL, day TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER,
     cost_usd REAL, reports INTEGER NOT NULL, PRIMARY KEY (caller, day, agent));
   ${rowSumMigration(['round_usage', 'usage_days'])}`,
  // A worker's process group on another machine (an ssh target): the local group of its ssh client, the target's
  // name and the group's id and leader start time there, so the next start reaps it there too.
  `CREATE TABLE remote_workers (
     pgid INTEGER PRIMARY KEY, target TEXT NOT NULL, remote_pgid INTEGER NOT NULL, remote_start TEXT);
   ${rowSumMigration(['remote_workers'])}`,
];
