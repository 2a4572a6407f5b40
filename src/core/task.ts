// Task model (rule: task-lifecycle): states and the transitions the engine may make.

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

export interface TaskEvent {
  seq: number;
  time: string;
  round: number;
  kind: string;
  [field: string]: unknown;
}
