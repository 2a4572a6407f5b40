// Usage as agents report it (rule: usage-budgets): each round's sums (round_usage) and each caller's per agent and UTC
// day (usage_days). A column stays NULL until the agent reports that figure, so a view tells "reported 0" from "never
// reported".
import type { Usage } from '../usage.ts';
import type { StoreDb } from './db.ts';
import type { Row } from './rows.ts';

/** Adds one report to a round's sums and to its caller's day. `day` is the UTC date (YYYY-MM-DD) of the report. */
export function addUsage(
  db: StoreDb,
  at: { taskId: string; n: number; caller: string; agent: string; day: string },
  u: Usage,
): void {
  const vals = [u.inputTokens ?? null, u.outputTokens ?? null, u.costUsd ?? null];
  // NULL + NULL stays NULL (never reported); a reported figure starts the sum.
  const sum = (col: string) =>
    `${col} = CASE WHEN excluded.${col} IS NULL THEN ${col} ELSE COALESCE(${col}, 0) + excluded.${col} END`;
  const update = `${sum('input_tokens')}, ${sum('output_tokens')}, ${sum('cost_usd')}, reports = reports + 1`;
  db.stmt(
    `INSERT INTO round_usage (task_id, n, agent, input_tokens, output_tokens, cost_usd, reports) VALUES (?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (task_id, n) DO UPDATE SET ${update}`,
  ).run(at.taskId, at.n, at.agent, ...vals);
  db.stmt(
    `INSERT INTO usage_days (caller, day, agent, input_tokens, output_tokens, cost_usd, reports) VALUES (?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (caller, day, agent) DO UPDATE SET ${update}`,
  ).run(at.caller, at.day, at.agent, ...vals);
}

/** Each round's sums for a task, by round number; rounds without a report are absent. */
export function roundUsages(db: StoreDb, taskId: string): Map<number, Usage & { agent: string }> {
  const rows = db
    .stmt('SELECT n, agent, input_tokens, output_tokens, cost_usd, reports FROM round_usage WHERE task_id = ?')
    .all(taskId) as Row[];
  return new Map(rows.map((r) => [Number(r.n), { agent: String(r.agent), ...usageOf(r) }]));
}

/** A task's sums over its rounds, or undefined when no round has a report. */
export function taskUsage(db: StoreDb, taskId: string): Usage | undefined {
  const r = db
    .stmt(
      `SELECT SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, SUM(cost_usd) AS cost_usd,
         SUM(reports) AS reports FROM round_usage WHERE task_id = ?`,
    )
    .get(taskId) as Row | undefined;
  return r && r.reports != null ? usageOf(r) : undefined;
}

/** Sums per caller and agent over the UTC days `from`..`to` (inclusive), optionally of one caller. */
export function usageTotals(
  db: StoreDb,
  from: string,
  to: string,
  caller?: string,
): { caller: string; agent: string; usage: Usage }[] {
  const rows = db
    .stmt(
      `SELECT caller, agent, SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,
         SUM(cost_usd) AS cost_usd, SUM(reports) AS reports FROM usage_days
         WHERE day >= ? AND day <= ? AND (? IS NULL OR caller = ?) GROUP BY caller, agent ORDER BY caller, agent`,
    )
    .all(from, to, caller ?? null, caller ?? null) as Row[];
  return rows.map((r) => ({ caller: String(r.caller), agent: String(r.agent), usage: usageOf(r) }));
}

function usageOf(r: Row): Usage {
  return {
    ...(r.input_tokens != null ? { inputTokens: Number(r.input_tokens) } : {}),
    ...(r.output_tokens != null ? { outputTokens: Number(r.output_tokens) } : {}),
    // Summed as floating point: shown to the micro-dollar, so 0.1 + 0.2 reads 0.3.
    ...(r.cost_usd != null ? { costUsd: Math.round(Number(r.cost_usd) * 1e6) / 1e6 } : {}),
    reports: Number(r.reports),
  };
}
