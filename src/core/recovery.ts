// Crash recovery (rule: crash-durability): what a new daemon does with the work a crashed one left behind. Worker
// process groups still alive are stopped (unless their pid was reused), and every round that was queued or running is
// recorded as interrupted, never replayed: a caller continues the task to resume its session. Queued rounds are
// interrupted too (they never started), so a restart never starts work nobody is waiting for any more.
import { readFileSync } from 'node:fs';
import type { ProbeOptions } from '../agents/probe.ts';
import type { ExecutionTarget } from '../agents/targets/target.ts';
import type { Logger } from '../lib/log.ts';
import { isGroupAlive, stopGroup } from '../lib/process-group.ts';
import { redactError } from '../lib/redact.ts';
import type { Store } from './store.ts';

const now = () => new Date().toISOString();
/** The task id under which agent probes' process groups are recorded in the workers table. */
const PROBE_WORKER = 'probe';

export async function recoverAfterCrash(
  store: Store,
  opts: { cancelGraceMs: number; logger: Logger; targetNamed?: (name: string) => ExecutionTarget | undefined },
): Promise<{ stoppedGroups: number; interrupted: number }> {
  let stoppedGroups = 0;
  for (const w of store.workers()) {
    // A group on another machine is stopped there, through the target its record names (rule: ssh-target).
    const remote = store.remoteWorker(w.pgid);
    if (remote) {
      const host = opts.targetNamed?.(remote.target)?.remote;
      const group = { pgid: remote.remotePgid, start: remote.remoteStart };
      if (host && (await host.stopRemoteGroup(group, opts.cancelGraceMs))) stoppedGroups++;
      else
        opts.logger.warn('could not reach a worker process group a previous daemon left on another machine', {
          target: remote.target,
          pgid: remote.remotePgid,
          taskId: w.taskId,
        });
    }
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

/**
 * Records a round's process group (rule: crash-durability); one started on another machine is recorded there too,
 * once its ssh client has read the remote group's id, so the next start reaps it there.
 */
export function recordWorker(
  store: Store,
  logger: Logger,
  w: { pgid: number; taskId: string; target: ExecutionTarget | undefined },
  at: string,
): void {
  store.addWorker({ pgid: w.pgid, taskId: w.taskId, leaderStart: leaderStartTime(w.pgid) }, at);
  const target = w.target;
  void target?.remote?.remoteGroup(w.pgid)?.then((g) => {
    // The round may have ended meanwhile: only a worker still recorded gets its remote group.
    if (!g || !store.workersOfTask(w.taskId).includes(w.pgid)) return;
    try {
      store.addRemoteWorker({ pgid: w.pgid, target: target.name, remotePgid: g.pgid, remoteStart: g.start });
    } catch (err) {
      logger.warn('could not record a remote process group', { target: target.name, error: redactError(err) });
    }
  });
}

/**
 * Why a round ended without its agent, when the SSH connection of one of its groups dropped: the target, its host and
 * ssh's error (rule: ssh-target). Undefined for a local target or a connection baton closed itself.
 */
export function connectionLost(target: ExecutionTarget | undefined, groups: readonly number[]): string | undefined {
  const host = target?.remote;
  if (!host) return undefined;
  for (const pgid of groups) {
    const why = host.connectionLost(pgid);
    if (why)
      return `the SSH connection to target "${target.name}" (${target.status().host ?? ''}) was lost during this round: ${why}; continue the task to resume its session`;
  }
  return undefined;
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
