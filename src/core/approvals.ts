// Approvals (rule: approvals): with the `ask` policy for a caller and agent, a permission request of a running round
// parks it until the task's caller (agent_respond), the operator (`baton tasks approve|deny`, the dashboard) or nobody
// (the timeout: denied) answers. What is shown of a request is the lossy description the `permission` event carries,
// never its arguments. Pending requests live in this process only: a daemon that stops takes the agent with it, and
// recovery says the round was waiting.
import { randomBytes } from 'node:crypto';
import type { PermissionAsk, PermissionDecision } from '../agents/agent.ts';
import { BatonError } from '../lib/errors.ts';
import type { NewTaskEvent } from './task.ts';

/** Every decision there is; a request offers some of them (always `deny`). */
export const DECISIONS = [
  'allow',
  'allow_always',
  'deny',
  'deny_always',
] as const satisfies readonly PermissionDecision[];

export function isDecision(s: string): s is PermissionDecision {
  return (DECISIONS as readonly string[]).includes(s);
}

/** Who answered a request: the task's caller, the operator, nobody in time, or no one because the round stopped. */
export type AnsweredBy = 'caller' | 'operator' | 'timeout' | 'stopped';

/** What a task view shows of the request its round waits for. */
export interface WaitingView {
  requestId: string;
  kind: PermissionAsk['family'];
  what: string;
  options: PermissionDecision[];
  expiresAt: string;
}

interface Pending extends WaitingView {
  taskId: string;
  round: number;
  settle(decision: PermissionDecision, by: AnsweredBy): void;
}

export interface ParkOptions {
  taskId: string;
  round: number;
  timeoutMs: number;
  /** The round's signal: a stopped round answers `deny` at once. */
  signal: AbortSignal;
  /** Keeps the round's idle deadline from running out while a person decides (the hard deadline still holds). */
  touch: () => void;
}

/** How long a parked request waits for an answer unless the operator sets `limits.approvalTimeoutMs`: 10 minutes. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;

/** While a request waits, the round's idle deadline is refreshed this often. */
const TOUCH_EVERY_MS = 1_000;

export class Approvals {
  private readonly pending = new Map<string, Pending>();
  private readonly record: (taskId: string, event: NewTaskEvent) => void;

  /** `record` appends an event to the task's log (durably) and wakes its readers. */
  constructor(record: (taskId: string, event: NewTaskEvent) => void) {
    this.record = record;
  }

  /** Parks a request until it is answered; resolves with the decision the agent gets. Never rejects. */
  park(ask: PermissionAsk, opts: ParkOptions): Promise<PermissionDecision> {
    const requestId = `r-${randomBytes(9).toString('base64url')}`;
    const expiresAt = new Date(Date.now() + opts.timeoutMs).toISOString();
    const view: WaitingView = { requestId, kind: ask.family, what: ask.what, options: [...ask.options], expiresAt };
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let ticker: NodeJS.Timeout | undefined;
      const onAbort = () => entry.settle('deny', 'stopped');
      const entry: Pending = {
        ...view,
        taskId: opts.taskId,
        round: opts.round,
        settle: (decision, by) => {
          if (this.pending.get(requestId) !== entry) return;
          this.pending.delete(requestId);
          clearTimeout(timer);
          clearInterval(ticker);
          opts.signal.removeEventListener('abort', onAbort);
          opts.touch();
          this.record(opts.taskId, {
            time: new Date().toISOString(),
            round: opts.round,
            kind: 'approval_answered',
            requestId,
            decision,
            by,
          });
          resolve(decision);
        },
      };
      this.pending.set(requestId, entry);
      this.record(opts.taskId, {
        time: new Date().toISOString(),
        round: opts.round,
        kind: 'approval_requested',
        requestId,
        family: view.kind,
        what: view.what,
        options: view.options,
        expiresAt,
      });
      if (opts.signal.aborted) return onAbort();
      opts.signal.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => entry.settle('deny', 'timeout'), opts.timeoutMs);
      ticker = setInterval(opts.touch, TOUCH_EVERY_MS);
    });
  }

  /** The oldest request a task's round waits for, if any. */
  waitingOf(taskId: string): WaitingView | undefined {
    for (const p of this.pending.values()) {
      if (p.taskId === taskId) {
        const { taskId: _t, round: _r, settle: _s, ...view } = p;
        return view;
      }
    }
    return undefined;
  }

  /**
   * Answers a request of `taskId` (whose reader the engine has already checked). A request that is not pending for
   * that task is a conflict (answered already, timed out, or never one of its requests); a decision the request does
   * not offer is a bad argument. Nothing changes on either.
   */
  respond(taskId: string, requestId: string, decision: PermissionDecision, by: 'caller' | 'operator'): WaitingView {
    const p = this.pending.get(requestId);
    if (!p || p.taskId !== taskId) {
      throw new BatonError(
        'conflict',
        `request ${requestId} is not pending for task ${taskId} (answered already, timed out, or not one of its requests); the task's view says what it waits for`,
      );
    }
    if (!p.options.includes(decision)) {
      throw new BatonError(
        'invalid_params',
        `decision: "${decision}" is not offered for request ${requestId} (offered: ${p.options.join(', ')})`,
      );
    }
    const { taskId: _t, round: _r, settle, ...view } = p;
    settle(decision, by);
    return view;
  }
}
