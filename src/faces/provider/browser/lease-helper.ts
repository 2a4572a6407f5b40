// The operator's lease helper (rule: leased-browser): baton only runs it with fixed argv forms and reads its inert
// key=value record. It owns the remote box, the Chromium on it and the loopback tunnel; baton never starts a browser
// itself.
import type { ChildGroup } from '../../../lib/process-group.ts';
import { spawnGroup } from '../../../lib/process-group.ts';

/** Exit statuses with a contract meaning (sysexits.h names). */
export const HELPER_EXIT_UNAVAILABLE = 69;
export const HELPER_EXIT_SOFTWARE = 70;
export const HELPER_EXIT_TEMPFAIL = 75;

/** Bounds on one helper run. */
export const HELPER_OUTPUT_MAX_BYTES = 64 * 1024;
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 600_000;
export const STATUS_TIMEOUT_MS = 30_000;
export const IDLE_RELEASE_BOUND_MS = 60_000;
export const SHUTDOWN_RELEASE_BOUND_MS = 15_000;
/** Grace between TERM and KILL when a helper overruns its bound. */
const HELPER_STOP_GRACE_MS = 2_000;
/** A helper that exited may have left a grandchild holding its pipes; don't wait for that forever. */
const OUTPUT_DRAIN_AFTER_EXIT_MS = 500;
const GENERATION_MAX_CHARS = 256;

export interface HelperRun {
  /** Exit code; null when killed by a signal (including baton's own timeout or abort). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** Output went past HELPER_OUTPUT_MAX_BYTES; the rest was discarded. */
  truncated: boolean;
}

export interface HelperRunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called with the helper's process group while it runs, so shutdown can reap it. */
  track?: (group: ChildGroup, running: boolean) => void;
}

/** Parses `--browser_lease_command`: a JSON array of strings (argv), never a shell string. */
export function parseLeaseCommand(text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(
      `--browser-lease-command must be a JSON argv array such as '["bin/box","--browser"]', got: ${text}`,
    );
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((a) => typeof a === 'string' && a.length > 0)) {
    throw new Error('--browser-lease-command must be a non-empty JSON array of non-empty strings');
  }
  return parsed as string[];
}

export function runHelper(
  command: readonly string[],
  args: readonly string[],
  opts: HelperRunOptions,
): Promise<HelperRun> {
  const [file, ...fixed] = command;
  const group = spawnGroup(file!, [...fixed, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  opts.track?.(group, true);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    if (size + chunk.length > HELPER_OUTPUT_MAX_BYTES) {
      truncated = true;
      chunk = chunk.subarray(0, Math.max(0, HELPER_OUTPUT_MAX_BYTES - size));
    }
    size += chunk.length;
    if (chunk.length) into.push(chunk);
  };
  group.child.stdout?.on('data', collect(out));
  group.child.stderr?.on('data', collect(err));
  const closed = new Promise<void>((resolve) => group.child.once('close', () => resolve()));
  let spawnError: Error | undefined;
  group.child.once('error', (e) => {
    spawnError = e;
  });

  let timedOut = false;
  let aborted = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void group.stop(HELPER_STOP_GRACE_MS);
  }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    void group.stop(HELPER_STOP_GRACE_MS);
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });

  return (async () => {
    try {
      const exit = await group.exited;
      let drainTimer: NodeJS.Timeout | undefined;
      await Promise.race([
        closed,
        new Promise<void>((r) => {
          drainTimer = setTimeout(r, OUTPUT_DRAIN_AFTER_EXIT_MS);
        }),
      ]);
      clearTimeout(drainTimer);
      let stderr = Buffer.concat(err).toString('utf8');
      if (spawnError)
        stderr = `${stderr}${stderr ? '\n' : ''}cannot run the lease helper ${file}: ${spawnError.message}`;
      return {
        code: spawnError && exit.code === null && exit.signal === null ? -1 : exit.code,
        signal: exit.signal,
        stdout: Buffer.concat(out),
        stderr,
        timedOut,
        aborted,
        truncated,
      };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      opts.track?.(group, false);
    }
  })();
}

export interface LeaseRecord {
  generation: string;
  localCdpPort: number;
  browserUrl: string;
}

export class LeaseRecordError extends Error {
  constructor(reason: string) {
    super(`the lease helper printed an invalid acquire record (${reason}); refusing the lease`);
    this.name = 'LeaseRecordError';
  }
}

const RECORD_KEYS = ['record_version', 'state', 'generation', 'local_cdp_port', 'browser_url'] as const;

/**
 * Reads acquire's stdout as inert data: exactly the five known keys, once each, UTF-8, nothing else. The port must be
 * the one baton handed over and the URL must be plain loopback on it, so a helper cannot point baton elsewhere.
 */
export function parseLeaseRecord(stdout: Buffer, expectedPort: number): LeaseRecord {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(stdout);
  } catch {
    throw new LeaseRecordError('not valid UTF-8');
  }
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const values = new Map<string, string>();
  for (const rawLine of lines) {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new LeaseRecordError(`a line is not key=value: ${JSON.stringify(line.slice(0, 80))}`);
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (!(RECORD_KEYS as readonly string[]).includes(key)) {
      throw new LeaseRecordError(`unknown key ${JSON.stringify(key.slice(0, 80))}`);
    }
    if (values.has(key)) throw new LeaseRecordError(`duplicate key ${key}`);
    values.set(key, value);
  }
  for (const key of RECORD_KEYS) if (!values.has(key)) throw new LeaseRecordError(`missing ${key}`);
  if (values.get('record_version') !== '1') throw new LeaseRecordError('record_version is not 1');
  if (values.get('state') !== 'ready') throw new LeaseRecordError('state is not ready');
  const generation = values.get('generation')!;
  if (!new RegExp(`^[\\x21-\\x7e]{1,${GENERATION_MAX_CHARS}}$`).test(generation)) {
    throw new LeaseRecordError(`generation must be 1-${GENERATION_MAX_CHARS} printable ASCII characters`);
  }
  if (values.get('local_cdp_port') !== String(expectedPort)) {
    throw new LeaseRecordError(`local_cdp_port is not the port baton handed over (${expectedPort})`);
  }
  const browserUrl = values.get('browser_url')!;
  if (browserUrl !== `http://127.0.0.1:${expectedPort}`) {
    throw new LeaseRecordError(`browser_url is not http://127.0.0.1:${expectedPort}`);
  }
  return { generation, localCdpPort: expectedPort, browserUrl };
}
