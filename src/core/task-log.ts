// How a round's progress is written down: agent events become sanitised task events (TE-5, TE-6), the session id is
// recorded once, and the round's end is one transaction (state, result, error, lifecycle event). Every write wakes the
// task's long-poll waiters.
import type { AgentEvent } from '../agents/agent.ts';
import type { Logger } from '../lib/log.ts';
import { redactError } from '../lib/redact.ts';
import { cutCodePoints, statusLine, stripTerminalControls } from '../lib/text.ts';
import type { Store } from './store.ts';
import { assertTransition } from './task.ts';
import type { Waiters } from './waiters.ts';

/** Commentary kept per event; the full tail lives beside the task (TE-5). */
const COMMENTARY_EVENT_CODE_POINTS = 2_000;

const now = () => new Date().toISOString();

export interface RoundEnd {
  state: 'succeeded' | 'failed' | 'cancelled' | 'interrupted';
  error?: string | null;
  after?: unknown;
  abandoned?: boolean;
}

export class TaskLog {
  private readonly store: Store;
  private readonly waiters: Waiters;
  private readonly logger: Logger;

  constructor(store: Store, waiters: Waiters, logger: Logger) {
    this.store = store;
    this.waiters = waiters;
    this.logger = logger;
  }

  /** Ends round `n`: the round row, the task's state and the lifecycle event, in one transaction. */
  finishRound(taskId: string, n: number, end: RoundEnd, result?: string): void {
    const task = this.store.getTask(taskId);
    if (!task) throw new Error(`no task ${taskId}`);
    this.store.tx(() => {
      assertTransition(task.state, end.state);
      this.store.updateRound(taskId, n, {
        state: end.state,
        endedAt: now(),
        ...(end.after !== undefined ? { after: end.after } : {}),
        result: result ?? null,
        error: end.error ?? null,
        abandoned: end.abandoned ?? false,
      });
      this.store.setTaskState(taskId, end.state, now(), end.error ?? null);
      this.store.appendEvent(taskId, {
        time: now(),
        round: n,
        kind: 'lifecycle',
        state: end.state,
        ...(end.error ? { error: end.error } : {}),
        ...(end.abandoned ? { abandoned: true } : {}),
      });
    });
    if (end.abandoned) {
      this.logger.warn('cancel was not acknowledged by the agent; the turn was abandoned', {
        taskId,
        round: n,
        sessionId: task.sessionId,
      });
    }
    this.waiters.wake(taskId);
  }

  recordSession(taskId: string, n: number, sessionId: string): void {
    if (this.store.getTask(taskId)?.sessionId === sessionId) return;
    this.store.tx(() => {
      this.store.setSessionId(taskId, sessionId);
      this.store.appendEvent(taskId, { time: now(), round: n, kind: 'session', sessionId });
    });
    this.waiters.wake(taskId);
  }

  recordEvent(taskId: string, n: number, ev: Exclude<AgentEvent, { kind: 'end' | 'message' }>): void {
    const base = { time: now(), round: n };
    switch (ev.kind) {
      case 'session':
        this.recordSession(taskId, n, ev.id);
        return;
      case 'status':
        this.store.appendEvent(taskId, { ...base, kind: 'status', text: statusLine(ev.text) });
        break;
      case 'commentary': {
        const text = stripTerminalControls(ev.text);
        this.store.tx(() => {
          this.store.appendCommentary(taskId, text);
          this.store.appendEvent(taskId, {
            ...base,
            kind: 'commentary',
            text: cutCodePoints(text, COMMENTARY_EVENT_CODE_POINTS),
          });
        });
        break;
      }
      case 'tool':
        this.store.appendEvent(taskId, {
          ...base,
          kind: 'tool',
          phase: ev.phase,
          family: ev.family,
          ...(ev.ok !== undefined ? { ok: ev.ok } : {}),
        });
        break;
      case 'permission':
        this.store.appendEvent(taskId, {
          ...base,
          kind: 'permission',
          decision: ev.decision,
          what: statusLine(ev.what),
        });
        break;
      case 'usage':
        this.store.appendEvent(taskId, { ...base, ...ev, kind: 'usage' });
        break;
      case 'error':
        this.store.appendEvent(taskId, { ...base, kind: 'error', message: statusLine(redactError(ev.message)) });
        break;
    }
    this.waiters.wake(taskId);
  }
}
