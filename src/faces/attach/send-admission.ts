// Admission of Codex sends (rule: send-admission): at most 100 queued or active sends per connection and 10 per thread,
// and sends to one thread run one at a time, in arrival order, so every notification belongs to exactly one of our
// turns.

export const MAX_SENDS_PER_CONNECTION = 100;
export const MAX_SENDS_PER_THREAD = 10;

export class SendRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SendRefusedError';
  }
}

export interface ThreadTicket {
  /** Resolves when this send may start on its thread; rejects if `signal` aborts first (the send is then dropped). */
  ready(signal: AbortSignal): Promise<void>;
  /** Frees the thread for the next send and the admission slot; safe to call twice. */
  release(): void;
}

export class SendAdmission {
  private total = 0;
  private readonly perThread = new Map<string, { count: number; tail: Promise<void> }>();

  /** Admits a send or throws at once, before anything is delivered. */
  admit(threadId: string): ThreadTicket {
    const thread = this.perThread.get(threadId) ?? { count: 0, tail: Promise.resolve() };
    if (this.total >= MAX_SENDS_PER_CONNECTION)
      throw new SendRefusedError(
        `this connection already has ${MAX_SENDS_PER_CONNECTION} queued or active sends; nothing was sent. Wait for some to finish`,
      );
    if (thread.count >= MAX_SENDS_PER_THREAD)
      throw new SendRefusedError(
        `chat ${threadId} already has ${MAX_SENDS_PER_THREAD} queued or active sends; nothing was sent. Wait for some to finish`,
      );
    this.total++;
    thread.count++;
    this.perThread.set(threadId, thread);
    const previous = thread.tail;
    let unlock!: () => void;
    const mine = new Promise<void>((r) => {
      unlock = r;
    });
    thread.tail = previous.then(() => mine);
    let released = false;
    return {
      ready: (signal) =>
        new Promise<void>((resolve, reject) => {
          if (signal.aborted) return reject(signal.reason);
          const onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
          previous.then(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          });
        }),
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        thread.count--;
        if (thread.count === 0 && this.perThread.get(threadId) === thread) this.perThread.delete(threadId);
        unlock();
      },
    };
  }

  get active(): number {
    return this.total;
  }
}
