// One round: one turn of an agent, from start to its single end. Every place that runs a turn (the hub engine, the
// provider job table, the Codex provider's blocking calls) goes through runRound, so the rules below exist once.
import type { AgentEvent } from '../agents/agent.ts';
import { Deadline, type DeadlineExceededError } from './deadlines.ts';
import { MAX_RESULT_BYTES } from './paging.ts';

export type EndEvent = Extract<AgentEvent, { kind: 'end' }>;
export type RoundEvent = Exclude<AgentEvent, { kind: 'end' | 'message' | 'preview' }>;
export type RoundState = 'succeeded' | 'failed' | 'cancelled';
/** Why a round was stopped before the agent ended it by itself. */
export type StopReason = 'cancel' | 'deadline' | 'too_large';

export interface RoundOptions {
  /** Idle deadline (0 = none): only this round's own events refresh it. */
  idleMs?: number;
  /** Hard deadline (0 = none): nothing extends it. */
  hardMs?: number;
  /** The caller's cancel: aborting it stops the round (a `cancel` stop). */
  signal?: AbortSignal;
  /**
   * Opens the session and starts the turn. `signal` is the round's own: aborted on the caller's cancel, an expired
   * deadline or an oversized result (its reason says which). `touch` refreshes the idle deadline for correlated
   * activity that yields no event (pass it on as the session's `onActivity`). Throwing here fails the round.
   */
  start(signal: AbortSignal, touch: () => void): AsyncIterable<AgentEvent> | Promise<AsyncIterable<AgentEvent>>;
  /** Told at once when a deadline expires (the round itself ends only once the turn wound down). */
  onDeadline?(err: DeadlineExceededError): void;
  /** Every event other than `message` and `end`, in order (the answer text is collected by the round). */
  onEvent?(ev: RoundEvent): void;
  /**
   * Live answer text as it streams in (not after the cap was exceeded): the turn's `preview` text once it sent any,
   * else its `message` text.
   */
  onMessage?(text: string): void;
  /** Runs once the turn is over, however it ended (closing the session); a throw here counts only without an end. */
  close?(): Promise<void>;
  /** Checked before each event: true stops reading (the caller already settled the round by other means). */
  abandoned?(): boolean;
  /** Names the agent in "… ended the turn without a result". */
  label?: string;
  /** Cap on the answer in UTF-8 bytes (rule: paged-results). */
  maxResultBytes?: number;
}

export interface RoundResult {
  state: RoundState;
  /** Why the round failed (unredacted: callers redact for their audience). */
  error?: string;
  /** The answer text collected from `message` events ('' once the cap was exceeded). */
  text: string;
  /** The agent's own end event, when it sent one. */
  end?: EndEvent;
  /** The first reason the round was stopped early, when it was. */
  stop?: StopReason;
  deadline?: DeadlineExceededError;
  /** What starting, reading or closing the turn threw, when it did (for callers that report it as itself). */
  thrown?: unknown;
}

/** Error text of a round whose answer went over the cap (rule: paged-results). */
function tooLargeError(maxBytes = MAX_RESULT_BYTES): string {
  return `output too large: the final result exceeded ${maxBytes} bytes and was discarded`;
}

/**
 * Runs one round. The contract, the same for every caller:
 * - Both deadlines start before the turn does. Each event of the turn (it carries only this round's events), and each
 *   `touch` for correlated activity without an event, refreshes the idle deadline; nothing extends the hard one. An
 *   expired deadline stops the round.
 * - `message` events form the answer; once it exceeds `maxResultBytes` it is dropped whole and the round is stopped.
 * - The first `end` event ends the turn; later events are never read. A turn that finishes without one, or throws,
 *   fails the round. `close` always runs, after the turn.
 * - The first stop wins: a caller's cancel is `cancelled`, a deadline or the cap is `failed` with its reason, whatever
 *   the agent reports afterwards. Without a stop, the agent's end decides (succeeded, failed with its error, cancelled).
 * The result is returned only after `close`; runRound never throws.
 */
export async function runRound(opts: RoundOptions): Promise<RoundResult> {
  const controller = new AbortController();
  const maxBytes = opts.maxResultBytes ?? MAX_RESULT_BYTES;
  let stop: StopReason | undefined;
  let deadlineError: DeadlineExceededError | undefined;
  const stopWith = (reason: StopReason, why: unknown) => {
    if (stop) return;
    stop = reason;
    controller.abort(why);
  };
  const onCancel = () => stopWith('cancel', opts.signal?.reason);
  if (opts.signal?.aborted) onCancel();
  else opts.signal?.addEventListener('abort', onCancel, { once: true });
  const deadline = new Deadline({
    idleMs: opts.idleMs,
    hardMs: opts.hardMs,
    onExpire: (err) => {
      if (stop) return;
      deadlineError = err;
      stopWith('deadline', err);
      opts.onDeadline?.(err);
    },
  });
  let over = false;
  // Late activity (after the turn) must not re-arm a cleared idle timer.
  const touch = () => {
    if (!over) deadline.touch();
  };

  let text = '';
  let bytes = 0;
  let previewBytes = 0;
  let previewed = false;
  let end: EndEvent | undefined;
  let thrown: unknown;
  try {
    const events = await opts.start(controller.signal, touch);
    for await (const ev of events) {
      if (opts.abandoned?.()) break;
      touch();
      if (ev.kind === 'end') {
        end = ev;
        break;
      }
      if (ev.kind === 'message') {
        if (stop === 'too_large') continue;
        bytes += Buffer.byteLength(ev.text);
        if (bytes > maxBytes) {
          text = '';
          stopWith('too_large', new Error('result too large'));
        } else {
          text += ev.text;
          if (!previewed) opts.onMessage?.(ev.text);
        }
        continue;
      }
      if (ev.kind === 'preview') {
        previewed = true;
        // Bounded like the answer it previews.
        previewBytes += Buffer.byteLength(ev.text);
        if (previewBytes <= maxBytes) opts.onMessage?.(ev.text);
        continue;
      }
      opts.onEvent?.(ev);
    }
  } catch (err) {
    thrown = err;
  } finally {
    over = true;
    deadline.clear();
    opts.signal?.removeEventListener('abort', onCancel);
    try {
      await opts.close?.();
    } catch (err) {
      thrown ??= err;
    }
  }

  const base = {
    text,
    ...(end ? { end } : {}),
    ...(stop ? { stop } : {}),
    ...(thrown !== undefined ? { thrown } : {}),
  };
  if (stop === 'cancel') return { ...base, state: 'cancelled' };
  if (stop === 'deadline' && deadlineError) {
    return { ...base, state: 'failed', error: deadlineError.message, deadline: deadlineError };
  }
  if (stop === 'too_large') return { ...base, state: 'failed', error: tooLargeError(maxBytes) };
  if (!end) {
    const error =
      thrown === undefined
        ? `${opts.label ?? 'the agent'} ended the turn without a result`
        : thrown instanceof Error
          ? thrown.message
          : String(thrown);
    return { ...base, state: 'failed', error };
  }
  if (end.outcome === 'succeeded') return { ...base, state: 'succeeded' };
  if (end.outcome === 'cancelled') return { ...base, state: 'cancelled' };
  return { ...base, state: 'failed', ...(end.error ? { error: end.error } : {}) };
}
