// How a round's progress is written down: agent events become sanitised task events (rules: commentary-only,
// fail-closed-status), the session id is recorded once, and the round's end is one transaction (state, result, error,
// lifecycle event). Every write wakes the task's long-poll waiters: a round's end at once, other news after a short
// linger (rule: event-cursor).
import type { AgentEvent } from '../agents/agent.ts';
import type { Logger } from '../lib/log.ts';
import { redact, redactError } from '../lib/redact.ts';
import { cutCodePoints, statusLine, stripTerminalControls } from '../lib/text.ts';
import { countCodePoints, splitCodePoints } from './paging.ts';
import { isDiskFull, type JoinedWrite, type Store } from './store.ts';
import { assertTransition, type NewTaskEvent } from './task.ts';
import type { Waiters } from './waiters.ts';

/** Commentary kept per event; the full tail lives beside the task (rule: commentary-only). */
const COMMENTARY_EVENT_CODE_POINTS = 2_000;

/** Events written per transaction at most, and how long the first of a batch waits for company. */
const EVENT_BATCH = 500;
const EVENT_FLUSH_MS = 5;
/** A failed flush is retried after this long. */
const RETRY_FLUSH_MS = 1_000;
/** Events queued at most while writes fail; beyond it they are dropped (and the drop logged). */
const MAX_PENDING_EVENTS = 50_000;

/**
 * Live answer text (rule: live-text): the round's streamed `message` text becomes `message` events of at most this many code
 * points each, and at most MESSAGE_ROUND_CODE_POINTS per round (the rest is only in the final result).
 */
export const MESSAGE_EVENT_CODE_POINTS = 8_192;
export const MESSAGE_ROUND_CODE_POINTS = 131_072;
/** Streamed text is written at most this often per hub (all tasks' text in one flush), not once per chunk. */
const MESSAGE_FLUSH_MS = 200;
/**
 * A line still being written is held back up to this length, so a credential is redacted whole (every credential
 * shape redact() knows lies on one line); a longer unfinished line is released but for its last REDACT_TAIL points.
 */
const HELD_LINE_CODE_POINTS = 2_048;
const REDACT_TAIL_CODE_POINTS = 1_024;

/**
 * How much of streamed text can be shown before the rest arrives: up to its last newline, or (a long unfinished line)
 * all but its last REDACT_TAIL_CODE_POINTS. Returns the UTF-16 index to cut at.
 */
export function settledLength(text: string): number {
  const lastNewline = text.lastIndexOf('\n') + 1;
  const line = text.length - lastNewline;
  // A UTF-16 length bounds the code point count from above, so the exact count is needed only for long lines.
  if (line <= HELD_LINE_CODE_POINTS || countCodePoints(text.slice(lastNewline)) <= HELD_LINE_CODE_POINTS)
    return lastNewline;
  let cut = text.length - REDACT_TAIL_CODE_POINTS;
  // Never between the halves of a surrogate pair.
  const c = text.charCodeAt(cut);
  if (c >= 0xdc00 && c <= 0xdfff) cut--;
  return cut;
}

/** Streamed answer text of a running round not yet written as events. */
interface LiveText {
  round: number;
  held: string;
  /** Code points written as `message` events so far this round. */
  written: number;
  capped: boolean;
}

const now = () => new Date().toISOString();

/** A queued agent event. */
interface PendingEvent {
  taskId: string;
  event: NewTaskEvent;
  /** The commentary text to append to the task's tail when the event is written. */
  commentary?: string;
}

/** A queued write: an agent event, or a round's before-snapshot (no event: nobody waits for it). */
type Pending = PendingEvent | { taskId: string; round: number; before: unknown };

