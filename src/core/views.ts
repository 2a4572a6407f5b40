// What the engine shows of a task: the shapes callers, the control endpoint and the dashboard read, built from store
// rows. Nothing here changes state.
import type { AgentProbe } from '../agents/agent.ts';
import type { WaitingView } from './approvals.ts';
import type { QueueWait } from './locks.ts';
import type { ResultSummary, Store } from './store.ts';
import { type Isolation, isTerminal, type RoundSummary, type TaskEvent, type TaskRow } from './task.ts';
import type { Usage } from './usage.ts';

export interface TaskView {
  taskId: string;
  agent: string;
  state: TaskRow['state'];
  cwd: string;
  workdir: string;
  isolation: Isolation;
  sessionId: string | null;
  round: number;
  createdAt: string;
  updatedAt: string;
  error: string | null;
  result: ResultSummary | null;
  /** The execution target the task's agent runs on. */
  target?: string;
  /** Tokens and cost its agent reported over all rounds, the running one included; absent before any report. */
  usage?: Usage & { agent: string };
  /** A queued round's place in the admission queue and why it waits (rule: run-caps). */
  queue?: QueueWait;
  /** The permission request a running round waits for (rule: approvals). */
  waiting?: WaitingView;
  [k: string]: unknown;
}

export interface StatusView extends TaskView {
  rounds: RoundView[];
  events: TaskEvent[];
  nextCursor: number;
  hasMore: boolean;
}

export interface WaitView extends TaskView {
  events: TaskEvent[];
  nextCursor: number;
  hasMore: boolean;
  timedOut: boolean;
}

/** agent_wait over several tasks: which have news, and each task's state with a page of its news. */
export interface FanInView {
  /** The ids of the tasks with events after their cursor, in the order they were given. */
  ready: string[];
  /** True when the wait ended without news and some task was still live. */
  timedOut: boolean;
  tasks: (TaskView & { ready: boolean; events: TaskEvent[]; nextCursor: number; hasMore: boolean })[];
  [k: string]: unknown;
}

/** agent_agents: what a caller may reach, as probed without inference (no binary path: that is the operator's). */
export interface AgentsView {
  agents: (
    | (Omit<AgentProbe, 'binary'> & { target?: string })
    | { name: string; kind: string; available: false; detail: string }
  )[];
  [k: string]: unknown;
}

export type ResultView =
  | { taskId: string; state: TaskRow['state']; round: number; available: false }
  | {
      taskId: string;
      state: TaskRow['state'];
      round: number;
      available: true;
      /** The round is still running: this is the answer so far (rule: live-text); the final result replaces it. */
      partial?: true;
      error?: string;
      text: string;
      offset: number;
      nextOffset: number;
      done: boolean;
      total: number;
    };

export interface ListView {
  tasks: TaskView[];
  nextCursor: string | null;
  [k: string]: unknown;
}

export type RoundView = ReturnType<typeof roundView> & { usage?: Usage & { agent: string } };

/** A task's rounds as a status shows them, each with the usage its agent reported (rule: usage-budgets). */
export function roundViews(store: Store, taskId: string): RoundView[] {
  const usages = store.roundUsages(taskId);
  return store.roundSummaries(taskId).map((r) => {
    const usage = usages.get(r.n);
    return usage ? { ...roundView(r), usage } : roundView(r);
  });
}

/** A task as its caller sees it: state, the latest round's result length and a short preview (whole when short). */
export function taskView(store: Store, task: TaskRow): TaskView {
  // Length and preview were stored with the result, so this costs the same for a 10 MiB answer as for a short one.
  // A round's result is written only with its end, so a queued or running task's latest round has none: no read.
  const result = isTerminal(task.state) ? store.resultSummary(task.id, task.rounds) : null;
  const usage = store.taskUsage(task.id);
  return {
    taskId: task.id,
    agent: task.agent,
    state: task.state,
    cwd: task.cwd,
    workdir: task.workdir,
    isolation: task.isolation,
    sessionId: task.sessionId,
    round: task.rounds,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
    error: task.error,
    result,
    ...(usage ? { usage: { agent: task.agent, ...usage } } : {}),
  };
}

export function roundView(r: RoundSummary) {
  return {
    n: r.n,
    state: r.state,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    error: r.error,
    abandoned: r.abandoned,
    resultChars: r.resultChars,
    gitBefore: r.before,
    gitAfter: r.after,
  };
}
