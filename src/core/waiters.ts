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

  wake(key: string): void {
    const set = this.waiting.get(key);
    if (!set) return;
    for (const w of [...set]) w();
  }
}
