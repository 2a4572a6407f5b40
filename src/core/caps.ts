// Caps on how much runs at once (rule: run-caps): at most `maxRunning` rounds hub-wide and at most an agent's own
// `maxRunning` rounds of that agent hold a run slot at a time. A round takes its slot when the workspace locks grant it
// (locks.ts asks this gate in the same admission-order pass) and gives it back when its lock is released, once every
// process group of the round has exited; so the count is of rounds whose agent may be alive.
import { availableParallelism } from 'node:os';

/** Default hub-wide cap: twice the CPUs this process may use (an agent mostly waits on its model, not on a CPU). */
export function defaultMaxRunning(): number {
  return 2 * availableParallelism();
}

export interface CapLimits {
  /** Rounds running at once on the hub. */
  maxRunning: number;
  /** Rounds running at once per agent name, for the agents that set one. */
  agentMaxRunning?: Readonly<Record<string, number>>;
}

/** Why a round that could start by its workspace is held back, as its view says it. */
export interface CapWait {
  waitingFor: 'maxRunning' | 'agentMaxRunning';
  why: string;
}

/** The gate WorkspaceLocks consults: whether a round of `agent` may start now, and the slot bookkeeping. */
export interface RunGate {
  blocked(agent: string): CapWait | undefined;
  take(agent: string): void;
  give(agent: string): void;
}

export class RunCaps implements RunGate {
  private readonly limits: CapLimits;
  private total = 0;
  private readonly byAgent = new Map<string, number>();

  constructor(limits: CapLimits) {
    this.limits = limits;
  }

  blocked(agent: string): CapWait | undefined {
    const max = this.limits.maxRunning;
    if (this.total >= max) {
      return {
        waitingFor: 'maxRunning',
        why: `${this.total} of ${max} rounds running on this hub (limits.maxRunning)`,
      };
    }
    const own = this.limits.agentMaxRunning?.[agent];
    const running = this.byAgent.get(agent) ?? 0;
    if (own !== undefined && running >= own) {
      return {
        waitingFor: 'agentMaxRunning',
        why: `${running} of ${own} rounds of agent "${agent}" running (agents.${agent}.maxRunning)`,
      };
    }
    return undefined;
  }

  take(agent: string): void {
    this.total++;
    this.byAgent.set(agent, (this.byAgent.get(agent) ?? 0) + 1);
  }

  give(agent: string): void {
    this.total = Math.max(0, this.total - 1);
    const n = (this.byAgent.get(agent) ?? 1) - 1;
    if (n > 0) this.byAgent.set(agent, n);
    else this.byAgent.delete(agent);
  }

  /** What `baton health` shows of the caps: the hub-wide count and cap, and each capped or running agent's. */
  snapshot(): {
    running: number;
    maxRunning: number;
    agents: Record<string, { running: number; maxRunning?: number }>;
  } {
    const agents: Record<string, { running: number; maxRunning?: number }> = {};
    const names = new Set([...this.byAgent.keys(), ...Object.keys(this.limits.agentMaxRunning ?? {})]);
    for (const name of [...names].sort()) {
      const max = this.limits.agentMaxRunning?.[name];
      agents[name] = { running: this.byAgent.get(name) ?? 0, ...(max !== undefined ? { maxRunning: max } : {}) };
    }
    return { running: this.total, maxRunning: this.limits.maxRunning, agents };
  }
}
