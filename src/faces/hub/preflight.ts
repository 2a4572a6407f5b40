// The preflight table `doctor`, `serve` and `start` print: one row per configured agent with the binary baton will
// actually run (a bare name resolved the way the hub resolves it), its version, login state and the outcome.
import type { AgentProbe } from '../../agents/agent.ts';
import { findAgentBinary } from '../../lib/agent-path.ts';
import { redact } from '../../lib/redact.ts';

export interface PreflightRow extends Omit<Partial<AgentProbe>, 'available'> {
  name: string;
  kind: string;
  /** The execution target the agent runs on. */
  target?: string;
  /** null: not probed (the hub skipped its preflight). */
  available: boolean | null;
  /** Doctor's deeper check, e.g. "session ok" or "session failed: …". */
  session?: string;
  sessionFailed?: boolean;
}

/** ok: found and nothing says it cannot log in or open a session; WARN: found but not usable as is; FAIL: not found. */
export function rowStatus(r: PreflightRow): 'ok' | 'WARN' | 'FAIL' | '?' {
  if (r.available === null) return '?';
  if (!r.available) return 'FAIL';
  return r.login === 'missing' || r.sessionFailed ? 'WARN' : 'ok';
}

function shownBinary(binary: string | undefined): string {
  if (!binary) return '-';
  const [first, ...rest] = binary.split(' ');
  if (!first || first.includes('/')) return binary;
  const found = findAgentBinary(first);
  return found ? [found, ...rest].join(' ') : `${binary} (not found)`;
}

export function preflightLines(rows: readonly PreflightRow[]): string[] {
  if (!rows.length) return ['no agents configured (add them under "agents" in the config)'];
  const table = [
    ['status', 'agent', 'kind', 'binary', 'version', 'login', 'result'],
    ...rows.map((r) => [
      rowStatus(r),
      r.name,
      r.kind,
      shownBinary(r.binary),
      r.version ?? '-',
      r.login ?? '-',
      [r.session, r.detail].filter(Boolean).join('; ') || (r.available === null ? 'not probed' : '-'),
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return (
    table
      .map((row) =>
        row
          .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd(),
      )
      // Version, login and detail are what the agent printed about itself: redacted like every other output.
      .map((line) => redact(line))
  );
}

export interface TargetLine {
  name: string;
  kind: string;
  fence: string;
  host?: string;
  warning?: string;
  error?: string;
}

const FENCES: Record<string, string> = {
  secrets: "baton's files fenced off",
  sandbox: "sandboxed (host read-only, baton's files fenced off)",
  remote: 'another machine (nothing of this one in reach)',
  off: 'not fenced',
};

/**
 * What `doctor`, `serve` and `start` print under the agents: each target with its agents and fence, then one line with
 * the fix for a target that cannot fence as configured.
 */
export function targetLines(targets: readonly TargetLine[], rows: readonly PreflightRow[]): string[] {
  return targets.flatMap((t) => {
    const agents = rows.filter((r) => (r.target ?? 'local') === t.name).map((r) => r.name);
    return [
      `target ${t.name} (${t.kind}${t.host ? ` ${t.host}` : ''}): ${FENCES[t.fence] ?? t.fence}; agents: ${agents.join(', ') || 'none'}`,
      ...(t.error ? [`FAIL: ${t.error}`] : []),
      ...(t.warning ? [`warning: ${t.warning}`] : []),
    ];
  });
}
