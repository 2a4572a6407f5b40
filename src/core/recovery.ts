// Crash recovery (rule: crash-durability): what a new daemon does with the work a crashed one left behind. Worker
// process groups still alive are stopped (unless their pid was reused), and every round that was queued or running is
// recorded as interrupted, never replayed: a caller continues the task to resume its session. Queued rounds are
// interrupted too (they never started), so a restart never starts work nobody is waiting for any more.
import { readFileSync } from 'node:fs';
import type { ProbeOptions } from '../agents/probe.ts';
import type { Logger } from '../lib/log.ts';
import { isGroupAlive, stopGroup } from '../lib/process-group.ts';
import { redactError } from '../lib/redact.ts';
import type { Store } from './store.ts';

const now = () => new Date().toISOString();
/** The task id under which agent probes' process groups are recorded in the workers table. */
const PROBE_WORKER = 'probe';

export async function recoverAfterCrash(
  store: Store,
  opts: { cancelGraceMs: number; logger: Logger },
): Promise<{ stoppedGroups: number; interrupted: number }> {
  let stoppedGroups = 0;
  for (const w of store.workers()) {
    // A live leader with another start time means the pid was reused by an unrelated process.
    const current = leaderStartTime(w.pgid);
    const reused = w.leaderStart !== null && current !== null && current !== w.leaderStart;
    if (!reused && isGroupAlive(w.pgid)) {
      await stopGroup(w.pgid, opts.cancelGraceMs);
      stoppedGroups++;
      opts.logger.warn('stopped a worker process group left by a previous daemon', { pgid: w.pgid, taskId: w.taskId });
    }
    store.removeWorker(w.pgid);
  }
  const unfinished = store.tasksInStates(['queued', 'running']);
  for (const t of unfinished) {
    // A round that never started (queued behind a lock or a run cap) ran nothing: it is interrupted all the same, not
    // started by the new daemon, and says so (rule: run-caps).
    const started = store.roundSummary(t.id, t.rounds)?.startedAt;
    // A round parked on a permission request says so (rule: approvals): the agent that asked is gone with the daemon.
    const waiting = started ? store.unansweredApproval(t.id, t.rounds) : undefined;
    store.tx(() => {
      const msg = waiting
        ? `the daemon stopped while this round waited for an answer to permission request ${waiting.requestId} (${waiting.what}); the agent process that asked is gone: continue the task to resume its session`
        : started
          ? 'the daemon stopped before this round finished; continue the task to resume its session'
          : 'the daemon stopped while this round was queued; it never started and nothing ran: continue the task to queue it again';
      store.updateRound(t.id, t.rounds, { state: 'interrupted', endedAt: now(), error: msg });
      store.setTaskState(t.id, 'interrupted', now(), msg);
      store.appendEvent(t.id, { time: now(), round: t.rounds, kind: 'lifecycle', state: 'interrupted' });
    });
  }
  return { stoppedGroups, interrupted: unfinished.length };
}

/** The leader's start time from /proc (Linux), to tell a recorded group from a reused pid after a crash. */
export function leaderStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * probeAgent hooks that record each probe process group like a worker's, so a hub killed mid-probe leaves them to the
 * next start's recovery. A failed write only costs that: the probe still runs and stops its own groups.
 */
export function probeGroupRecorder(store: Store, logger: Logger): Pick<ProbeOptions, 'onGroup' | 'onGroupGone'> {
  return {
    onGroup: (pgid) => {
      try {
        store.addWorker({ pgid, taskId: PROBE_WORKER, leaderStart: leaderStartTime(pgid) }, now());
      } catch (err) {
        logger.warn('could not record a probe process group', { pgid, error: redactError(err) });
      }
    },
    onGroupGone: (pgid) => {
      try {
        store.removeWorker(pgid);
      } catch {}
    },
  };
}
