// One run of an agent CLI as a child process group (rule: own-process-group): prompt on stdin, bounded JSON lines on
// stdout, a bounded stderr tail for diagnostics, and cancellation as SIGINT to the group, a grace, then TERM/KILL
// (rule: cancel-then-stop). Shared by the one-shot adapters (Claude Code, Gemini CLI).
import { readJsonLines } from '../lib/jsonl.ts';
import { type ChildGroup, DEFAULT_STOP_GRACE_MS, type GroupExit } from '../lib/process-group.ts';
import { type ExecutionTarget, UNFENCED } from './targets/target.ts';

/** How long a CLI gets to stop on its own after SIGINT before its group is stopped. */
export const DEFAULT_INTERRUPT_GRACE_MS = 3_000;
/** Diagnostics kept from stderr (the tail), in bytes. */
const STDERR_TAIL_BYTES = 8 * 1024;

export interface CliRunOptions {
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed. */
  stdin?: string;
  signal?: AbortSignal;
  onProcessGroup?: (pgid: number) => void;
  /** Each JSON line from stdout, in order. */
  onJson?: (msg: unknown) => void;
  /** Instead of JSON lines: keep stdout as text up to this many bytes (more is a stream error). */
  collectStdoutBytes?: number;
  maxLineBytes?: number;
  interruptGraceMs?: number;
  stopGraceMs?: number;
  /** Where the CLI runs (default: unfenced on this machine). */
  target?: ExecutionTarget;
  /** Paths it must write wherever the target fences (its private home). */
  keep?: readonly string[];
}

export interface CliOutcome {
  exit: GroupExit;
  /** The run was aborted through `signal`. */
  aborted: boolean;
  /** After an abort: the CLI exited within the interrupt grace on its own. */
  acknowledged: boolean;
  /** The binary could not be started (ENOENT, EACCES…). */
  spawnError?: Error;
  /** stdout broke the framing rules (an oversized line): the output is not trustworthy. */
  streamError?: Error;
  /** Lines on stdout that were not JSON (counted, never echoed). */
  malformedLines: number;
  stderrTail: string;
  /** stdout as text, when `collectStdoutBytes` was set. */
  stdout: string;
}

export interface CliRun {
  readonly group: ChildGroup;
  readonly done: Promise<CliOutcome>;
}

export function runCli(opts: CliRunOptions): CliRun {
  const group = (opts.target ?? UNFENCED).spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    keep: opts.keep,
  });
  const done = (async (): Promise<CliOutcome> => {
    let spawnError: Error | undefined;
    let streamError: Error | undefined;
    let malformedLines = 0;
    let stderrTail = '';
    const stdoutChunks: Buffer[] = [];
    let stdoutBytes = 0;
    let aborted = false;
    let acknowledged = false;
    group.child.once('error', (err) => {
      spawnError ??= err;
    });
    if (group.pgid > 0) opts.onProcessGroup?.(group.pgid);
    group.child.stdin?.on('error', () => {});
    group.child.stdin?.end(opts.stdin ?? '');
    group.child.stderr?.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    const stdoutDone = new Promise<void>((resolve) => {
      const stdout = group.child.stdout;
      if (!stdout) return resolve();
      stdout.once('close', () => resolve());
      const limit = opts.collectStdoutBytes;
      if (limit !== undefined) {
        const onData = (d: Buffer) => {
          stdoutBytes += d.length;
          if (stdoutBytes > limit) {
            stdout.off('data', onData);
            stdoutChunks.length = 0;
            streamError = new Error(`output exceeded ${limit} bytes`);
            void group.stop(opts.stopGraceMs);
            resolve();
            return;
          }
          stdoutChunks.push(d);
        };
        stdout.on('data', onData);
        stdout.once('end', () => resolve());
        return;
      }
      readJsonLines(stdout, {
        maxLineBytes: opts.maxLineBytes,
        onMessage: (msg) => opts.onJson?.(msg),
        onMalformed: () => {
          malformedLines++;
        },
        onError: (err) => {
          streamError = err;
          // An untrustworthy stream: stop the run rather than buffer without bound.
          void group.stop(opts.stopGraceMs);
          resolve();
        },
        onEnd: () => resolve(),
      });
    });
    let graceTimer: NodeJS.Timeout | undefined;
    let graceExpired = false;
    const onAbort = () => {
      if (aborted) return;
      aborted = true;
      group.signal('SIGINT');
      graceTimer = setTimeout(() => {
        graceExpired = true;
        void group.stop(opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
      }, opts.interruptGraceMs ?? DEFAULT_INTERRUPT_GRACE_MS);
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
    const exit = await group.exited;
    // Still inside the grace when the leader exited: the CLI honoured the interrupt.
    if (aborted) acknowledged = !graceExpired;
    clearTimeout(graceTimer);
    opts.signal?.removeEventListener('abort', onAbort);
    await stdoutDone;
    // Reap whatever the CLI left in its group (tool subprocesses).
    await group.stop(opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
    const stdout = Buffer.concat(stdoutChunks).toString('utf8');
    return { exit, aborted, acknowledged, spawnError, streamError, malformedLines, stderrTail, stdout };
  })();
  return { group, done };
}
