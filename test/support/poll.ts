// Bounded waits for tests. `until` polls an observable condition that has no event to await (a file a child writes,
// a process table, a counter behind MCP); `WaitBudget` bounds a long-poll loop (agent_wait, engine.wait) that would
// otherwise follow a stuck task forever. Both fail with a message naming what was awaited, never by the test timeout.
import { readdirSync, readFileSync } from 'node:fs';

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_INTERVAL_MS = 25;

type Falsy = undefined | null | false | 0 | '';

export interface UntilOptions {
  /** What is awaited, for the failure message ("the socket to close"). */
  what: string;
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Calls `probe` until its value passes `ok` (default: is truthy) and returns that value; throws
 * `timed out after …ms waiting for <what>` once `timeoutMs` has passed. The probe always runs at least once more
 * after the deadline check, so a slow probe cannot lose a last chance.
 */
export function until<T>(probe: () => T | Promise<T>, opts: UntilOptions & { ok: (value: T) => boolean }): Promise<T>;
export function until<T>(probe: () => T | Promise<T>, opts: UntilOptions): Promise<Exclude<T, Falsy>>;
export async function until<T>(
  probe: () => T | Promise<T>,
  opts: UntilOptions & { ok?: (value: T) => boolean },
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const ok = opts.ok ?? ((value: T) => Boolean(value));
  const end = Date.now() + timeoutMs;
  for (;;) {
    const expired = Date.now() > end;
    const value = await probe();
    if (ok(value)) return value;
    if (expired) throw new Error(`timed out after ${timeoutMs}ms waiting for ${opts.what}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? DEFAULT_INTERVAL_MS));
  }
}

/** A budget for a loop of long-polls: each poll asks `left(cap)` for its own timeout. */
export class WaitBudget {
  private readonly end: number;
  private readonly what: string;
  private readonly timeoutMs: number;

  constructor(what: string, timeoutMs = 180_000) {
    this.what = what;
    this.timeoutMs = timeoutMs;
    this.end = Date.now() + timeoutMs;
  }

  /** Milliseconds left, at most `cap`; throws naming what was awaited once none are left. */
  left(cap = Number.POSITIVE_INFINITY): number {
    const left = this.end - Date.now();
    if (left <= 0) throw new Error(`timed out after ${this.timeoutMs}ms waiting for ${this.what}`);
    return Math.min(cap, left);
  }
}

/** Whether process `pid` still exists (signal 0 probes without sending anything). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The live processes (pid and command line, as seen from here) whose environment holds every `env` pair: how a test
 * finds an agent's processes whatever pid namespace they run in (a fenced agent reports its own view's pids).
 */
export function processesWithEnvironment(env: Record<string, string>): { pid: number; cmdline: string }[] {
  const wanted = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const vars = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (!wanted.every((w) => vars.includes(w))) continue;
      found.push({ pid: Number(entry), cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ') });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
