// One short informational command (`--version`, `login status`, `auth status`): its own process group (AG-8), stdout
// kept up to a bound, a deadline, and the group reaped afterwards. Never for a run that spends inference.
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
  /** stdout is kept up to this many characters. */
  maxChars?: number;
}

export interface Captured {
  /** Exit code; null when the command was killed (deadline) or never started. */
  code: number | null;
  stdout: string;
  /** Why the command could not be started (ENOENT, EACCES…). */
  error?: Error;
}

/** Runs argv[0] with argv[1..] and collects its stdout; stderr is ignored. */
export async function captureCommand(argv: readonly string[], opts: CaptureOptions = {}): Promise<Captured> {
  const [file, ...args] = argv;
  if (!file) throw new TypeError('captureCommand needs a command');
  const group = spawnGroup(file, args, { env: opts.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'ignore'] });
  let error: Error | undefined;
  group.child.once('error', (err) => {
    error = err;
  });
  const max = opts.maxChars ?? DEFAULT_CAPTURE_MAX_CHARS;
  let stdout = '';
  group.child.stdout?.setEncoding('utf8');
  group.child.stdout?.on('data', (d: string) => {
    if (stdout.length < max) stdout += d;
  });
  const timer = setTimeout(() => void group.stop(CAPTURE_STOP_GRACE_MS), opts.timeoutMs ?? DEFAULT_CAPTURE_TIMEOUT_MS);
  const exit = await group.exited;
  clearTimeout(timer);
  await group.stop(CAPTURE_STOP_GRACE_MS);
  return { code: exit.code, stdout: stdout.slice(0, max), ...(error ? { error } : {}) };
}
