// One short command (`--version`, `login status`, `auth status`, a client's `mcp add`): its own process group (rule:
// own-process-group), output kept up to a bound, a deadline, and the group reaped afterwards. Never for a run that
// spends inference.
import type { Readable } from 'node:stream';
import { spawnGroup } from './process-group.ts';

const DEFAULT_CAPTURE_TIMEOUT_MS = 15_000;
const DEFAULT_CAPTURE_MAX_CHARS = 64 * 1024;
/** TERM → KILL grace when the deadline passes, and for reaping what the command left in its group. */
const CAPTURE_STOP_GRACE_MS = 1_000;

export interface CaptureOptions {
  /** The child's whole environment (default: the parent's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
  /** stdout (and stderr, when kept) is kept up to this many characters each. */
  maxChars?: number;
  /** Keep stderr too (a command whose failure is explained there); ignored by default. */
  stderr?: boolean;
}

export interface Captured {
  /** Exit code; null when the command was killed (deadline) or never started. */
  code: number | null;
  stdout: string;
  /** Only with `stderr: true`. */
  stderr?: string;
  /** Why the command could not be started (ENOENT, EACCES…). */
  error?: Error;
}

/** Collects a pipe's text up to `max` characters; `done` settles when the pipe closes. */
function collect(stream: Readable | null, max: number): { text: () => string; done: Promise<void> } {
  let text = '';
  if (!stream) return { text: () => text, done: Promise.resolve() };
  stream.setEncoding('utf8');
  stream.on('data', (d: string) => {
    if (text.length < max) text += d;
  });
  const done = new Promise<void>((resolve) => stream.once('close', resolve));
  return { text: () => text.slice(0, max), done };
}

/** Runs argv[0] with argv[1..] and collects its stdout (and stderr when asked). */
export async function captureCommand(argv: readonly string[], opts: CaptureOptions = {}): Promise<Captured> {
  const [file, ...args] = argv;
  if (!file) throw new TypeError('captureCommand needs a command');
  const group = spawnGroup(file, args, {
    env: opts.env,
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', opts.stderr ? 'pipe' : 'ignore'],
  });
  let error: Error | undefined;
  group.child.once('error', (err) => {
    error = err;
  });
  const max = opts.maxChars ?? DEFAULT_CAPTURE_MAX_CHARS;
  const stdout = collect(group.child.stdout, max);
  const stderr = opts.stderr ? collect(group.child.stderr, max) : undefined;
  const timer = setTimeout(() => void group.stop(CAPTURE_STOP_GRACE_MS), opts.timeoutMs ?? DEFAULT_CAPTURE_TIMEOUT_MS);
  const exit = await group.exited;
  clearTimeout(timer);
  await group.stop(CAPTURE_STOP_GRACE_MS);
  // The leader's exit can come before its last output is read; with the group gone the pipes close. A pipe held open
  // by a process that left the group is not waited for past the grace.
  let graceTimer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all([stdout.done, stderr?.done]),
    new Promise<void>((resolve) => {
      graceTimer = setTimeout(resolve, CAPTURE_STOP_GRACE_MS);
    }),
  ]);
  clearTimeout(graceTimer);
  return {
    code: exit.code,
    stdout: stdout.text(),
    ...(stderr ? { stderr: stderr.text() } : {}),
    ...(error ? { error } : {}),
  };
}
