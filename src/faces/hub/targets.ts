// The hub's execution targets, made from its config: every target by name, the one each agent runs on, and what the
// ones in use fence (for health, doctor, serve and start). docs/targets.md is the user's page.
import { createTarget, type ExecutionTarget, type TargetStatus } from '../../agents/targets/target.ts';
import { agentTarget, type HubConfig } from './config.ts';

export interface HubTargets {
  byName: Map<string, ExecutionTarget>;
  /** The target of each configured agent. */
  ofAgent: Map<string, ExecutionTarget>;
  /** `local` and every target an agent uses, with its fence and any warning. */
  status(): TargetStatus[];
  /** The same, each target on another machine connected to first: one that cannot be reached says why (doctor). */
  checked(): Promise<TargetStatus[]>;
}

export function hubTargets(cfg: HubConfig, roots: () => readonly string[]): HubTargets {
  const byName = new Map(
    Object.entries(cfg.targetConfigs).map(([name, target]) => [
      name,
      createTarget(name, target, { privateDirs: cfg.privateDirs, roots, stateDir: cfg.stateDirPath }),
    ]),
  );
  const ofAgent = new Map(
    Object.entries(cfg.agents).map(([name, entry]) => [name, byName.get(agentTarget(entry)) as ExecutionTarget]),
  );
  const used = new Set(['local', ...[...ofAgent.values()].map((t) => t.name)]);
  return {
    byName,
    ofAgent,
    status: () => [...byName.values()].filter((t) => used.has(t.name)).map((t) => t.status()),
    checked: () =>
      Promise.all(
        [...byName.values()]
          .filter((t) => used.has(t.name))
          .map(async (t) => {
            const status = t.status();
            if (!t.remote) return status;
            const error = await t.remote.exec('exit 0', []).then(
              () => undefined,
              (err: Error) => err.message,
            );
            await t.remote.close();
            return error ? { ...status, error } : status;
          }),
      ),
  };
}
