// Long-poll support (rule: event-cursor): readers wait on a key. A lifecycle change wakes them at once (wake); other
// news (nudge) wakes each waiter a short linger after the first news it saw, so news that comes together with or just
// before a lifecycle change is answered in one reply instead of one per event. No polling loops.

/** How long a waiter lingers after non-lifecycle news before it is woken (rule: event-cursor). */
export const NEWS_LINGER_MS = 1_000;

interface Waiter {
  wake(): void;
  /** Set once news arrived for this waiter; it wakes when the timer fires or a lifecycle change comes first. */
  linger?: NodeJS.Timeout;
}

export class Waiters {
  private readonly waiting = new Map<string, Set<Waiter>>();
  private readonly lingerMs: number;

  constructor(lingerMs = NEWS_LINGER_MS) {
    this.lingerMs = lingerMs;
  }

  /**
   * Resolves true when the key is woken (at once by `wake`, or a linger after `nudge`), false after `timeoutMs` or when
   * `signal` aborts. Check the condition you wait for *before* calling this, in the same tick, to avoid missing a wake.
   */
  wait(key: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (timeoutMs <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      let set = this.waiting.get(key);
      if (!set) {
        set = new Set();
        this.waiting.set(key, set);
      }
      const done = (woken: boolean) => {
        clearTimeout(timer);
        clearTimeout(waiter.linger);
        signal?.removeEventListener('abort', onAbort);
        set.delete(waiter);
        if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
        resolve(woken);
      };
      const waiter: Waiter = { wake: () => done(true) };
      const onAbort = () => done(false);
      // News in the waiter's last moments: its own bound still ends it (the reader then finds the news anyway).
      const timer = setTimeout(() => done(false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  /**
   * Like wait(), for several keys: resolves true when any of them is woken (agent_wait over several tasks). The same
   * check-first rule applies.
   */
  waitAny(keys: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (keys.length === 1) return this.wait(keys[0]!, timeoutMs, signal);
    const controller = new AbortController();
    const stop = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
    // Each key gets its own waiter on a shared signal: the first to resolve stops the others.
    return Promise.race(keys.map((k) => this.wait(k, timeoutMs, stop))).finally(() => controller.abort());
  }

  /** A lifecycle change: every waiter on the key wakes now. */
  wake(key: string): void {
    const set = this.waiting.get(key);
    if (!set) return;
    for (const w of [...set]) w.wake();
  }

  /**
   * Other news: each waiter on the key wakes `lingerMs` after the first news it was told of, or at once when a
   * lifecycle change comes first. Only waiters present now linger: one that starts later finds the news itself.
   */
  nudge(key: string): void {
    const set = this.waiting.get(key);
    if (!set) return;
    for (const w of set) w.linger ??= setTimeout(w.wake, this.lingerMs);
  }
}
