// What the engine's callers name: its options, the input of a run, who reads a task, the errors it refuses a request
// with, and the bounds of its pages (rules: hub-tools, event-pages).
import type { Agent, Sandbox } from '../agents/agent.ts';
import type { ExecutionTarget } from '../agents/targets/target.ts';
import { BatonError, type ErrorCode } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import type { Store } from './store.ts';
import type { Isolation } from './task.ts';
import { MESSAGE_EVENT_CODE_POINTS } from './task-log.ts';
import type { Budget } from './usage.ts';
import type { TaskView } from './views.ts';

/** agent_wait never blocks longer than this (rule: hub-tools). */
export const MAX_WAIT_MS = 25_000;
export const DEFAULT_EVENT_PAGE = 100;
export const MAX_EVENT_PAGE = 500;
export const DEFAULT_LIST_PAGE = 20;
export const MAX_LIST_PAGE = 100;
/** agent_wait watches at most this many tasks at once (rule: hub-tools). */
export const MAX_WAIT_TASKS = 16;
/**
 * Event text one page carries at most, in code points (rule: event-pages): one full `message` event
 * (MESSAGE_EVENT_CODE_POINTS), so reading from cursor 0 on a task that streamed 10 MiB costs about what a page of a
 * short task's events does, and the round's 131,072 streamed code points take 16 pages. A page ends before the event
 * that would pass it (hasMore: true); an event longer than the budget still comes alone, so a cursor always advances.
 */
export const EVENT_PAGE_TEXT_CODE_POINTS = MESSAGE_EVENT_CODE_POINTS;

/** The dashboard's list: the operator's task views, each with the start of its first prompt. */
export interface OverviewView {
  tasks: (TaskView & { promptStart: string })[];
  nextCursor: string | null;
}
/**
 * Who reads or cancels a task: a caller name (MCP, sees only its own tasks) or `OPERATOR` (the control endpoint and
 * the dashboard, authenticated by the control token, see every caller's tasks with a `caller` field).
 */
export const OPERATOR = null;
export type Reader = string | typeof OPERATOR;
/** Recorded on `cancel_requested` events (`by`) and in the round's error, so an operator's cancel reads as one. */
export type CancelOrigin = 'operator' | 'caller';
export const cancelOrigin = (reader: Reader): CancelOrigin => (reader === OPERATOR ? 'operator' : 'caller');

export type EngineErrorCode = Extract<ErrorCode, 'not_found' | 'invalid' | 'invalid_params' | 'conflict' | 'forbidden'>;

/** What agent_run and agent_continue answer: the task, and the cursor of its last event (pass it to agent_wait). */
export type AdmittedView = TaskView & { nextCursor: number };

/** What the engine refuses a request with (lib/errors.ts: the faces translate it). */
export class EngineError extends BatonError<EngineErrorCode> {
  constructor(code: EngineErrorCode, message: string) {
    super(code, message);
    this.name = 'EngineError';
  }
}

/**
 * A bad argument the schema could not see (a cursor that is not one of this reader's): faces answer -32602. The message
 * starts with the argument's name.
 */
export class InvalidArgumentError extends EngineError {
  constructor(message: string) {
    super('invalid_params', message);
    this.name = 'InvalidArgumentError';
  }
}

export interface EngineOptions {
  store: Store;
  agents: ReadonlyMap<string, Agent>;
  /** Which agents each caller may reach; a caller not listed reaches none. */
  reachable: (caller: string) => readonly string[];
  /** Authorised roots; a function when they can change while the engine runs (the hub reloads its config). */
  roots: readonly string[] | (() => readonly string[]);
  stateDir: string;
  /** Dirs no cwd may lie in whatever the roots say: baton's config, snippets and state (the state dir always is). */
  privateDirs?: readonly string[];
  logger: Logger;
  /** Idle deadline per round (0 = none) and hard deadline (0 = none), set by the operator (rule: two-deadlines). */
  idleTimeoutMs: number;
  hardTimeoutMs: number;
  /** How long a cancelled agent gets to stop by itself before its process group is stopped (rule: cancel-then-stop). */
  cancelGraceMs: number;
  /** Deadline of one agent probe for agent_agents (the operator's `limits.probeTimeoutMs`). */
  probeTimeoutMs?: number;
  sandbox?: Sandbox;
  /** How long a waiting reader lingers after non-lifecycle news (rule: event-cursor); NEWS_LINGER_MS unless set. */
  newsLingerMs?: number;
  /** The execution target each agent runs on (docs/targets.md); none: every agent runs unfenced on this machine. */
  targetOf?: (agent: string) => ExecutionTarget | undefined;
  /** Every target by name: the next start reaps a remote group through the target its record names. */
  targetNamed?: (name: string) => ExecutionTarget | undefined;
  /** Rounds running at once hub-wide (rule: run-caps); defaultMaxRunning() unless set. */
  maxRunning?: number;
  /** Rounds running at once per agent, for the agents that set a cap. */
  agentMaxRunning?: Readonly<Record<string, number>>;
  /** The budgets of a caller (rule: usage-budgets); none unless set. */
  budgetOf?: (caller: string) => Budget;
  /** Where worktree-isolated tasks get their worktrees (rule: worktrees-outside); beside baton's dirs unless set. */
  worktreesDir?: string;
  /** The approval policy for a caller and agent (rule: approvals); `deny` unless set. */
  approvalPolicy?: (caller: string, agent: string) => 'ask' | 'deny';
  /** How long a parked permission request waits before it is denied as timed out; DEFAULT_APPROVAL_TIMEOUT_MS unless set. */
  approvalTimeoutMs?: number;
}

export interface RunInput {
  agent?: string;
  prompt: string;
  cwd: string;
  idempotencyKey: string;
  isolation?: Isolation;
  model?: string;
  effort?: string;
  /** The caller's own hard deadline for the round, at most the operator's (rule: two-deadlines). */
  timeoutSeconds?: number;
}

export const now = () => new Date().toISOString();
