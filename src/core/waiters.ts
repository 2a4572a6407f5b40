// Long-poll support (rule: event-cursor): readers wait on a key; appends and lifecycle changes wake them at once. No
// polling loops.

export class Waiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /**
   * Resolves true when `wake(key)` is called, false after `timeoutMs` or when `signal` aborts.
   * Check the condition you wait for *before* calling this, in the same tick, to avoid missing a wake.
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
        signal?.removeEventListener('abort', onAbort);
        set.delete(wake);
        if (set.size === 0 && this.waiting.get(key) === set) this.waiting.delete(key);
        resolve(woken);
      };
      const wake = () => done(true);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(wake);
    });
  }

  wake(key: string): void {
    const set = this.waiting.get(key);
    if (!set) return;
    for (const w of [...set]) w();
  }
}
