// Deadlines (rule: two-deadlines): an idle deadline that only correlated activity refreshes, and a hard wall-clock
// deadline that nothing extends. Operators set both at server start; callers may only shorten them.

export type DeadlineKind = 'idle' | 'hard';

export class DeadlineExceededError extends Error {
  readonly kind: DeadlineKind;
  readonly ms: number;
  constructor(kind: DeadlineKind, ms: number) {
    super(
      kind === 'idle'
        ? `no activity from the agent for ${Math.round(ms / 1000)} s (idle deadline)`
        : `the run exceeded its ${Math.round(ms / 1000)} s hard deadline`,
    );
    this.name = 'DeadlineExceededError';
    this.kind = kind;
    this.ms = ms;
  }
}

export interface DeadlineOptions {
  /** 0 or undefined = no idle deadline. */
  idleMs?: number;
  /** 0 or undefined = no hard deadline. */
  hardMs?: number;
  onExpire: (err: DeadlineExceededError) => void;
}

export class Deadline {
  private idleTimer: NodeJS.Timeout | undefined;
  private hardTimer: NodeJS.Timeout | undefined;
  /** Expired or cleared: nothing arms a timer any more. */
  private done = false;
  private readonly opts: DeadlineOptions;
  readonly startedAt = Date.now();
  lastActivityAt = Date.now();

  constructor(opts: DeadlineOptions) {
    this.opts = opts;
    if (opts.hardMs && opts.hardMs > 0) {
      this.hardTimer = setTimeout(() => this.expire('hard', opts.hardMs!), opts.hardMs);
    }
    this.armIdle();
  }

  /** Call only for activity correlated to this call/run. Never extends the hard deadline. */
  touch(): void {
    if (this.done) return;
    this.lastActivityAt = Date.now();
    this.armIdle();
  }

  /** Ends both deadlines; activity reported after it (an agent's stream still draining) arms nothing. */
  clear(): void {
    this.done = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.hardTimer);
  }

  private armIdle(): void {
    const ms = this.opts.idleMs;
    if (!ms || ms <= 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.expire('idle', ms), ms);
  }

  private expire(kind: DeadlineKind, ms: number): void {
    if (this.done) return;
    this.clear();
    this.opts.onExpire(new DeadlineExceededError(kind, ms));
  }
}

/** A caller may shorten the operator's bound but never lengthen it. */
export function callerBound(operatorMs: number, callerMs: number | undefined): number {
  if (callerMs === undefined || callerMs <= 0) return operatorMs;
  return operatorMs > 0 ? Math.min(operatorMs, callerMs) : callerMs;
}
