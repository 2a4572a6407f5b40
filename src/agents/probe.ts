// Probing an agent (rule `free-probes`): version and login checks run under one deadline, and every process
// group the probe spawns (at whatever depth of the adapter) is reported and stopped when the probe ends or its deadline
// passes, so a hung `--version` cannot outlive the preflight.
import { type ChildGroup, withGroupScope } from '../lib/process-group.ts';
import { redactError } from '../lib/redact.ts';
import type { Agent, AgentProbe, ProbeRequest } from './agent.ts';
import { checkTestedVersion, testedAgentOf } from './tested-versions.ts';

export const DEFAULT_PROBE_TIMEOUT_MS = 20_000;
/** Grace between SIGTERM and SIGKILL for a probe's leftover group. */
const PROBE_STOP_GRACE_MS = 1_000;

export interface ProbeOptions extends ProbeRequest {
  timeoutMs?: number;
  /** A probe process group started (the hub records it, so a start after a killed hub reaps it). */
  onGroup?(pgid: number): void;
  /** That group is gone. */
  onGroupGone?(pgid: number): void;
}

export async function probeAgent(agent: Agent, opts: ProbeOptions = {}): Promise<AgentProbe> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const groups: ChildGroup[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    const probe = withGroupScope(
      {
        onSpawn: (g) => {
          groups.push(g);
          opts.onGroup?.(g.pgid);
        },
      },
      () => agent.probe(opts.catalog ? { catalog: true } : undefined),
    );
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`probe of ${agent.name} timed out after ${Math.round(timeoutMs / 1000)} s`)),
        timeoutMs,
      );
    });
    return withVersionVerdict(await Promise.race([probe, deadline]));
  } catch (err) {
    return { name: agent.name, kind: agent.kind, available: false, detail: redactError(err) };
  } finally {
    clearTimeout(timer);
    await Promise.all(
      groups.map(async (g) => {
        await g.stop(PROBE_STOP_GRACE_MS);
        opts.onGroupGone?.(g.pgid);
      }),
    );
  }
}

/**
 * The probe with the verdict on its version (rule: free-probes): a refused version makes the agent unavailable
 * with that one line as the detail; an untested newer one stays available and says so.
 */
export function withVersionVerdict(probe: AgentProbe): AgentProbe {
  const agent = testedAgentOf(probe.kind, probe.binary ? [probe.binary] : undefined);
  if (!agent) return probe;
  const verdict = checkTestedVersion(agent, probe.version);
  // A refused version explains whatever else failed after it (an app-server that did not start, say).
  if (verdict.outcome === 'refused') return { ...probe, available: false, detail: verdict.message };
  if (verdict.outcome === 'untested' && probe.available)
    return { ...probe, detail: probe.detail ? `${verdict.message}; ${probe.detail}` : verdict.message };
  return probe;
}
