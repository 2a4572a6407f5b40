// The commands a Codex ≤ 0.153 thread left running. That Codex keeps a command running after it aborts the turn that
// started it (its unified exec outlives turns), in a session of the command's own (the sandbox's), so neither Codex's
// cancel nor its process group reaches it. The bridge finds a thread's commands by the CODEX_HOME and CODEX_THREAD_ID
// Codex gives them, and stops them when it stops the turn (rule: cancel-then-stop).
import type { Logger } from '../lib/log.ts';
import { groupsWithEnvironment, signalGroup } from '../lib/process-group.ts';

/** How long each signal gets before the next (TERM, then KILL). */
const STOP_GRACE_MS = 2_000;

export interface ThreadCommands {
  /** Process groups of the commands running for `threadId` now (Codex's own group excluded). */
  threadCommands(threadId: string): Set<number>;
  /** Stops the thread's commands, sparing the groups in `spare` (commands an earlier turn left running). */
  stopCommands(threadId: string | undefined, spare: ReadonlySet<number> | undefined): Promise<void>;
}

export function threadCommandsOf(codexHome: string, codexPgid: number, logger: Logger): ThreadCommands {
  function threadCommands(threadId: string): Set<number> {
    const groups = groupsWithEnvironment({ CODEX_HOME: codexHome, CODEX_THREAD_ID: threadId });
    groups.delete(codexPgid);
    return groups;
  }
  async function stopCommands(threadId: string | undefined, spare: ReadonlySet<number> | undefined): Promise<void> {
    if (threadId === undefined) return;
    // Gone means no live process carries the thread any more: a zombie left for a parent to reap does no work, and the
    // scan also catches a command started meanwhile.
    const running = () => [...threadCommands(threadId)].filter((g) => !spare?.has(g));
    let groups = running();
    if (groups.length === 0) return;
    logger.info('codex: stopping the commands of a stopped turn', { threadId, processGroups: groups.length });
    for (const sig of ['SIGTERM', 'SIGKILL'] as const) {
      for (const g of groups) signalGroup(g, sig);
      const deadline = Date.now() + STOP_GRACE_MS;
      while (groups.length > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        groups = running();
      }
      if (groups.length === 0) return;
    }
    logger.warn('codex: commands of a stopped turn survived SIGKILL', { threadId, processGroups: groups.length });
  }
  return { threadCommands, stopCommands };
}