const isEvent = (p: Pending): p is PendingEvent => 'event' in p;

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
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private droppedWhileFailing = 0;
  private closed = false;
  private readonly live = new Map<string, LiveText>();
  /** The session id each running task has stored, once this log wrote or checked it (dropped when its round ends). */
  private readonly sessions = new Map<string, string>();
  private liveTimer: NodeJS.Timeout | undefined;

  constructor(store: Store, waiters: Waiters, logger: Logger) {
    this.store = store;
    this.waiters = waiters;
    this.logger = logger;
    store.inWrite = () => this.writeQueued();
  }

  /**
   * Ends round `n`: the round row, the task's state and the lifecycle event, in one transaction. `durable` when the
   * caller's answer acknowledges it (a cancel of queued work): synced before returning. Otherwise the sync follows
   * in the background within moments (Store.syncSoon), off the event loop and off the next round's path.
   */
  finishRound(taskId: string, n: number, end: RoundEnd, result?: string, opts: { durable?: boolean } = {}): void {
    const task = this.store.getTask(taskId);
    if (!task) throw new Error(`no task ${taskId}`);
    // The round's last streamed text goes before its end, in the same write.
    this.releaseLive(taskId, true);
    this.live.delete(taskId);
    this.sessions.delete(taskId);
    const write = (fn: () => void) => (opts.durable ? this.store.durableTx(fn) : this.store.tx(fn));
    write(() => {
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
      // The round's process groups were stopped before its end (Engine.closeSession): a crash from now on has none
      // of them left to reap, so their records go in this commit.
      this.store.removeWorkersOfTask(taskId);
      this.store.appendEvent(taskId, {
        time: now(),
        round: n,
        kind: 'lifecycle',
        state: end.state,
        ...(end.error ? { error: end.error } : {}),
        ...(end.abandoned ? { abandoned: true } : {}),
      });
    });
    if (!opts.durable) this.store.syncSoon();
    if (end.abandoned) {
      this.logger.warn('cancel was not acknowledged by the agent; the turn was abandoned', {
        taskId,
        round: n,
        sessionId: task.sessionId,
      });
    }
    this.waiters.wake(taskId);
  }

  /** `storedId`: the task's session id as the caller last read it, when it knows (saves reading the task again). */
  recordSession(taskId: string, n: number, sessionId: string, storedId?: string | null): void {
    // The adapter names a round's session when it opens it and often again in its first event: the second costs no read.
    if (this.sessions.get(taskId) === sessionId) return;
    const stored = (storedId === undefined ? this.store.getTask(taskId)?.sessionId : storedId) === sessionId;
    if (!stored) {
      this.store.tx(() => {
        this.store.setSessionId(taskId, sessionId);
        this.store.appendEvent(taskId, { time: now(), round: n, kind: 'session', sessionId });
      });
    }
    this.sessions.set(taskId, sessionId);
    // Not a lifecycle change: a waiter lingers, so the news that follows (often the round's end) comes in one answer.
    if (!stored) this.waiters.nudge(taskId);
  }

  /**
   * Queues one agent event. Events are written in batches, one transaction per flush (EVENT_BATCH events or
   * EVENT_FLUSH_MS after the first), so a flooding agent costs a commit per batch, not two per event, and callers'
   * requests run between batches. Reads flush first (Engine), and every other write takes the queue into its own
   * transaction, ahead of what it writes (Store.inWrite), so the order of a task's events is the order they happened in.
   */
  recordEvent(taskId: string, n: number, ev: Exclude<AgentEvent, { kind: 'end' | 'message' }>): void {
    const base = { time: now(), round: n };
    let queued: PendingEvent;
    switch (ev.kind) {
      case 'session':
        try {
          this.recordSession(taskId, n, ev.id);
        } catch (err) {
          // Called from the agent's stream: a full disk is logged here rather than thrown into the adapter.
          this.logger.error('recording the session failed', { taskId, error: redactError(err) });
        }
        return;
      case 'status':
        queued = { taskId, event: { ...base, kind: 'status', text: statusLine(ev.text) } };
        break;
      case 'commentary': {
        const text = stripTerminalControls(ev.text);
        queued = {
          taskId,
          commentary: text,
          event: { ...base, kind: 'commentary', text: cutCodePoints(text, COMMENTARY_EVENT_CODE_POINTS) },
        };
        break;
      }
      case 'tool':
        queued = {
          taskId,
          event: {
            ...base,
            kind: 'tool',
            phase: ev.phase,
            family: ev.family,
            ...(ev.ok !== undefined ? { ok: ev.ok } : {}),
          },
        };
        break;
      case 'permission':
        queued = { taskId, event: { ...base, kind: 'permission', decision: ev.decision, what: statusLine(ev.what) } };
        break;
      case 'usage':
        queued = { taskId, event: { ...base, ...ev, kind: 'usage' } };
        break;
      case 'error':
        queued = { taskId, event: { ...base, kind: 'error', message: statusLine(redactError(ev.message)) } };
        break;
      default:
        return;
    }
    // Text streamed before this event is shown before it (as far as it is settled).
    this.releaseLive(taskId, false);
    this.enqueue(queued);
  }

  /**
   * Queues round `n`'s before-snapshot (rule: git-snapshots) until the next write takes it: most often the session
   * record that comes with the agent's start, a moment later. No timer writes it, so it costs no commit of its own;
   * readers flush first as for events, and the engine flushes before it sends the agent its turn, so the snapshot is
   * stored before the agent can change anything.
   */
  recordBefore(taskId: string, n: number, before: unknown): void {
    this.enqueue({ taskId, round: n, before }, false);
  }

  /** Writes the queue now if it still holds a before-snapshot of `taskId` (see recordBefore); throws as flush(). */
  flushBefore(taskId: string): void {
    if (this.pending.some((p) => !isEvent(p) && p.taskId === taskId)) this.flush();
  }

  /**
   * Queues streamed answer text of round `n` (rule: live-text). It is written as `message` events — coalesced over
   * MESSAGE_FLUSH_MS, terminal controls stripped, redacted, cut into events of MESSAGE_EVENT_CODE_POINTS and capped at
   * MESSAGE_ROUND_CODE_POINTS per round (the event that reaches the cap says `capped: true`); an unfinished line waits
   * for its end (see settledLength), and whatever is left is written when the round finishes.
   */
  recordMessage(taskId: string, n: number, text: string): void {
    let live = this.live.get(taskId);
    if (!live || live.round !== n) {
      live = { round: n, held: '', written: 0, capped: false };
      this.live.set(taskId, live);
    }
    if (live.capped || !text) return;
    live.held += text;
    if (this.closed) {
      this.releaseLive(taskId, false);
      this.flushForRead();
    } else
      this.liveTimer ??= setTimeout(() => {
        this.liveTimer = undefined;
        for (const id of this.live.keys()) this.releaseLive(id, false);
        this.flushNow();
      }, MESSAGE_FLUSH_MS);
  }

  /** Moves the settled part of a task's streamed text (all of it when `final`) into the queue as `message` events. */
  private releaseLive(taskId: string, final: boolean): void {
    const live = this.live.get(taskId);
    if (!live || live.capped || !live.held) return;
    const cut = final ? live.held.length : settledLength(live.held);
    if (cut <= 0) return;
    const text = redact(stripTerminalControls(live.held.slice(0, cut)));
    live.held = live.held.slice(cut);
    const pieces = splitCodePoints(text, MESSAGE_EVENT_CODE_POINTS);
    for (const [i, piece] of pieces.entries()) {
      const room = MESSAGE_ROUND_CODE_POINTS - live.written;
      const points = countCodePoints(piece);
      // Exactly filling the cap with text still to come counts as reaching it: that event carries the mark.
      const more = i < pieces.length - 1 || live.held !== '';
      if (points < room || (points === room && !more)) {
        live.written += points;
        this.enqueue({ taskId, event: { time: now(), round: live.round, kind: 'message', text: piece } });
        continue;
      }
      // The cap: what fits, and a mark saying the rest of this round's answer is only in its result.
      live.written += room;
      live.capped = true;
      live.held = '';
      this.enqueue({
        taskId,
        event: { time: now(), round: live.round, kind: 'message', text: cutCodePoints(piece, room), capped: true },
      });
      return;
    }
  }

  /** Queues a write; `soon` arms the flush timer (EVENT_FLUSH_MS), else the next write or flush takes it. */
  private enqueue(queued: Pending, soon = true): void {
    if (this.pending.length >= MAX_PENDING_EVENTS) {
      // Only while writes keep failing (a full disk): memory stays bounded, and the loss is said once.
      if (this.droppedWhileFailing++ === 0)
        this.logger.error('events are being dropped: the store cannot write them', {
          taskId: queued.taskId,
          pending: this.pending.length,
        });
      return;
    }
    this.pending.push(queued);
    if (this.pending.length >= EVENT_BATCH) this.flushNow();
    else if (soon) this.flushSoon(EVENT_FLUSH_MS);
  }

  /** Writes everything queued in one transaction and nudges the events' waiters; throws what the store threw. */
  flush(): void {
    if (!this.pending.length) return;
    // Inside another write (a read made from within it): the queue joins that write, and its waiters hear now.
    if (this.store.db.isTransaction) this.writeQueued()?.committed();
    // Otherwise a transaction of its own, which the store's inWrite hook (writeQueued) fills with the queue.
    else this.store.tx(() => {});
  }

  /**
   * The store's inWrite hook: writes the queued events inside the transaction just begun, so a round's last events
   * and its end (or any other write) share one commit, in the order they happened. The events go in a savepoint: a
   * batch that cannot be written for any reason but a full disk is dropped (and said so) without failing the write it
   * joined; on a full disk, or when the joined write fails, the batch goes back to the front of the queue.
   */
  private writeQueued(): JoinedWrite | undefined {
    if (!this.pending.length) return undefined;
    const batch = this.pending;
    this.pending = [];
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      this.store.savepoint(() => {
        for (const p of batch) {
          if (!isEvent(p)) {
            this.store.updateRound(p.taskId, p.round, { before: p.before });
            continue;
          }
          if (p.commentary !== undefined) this.store.appendCommentary(p.taskId, p.commentary);
          this.store.appendEvent(p.taskId, p.event);
        }
      });
    } catch (err) {
      // Anything but a full disk would fail the same way forever and block every later write behind it.
      if (!isDiskFull(err)) {
        this.logger.error('events could not be written and were dropped', {
          count: batch.length,
          error: redactError(err),
        });
        return undefined;
      }
      this.pending = batch.concat(this.pending);
      throw err;
    }
    return {
      committed: () => {
        if (this.droppedWhileFailing) {
          this.logger.warn('the store writes again; events were dropped meanwhile', {
            dropped: this.droppedWhileFailing,
          });
          this.droppedWhileFailing = 0;
        }
        for (const id of new Set(batch.filter(isEvent).map((p) => p.taskId))) this.waiters.nudge(id);
      },
      rolledBack: () => {
        // The write they joined failed (the events themselves were fine): they are written again, first.
        this.pending = batch.concat(this.pending);
        this.flushSoon(EVENT_FLUSH_MS);
      },
    };
  }

  /** flush() for readers: a failing write (a full disk) must not stop reads of what is already stored. */
  flushForRead(): void {
    try {
      this.flush();
    } catch (err) {
      this.logger.warn('queued events could not be written yet', { error: redactError(err) });
    }
  }

  /** Flushes what is queued and stops the timer (the engine is closing). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.liveTimer);
    this.liveTimer = undefined;
    for (const id of this.live.keys()) this.releaseLive(id, false);
    this.flushForRead();
  }

  private flushSoon(ms: number): void {
    if (this.closed) {
      this.flushForRead();
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushNow();
    }, ms);
  }

  private flushNow(): void {
    try {
      this.flush();
    } catch (err) {
      // Kept queued and retried: the daemon stays up on a full disk and catches up when space returns.
      this.logger.error('writing events failed; retrying', { error: redactError(err), pending: this.pending.length });
      if (!this.closed) this.flushSoon(RETRY_FLUSH_MS);
    }
  }
}
