// Usage (rule: usage-budgets): what agents report of tokens and cost, as the engine sums it per round, per task and per
// caller and day. Each report an agent sends is added as it comes; a figure an agent never reported stays absent, so a
// view says which agent reported what.

/** Summed figures; a field is present only when some report carried it. */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  /** How many reports were added up. */
  reports: number;
}

/** One usage report as an agent adapter sends it (see AgentEvent `usage`). */
export interface UsageReport {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  /** The session's cumulative cost so far (ACP `usage_update`), instead of this report's own. */
  sessionCostUsd?: number;
}

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;

/**
 * A round's usage as it streams: turns each report into what it adds. A session's cumulative cost counts from the
 * task's cost before this round (`costBefore`, what its earlier rounds of the same session were counted), so a resumed
 * session's earlier cost is not counted again.
 */
export class RoundUsage {
  private readonly costBefore: number;
  private sum: Usage = { reports: 0 };

  constructor(costBefore: number) {
    this.costBefore = costBefore;
  }

  /** The figures `report` adds to the round (undefined when it carries none). */
  add(report: UsageReport): Omit<Usage, 'reports'> | undefined {
    const delta: Omit<Usage, 'reports'> = {};
    const input = count(report.inputTokens);
    const output = count(report.outputTokens);
    if (input !== undefined) delta.inputTokens = input;
    if (output !== undefined) delta.outputTokens = output;
    const session = count(report.sessionCostUsd);
    const own = count(report.costUsd);
    if (session !== undefined) {
      const roundCost = Math.max(0, session - this.costBefore);
      delta.costUsd = Math.max(0, roundCost - (this.sum.costUsd ?? 0));
    } else if (own !== undefined) delta.costUsd = own;
    if (!Object.keys(delta).length) return undefined;
    this.sum = addUsage(this.sum, { ...delta, reports: 1 });
    return delta;
  }

  get total(): Usage {
    return this.sum;
  }
}

export function addUsage(a: Usage, b: Usage): Usage {
  const plus = (x: number | undefined, y: number | undefined) => (x === undefined ? y : y === undefined ? x : x + y);
  const input = plus(a.inputTokens, b.inputTokens);
  const output = plus(a.outputTokens, b.outputTokens);
  const cost = plus(a.costUsd, b.costUsd);
  return {
    ...(input !== undefined ? { inputTokens: input } : {}),
    ...(output !== undefined ? { outputTokens: output } : {}),
    ...(cost !== undefined ? { costUsd: Math.round(cost * 1e6) / 1e6 } : {}),
    reports: a.reports + b.reports,
  };
}

/** The UTC day (YYYY-MM-DD) an ISO time falls on: daily totals and budgets reset at 00:00 UTC. */
export function utcDay(iso: string): string {
  return iso.slice(0, 10);
}

/** Usage per caller and agent over a period of UTC days. */
export interface UsageTotals {
  from: string;
  to: string;
  totals: { caller: string; agent: string; usage: Usage }[];
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A period of UTC days from query values (each defaulting to `today`), or what is wrong with them. */
export function usagePeriod(
  from: string | undefined,
  to: string | undefined,
  today: string,
): { from: string; to: string } | string {
  const f = from ?? today;
  const t = to ?? today;
  for (const [name, v] of [
    ['from', f],
    ['to', t],
  ] as const) {
    if (!DAY.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`))) return `${name}: "${v}" is not a day (YYYY-MM-DD)`;
  }
  if (f > t) return `from: ${f} is after to: ${t}`;
  return { from: f, to: t };
}

/** Usage in one short line for the operator: `110 in · 22 out · $1.0000`, only what was reported; `-` for none. */
export function usageText(u: Omit<Usage, 'reports'> | undefined): string {
  if (!u) return '-';
  const parts = [
    u.inputTokens !== undefined ? `${u.inputTokens} in` : '',
    u.outputTokens !== undefined ? `${u.outputTokens} out` : '',
    u.costUsd !== undefined ? `$${u.costUsd.toFixed(4)}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(' · ') : '-';
}

/** The budgets that apply to one caller (rule: usage-budgets); a key left out is no budget. */
export interface Budget {
  maxTokensPerRound?: number;
  maxCostUsdPerRound?: number;
  maxTokensPerDay?: number;
  maxCostUsdPerDay?: number;
}

export const BUDGET_KEYS = ['maxTokensPerRound', 'maxCostUsdPerRound', 'maxTokensPerDay', 'maxCostUsdPerDay'] as const;

const tokensOf = (u: Usage): number => (u.inputTokens ?? 0) + (u.outputTokens ?? 0);

/** Which per-round budget a round's usage passed, in words (`maxTokensPerRound (…)`), or undefined. */
export function roundOverBudget(u: Usage, b: Budget): string | undefined {
  if (b.maxTokensPerRound !== undefined && tokensOf(u) > b.maxTokensPerRound)
    return `maxTokensPerRound (${b.maxTokensPerRound} tokens; the round reported ${tokensOf(u)})`;
  if (b.maxCostUsdPerRound !== undefined && (u.costUsd ?? 0) > b.maxCostUsdPerRound)
    return `maxCostUsdPerRound ($${b.maxCostUsdPerRound}; the round reported $${u.costUsd})`;
  return undefined;
}

/**
 * Why a caller may start no new round today, or undefined: its usage today (every agent) reached a daily budget. The
 * budget resets at the next 00:00 UTC.
 */
export function dailyRefusal(caller: string, today: Usage, b: Budget, nowIso: string): string | undefined {
  const reset = new Date(`${utcDay(nowIso)}T00:00:00Z`);
  reset.setUTCDate(reset.getUTCDate() + 1);
  const resets = `it resets at ${reset.toISOString().replace('.000Z', 'Z')}`;
  if (b.maxTokensPerDay !== undefined && tokensOf(today) >= b.maxTokensPerDay)
    return `daily budget reached: caller "${caller}" used ${tokensOf(today)} of ${b.maxTokensPerDay} tokens today (maxTokensPerDay); ${resets}`;
  if (b.maxCostUsdPerDay !== undefined && (today.costUsd ?? 0) >= b.maxCostUsdPerDay)
    return `daily budget reached: caller "${caller}" used $${today.costUsd} of $${b.maxCostUsdPerDay} today (maxCostUsdPerDay); ${resets}`;
  return undefined;
}
