// A single-consumer async queue shared by the adapters: the harness connection pushes a turn's events as they arrive,
// the turn's iterator pulls; `end()` finishes the iteration once the queued items are drained.
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  push(...items: T[]): void {
    if (this.closed) return;
    this.items.push(...items);
    this.wake();
  }

  /** No more items after the ones already queued. */
  end(): void {
    this.closed = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length) {
        yield this.items.shift()!;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }
}
