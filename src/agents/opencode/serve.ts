// Starts and stops an `opencode serve` that baton owns (rules: opencode-server, isolated-homes): bound to 127.0.0.1 on
// a port the OS picks, protected by a random password, in its own process group.
import { randomBytes } from 'node:crypto';
import { readLines } from '../../lib/jsonl.ts';
import { pickFreeLoopbackPort } from '../../lib/net.ts';
import type { ChildGroup } from '../../lib/process-group.ts';
import { redact, registerSecret } from '../../lib/redact.ts';
import { type ExecutionTarget, UNFENCED } from '../targets/target.ts';
import { OpenCodeClient } from './client.ts';

/** How long `opencode serve` may take to print its address and answer a health check. */
export const OPENCODE_START_TIMEOUT_MS = 60_000;
/** A health request sent while opencode boots can hang; each probe is bounded this tightly. */
const HEALTH_PROBE_TIMEOUT_MS = 2_000;
const LOG_TAIL_CHARS = 16 * 1024;
const LISTENING = /opencode server listening on (http:\/\/[^\s]+)/;

export interface StartedOpenCodeServer {
  /** Origin with a trailing slash, e.g. http://127.0.0.1:41234/ */
  url: string;
  username: string;
  password: string;
  version: string;
  group: ChildGroup;
  client: OpenCodeClient;
  /** The last few KiB opencode wrote to stdout/stderr (already redacted), for diagnostics. */
  logTail(): string;
  stop(): Promise<void>;
}

export interface StartOpenCodeServerOptions {
  binary: string;
  /** The child's whole environment (an isolated HOME/XDG set); the password is added here. */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  onProcessGroup?: (pgid: number) => void;
  /** Ask opencode to log to stderr (kept in logTail()). */
  printLogs?: boolean;
  /** Where opencode runs (default: unfenced on this machine), and what it must write there (its private home). */
  target?: ExecutionTarget;
  keep?: readonly string[];
}

/** Attempts when the port picked for opencode was taken before it could bind it. */
const START_ATTEMPTS = 3;

export async function startOpenCodeServer(opts: StartOpenCodeServerOptions): Promise<StartedOpenCodeServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
    try {
      return await startOnce(opts, await pickFreeLoopbackPort());
    } catch (err) {
      lastError = err;
      if (opts.signal?.aborted || !(err instanceof EarlyExitError)) break;
    }
  }
  throw lastError;
}

class EarlyExitError extends Error {}

// `--port 0` makes opencode fall back to its fixed default port (4096), which collides with any other server, so the
// OS picks a free port (pickFreeLoopbackPort) and opencode binds it a moment later; a lost race shows as an early exit
// and is retried.

async function startOnce(opts: StartOpenCodeServerOptions, port: number): Promise<StartedOpenCodeServer> {
  const username = 'opencode';
  const password = randomBytes(24).toString('base64url');
  registerSecret(password);
  const group = (opts.target ?? UNFENCED).spawn(
    opts.binary,
    [...(opts.printLogs ? ['--print-logs'] : []), 'serve', '--hostname', '127.0.0.1', '--port', String(port)],
    {
      cwd: opts.cwd,
      env: { ...opts.env, OPENCODE_SERVER_USERNAME: username, OPENCODE_SERVER_PASSWORD: password },
      stdio: ['ignore', 'pipe', 'pipe'],
      keep: opts.keep,
    },
  );
  if (group.pgid > 0) opts.onProcessGroup?.(group.pgid);
  // Both pipes are always drained (a full pipe would stall opencode); only a bounded tail is kept.
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString('utf8')).slice(-LOG_TAIL_CHARS);
  };
  group.child.stdout?.on('data', keep);
  group.child.stderr?.on('data', keep);
  const stop = async () => {
    await group.stop(3_000);
  };
  try {
    const url = await waitForAddress(group, opts.timeoutMs ?? OPENCODE_START_TIMEOUT_MS, opts.signal);
    const client = new OpenCodeClient({ baseUrl: url, username, password });
    const version = await waitHealthy(client, group, opts.timeoutMs ?? OPENCODE_START_TIMEOUT_MS, opts.signal);
    return { url, username, password, version, group, client, stop, logTail: () => redact(tail) };
  } catch (err) {
    await stop();
    throw err;
  }
}

function waitForAddress(group: ChildGroup, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderrTail = '';
    const done = (err?: Error, url?: string) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      stopStdout();
      if (err) reject(err);
      else resolve(url!);
    };
    const timer = setTimeout(
      () => done(new Error(`opencode serve did not report its address within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
    const onAbort = () => done(new Error('starting opencode serve was cancelled'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const stopStdout = readLines(group.child.stdout!, {
      maxLineBytes: 64 * 1024,
      onLine: (line) => {
        const m = LISTENING.exec(line.toString('utf8'));
        if (m) done(undefined, new URL(m[1]!).origin.concat('/'));
      },
      onError: () => {},
    });
    group.child.stderr?.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString('utf8')).slice(-2_000);
    });
    group.exited.then((exit) =>
      done(
        new EarlyExitError(
          `opencode serve exited before it was ready (code ${exit.code ?? exit.signal})${stderrTail ? `: ${stderrTail.trim()}` : ''}`,
        ),
      ),
    );
  });
}

async function waitHealthy(
  client: OpenCodeClient,
  group: ChildGroup,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<string> {
  const until = Date.now() + timeoutMs;
  let exited = false;
  group.exited.then(() => {
    exited = true;
  });
  let lastError = '';
  // No readiness event exists beyond the address line: a bounded poll on the health route is the observable condition.
  for (let delay = 50; Date.now() < until; delay = Math.min(delay * 2, 500)) {
    if (signal?.aborted) throw new Error('starting opencode serve was cancelled');
    if (exited) throw new Error('opencode serve exited before it was healthy');
    try {
      const h = await client.health({ signal, timeoutMs: HEALTH_PROBE_TIMEOUT_MS });
      if (h.healthy) return h.version;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, delay));
  }
  throw new Error(
    `opencode serve was not healthy within ${Math.round(timeoutMs / 1000)} s${lastError ? `: ${lastError}` : ''}`,
  );
}
