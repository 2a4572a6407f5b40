// One retention rule for the in-memory tables of background work (the provider job table, attach dispatches): at most
// `maxActive` records still working, at most `maxKept` records in all; a finished record stays readable for
// `retentionMs`, and the one that finished first is evicted earlier when new work needs its place. Working records are
// never evicted.

export interface RetentionLimits {
  /** Records still working at once; new work beyond it is refused. Default: `maxKept`. */
  maxActive?: number;
  /** Records kept in all, finished ones included. */
  maxKept: number;
  /** How long a finished record stays readable. */
  retentionMs: number;
}

export interface RetentionOptions<R> extends RetentionLimits {
  /** When the record finished (ms, from `clock`), or undefined while it is still working. */
  finishedAt(record: R): number | undefined;
  /** Time source (tests move it forward instead of sleeping). */
  clock?: () => number;
}

/** Why new work was not admitted. */
export type Refusal = 'too_many_active' | 'full';

export class RetentionTable<R> {
  private readonly records = new Map<string, R>();
  private readonly opts: RetentionOptions<R>;
  readonly now: () => number;

  constructor(opts: RetentionOptions<R>) {
    this.opts = opts;
    this.now = opts.clock ?? Date.now;
  }

  private get maxActive(): number {
    return this.opts.maxActive ?? this.opts.maxKept;
  }

  /** Records still working (expired ones cannot be among them). */
  get activeCount(): number {
    let n = 0;
    for (const r of this.records.values()) if (this.opts.finishedAt(r) === undefined) n++;
    return n;
  }

  /** Records kept, after dropping expired ones. */
  get size(): number {
    this.prune();
    return this.records.size;
  }

  /**
   * Makes room for one more record: drops expired ones, refuses when too many are working, and evicts the record that
   * finished first when the table is full. Returns why it refused, or undefined when `add` may follow.
   */
  admit(): Refusal | undefined {
    this.prune();
    if (this.activeCount >= this.maxActive) return 'too_many_active';
    if (this.records.size >= this.opts.maxKept && !this.evictOldestFinished()) return 'full';
    return undefined;
  }

  add(id: string, record: R): void {
    this.records.set(id, record);
  }

  get(id: string): R | undefined {
    this.prune();
    return this.records.get(id);
  }

  /** Every kept record, in insertion order, after dropping expired ones. */
  values(): R[] {
    this.prune();
    return [...this.records.values()];
  }

  /** Forgets every record; returns their ids. */
  clear(): string[] {
    const ids = [...this.records.keys()];
    this.records.clear();
    return ids;
  }

  private prune(): void {
    const now = this.now();
    for (const [id, r] of this.records) {
      const finished = this.opts.finishedAt(r);
      if (finished !== undefined && finished + this.opts.retentionMs <= now) this.records.delete(id);
    }
  }

  private evictOldestFinished(): boolean {
    let oldest: { id: string; at: number } | undefined;
    for (const [id, r] of this.records) {
      const at = this.opts.finishedAt(r);
      if (at !== undefined && (!oldest || at < oldest.at)) oldest = { id, at };
    }
    if (!oldest) return false;
    this.records.delete(oldest.id);
    return true;
  }
}
