// Task model (rule: task-lifecycle): states and the transitions the engine may make, and the events a task records.
import type { ToolFamily } from '../agents/agent.ts';

export const TASK_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

const TRANSITIONS: Record<TaskState, readonly TaskState[]> = {
  queued: ['running', 'cancelled', 'interrupted', 'failed'],
  running: ['succeeded', 'failed', 'cancelled', 'interrupted'],
  // A terminal task changes only by `continue`, which queues a new round.
  succeeded: ['queued'],
  failed: ['queued'],
  cancelled: ['queued'],
  interrupted: ['queued'],
};

export class InvalidTransitionError extends Error {
  constructor(from: TaskState, to: TaskState) {
    super(`a ${from} task cannot become ${to}`);
    this.name = 'InvalidTransitionError';
  }
}

export function assertTransition(from: TaskState, to: TaskState): void {
  if (!TRANSITIONS[from].includes(to)) throw new InvalidTransitionError(from, to);
}

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.has(state);
}

export type Isolation = 'none' | 'worktree';

export interface TaskRow {
  id: string;
  caller: string;
  agent: string;
  cwd: string;
  workdir: string;
  isolation: Isolation;
  model: string | null;
  effort: string | null;
  state: TaskState;
  sessionId: string | null;
  rounds: number;
  createdAt: string;
  updatedAt: string;
  error: string | null;
  lastSeq: number;
}

/** A round as status and views read it: no prompt or result, but the result's length and preview. */
export interface RoundSummary {
  taskId: string;
  n: number;
  state: TaskState;
  startedAt: string | null;
  endedAt: string | null;
  before: unknown;
  after: unknown;
  error: string | null;
  abandoned: boolean;
  /** Result length in code points, or null when the round has no result. */
  resultChars: number | null;
  resultPreview: string | null;
}

/**
 * What a task's event log records (rule: event-cursor), one variant per `kind`: the engine's own records (lifecycle,
 * cancel requests) and the agent's events as sanitised for callers (AgentEvent, agents/agent.ts). These are also the
 * events callers and the dashboard read, so a field added here is a field on the wire.
 */
export type TaskEventBody =
  /** The task (its current round) moved to `state`; an end says why it failed and whether a cancel was abandoned. */
  | {
      kind: 'lifecycle';
      state: TaskState;
      error?: string;
      abandoned?: boolean;
      /** On `queued`: the caller's own idle timeout, when it chose one. */
      timeoutSeconds?: number;
      /** On `queued`: the operator started this round for the task's caller (a Continue from the dashboard). */
      by?: 'operator';
    }
  /** A cancel was asked for, by the task's caller or the operator, or by a budget the round passed (`budget` says which). */
  | { kind: 'cancel_requested'; by?: 'caller' | 'operator' | 'budget'; budget?: string }
  /** The agent's own session id became known. */
  | { kind: 'session'; sessionId: string }
  | { kind: 'status'; text: string }
  | { kind: 'commentary'; text: string }
  | { kind: 'tool'; phase: 'start' | 'end'; family: ToolFamily; ok?: boolean }
  | { kind: 'permission'; decision: 'denied' | 'allowed'; what: string }
  | { kind: 'usage'; inputTokens?: number; outputTokens?: number; costUsd?: number; sessionCostUsd?: number }
  | { kind: 'error'; message: string }
  /** A permission request parked the round until someone answers it (rule: approvals); its lossy description only. */
  | {
      kind: 'approval_requested';
      requestId: string;
      /** The view's `waiting.kind`: the family of what is asked for. */
      family: ToolFamily;
      what: string;
      options: string[];
      expiresAt: string;
    }
  /** Who answered a parked request, and how. */
  | { kind: 'approval_answered'; requestId: string; decision: string; by: string }
  /**
   * Streamed answer text (rule: live-text). A page read without message text (a status glance, rule: event-pages)
   * carries `chars`, the text's length in code points, instead of `text`; `capped` marks the round's last piece once
   * its live text reached the cap.
   */
  | { kind: 'message'; text?: string; chars?: number; capped?: boolean };

/** An event as written: its body, when it happened and which round it belongs to. */
export type NewTaskEvent = TaskEventBody & { time: string; round: number };

/** An event as read, with its cursor. */
export type TaskEvent = NewTaskEvent & { seq: number };
