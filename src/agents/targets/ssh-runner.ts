// One long-lived remote shell per ssh target for baton's own short commands (the cwd checks, the git snapshots and
// worktrees, the group stops): a session on the target's shared connection whose /bin/sh reads one command after
// another from stdin. A command sent to it costs a pipe round trip, not a new session and a start of the remote
// user's login shell (which reads its rc files every time: 180 ms on a machine whose .bashrc starts pyenv). Each
// command's output ends at a marker with a random token drawn for that command, which no output can guess.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { signalGroup } from '../../lib/process-group.ts';

/** A word the remote shell reads back as exactly `s`. */
export const shellWord = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;

export interface RunResult {
  code: number;
  stdout: Buffer;
}

interface Pending {
  script: string;
  args: readonly string[];
  timeoutMs: number;
  resolve: (r: RunResult) => void;
  reject: (err: Error) => void;
}

export interface RemoteShellOptions {
  /** The ssh command line up to the remote command. */
  sshArgs: () => string[];
  env: Record<string, string>;
  /** The error a command fails with when the connection cannot be had or drops (ssh's last stderr line). */
  failure: (why: string) => Error;
}

export class RemoteShell {
  private readonly opts: RemoteShellOptions;
  private child: ChildProcess | undefined;
  private readonly queue: Pending[] = [];
  private current: { p: Pending; token: Buffer; timer: NodeJS.Timeout } | undefined;
  private out = Buffer.alloc(0);
  private stderr = '';

  constructor(opts: RemoteShellOptions) {
    this.opts = opts;
  }

  /** Runs `script` under the host's /bin/sh with `args` as $1…, stdin empty, stderr dropped: its exit and stdout. */
  run(script: string, args: readonly string[], timeoutMs: number): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ script, args, timeoutMs, resolve, reject });
      this.next();
    });
  }

  /** Ends the shell (its stdin closes, so it exits and its session with it). */
  close(): void {
    const child = this.child;
    this.child = undefined;
    child?.stdin?.end();
  }

  private start(): ChildProcess {
    this.stderr = '';
    this.out = Buffer.alloc(0);
    const child = spawn('ssh', [...this.opts.sshArgs(), 'exec /bin/sh -s'], {
      env: this.opts.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (this.child === child) this.onData(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2048);
    });
    child.stdin!.on('error', () => {});
    const gone = () => {
      if (this.child === child) this.child = undefined;
      const why =
        this.stderr
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .at(-1) ?? 'the connection closed';
      this.fail(this.opts.failure(why));
    };
    child.once('close', gone);
    child.once('error', (err) => {
      if (this.child === child) this.child = undefined;
      this.fail(this.opts.failure(err.message));
    });
    this.child = child;
    return child;
  }

  private fail(err: Error): void {
    const c = this.current;
    if (!c) return;
    clearTimeout(c.timer);
    this.current = undefined;
    c.p.reject(err);
    this.next();
  }

  private next(): void {
    if (this.current) return;
    const p = this.queue.shift();
    if (!p) {
      this.idle(true);
      return;
    }
    const child = this.child ?? this.start();
    this.idle(false);
    const hex = randomBytes(16).toString('hex');
    const token = Buffer.from(`\n${hex} `);
    const timer = setTimeout(() => {
      // A command that hangs takes its shell with it; the next command starts a new one.
      if (this.child === child) this.child = undefined;
      if (child.pid) signalGroup(child.pid, 'SIGKILL');
      this.fail(this.opts.failure('timed out'));
    }, p.timeoutMs);
    this.current = { p, token, timer };
    const command = ['/bin/sh', '-c', shellWord(p.script), 'sh', ...p.args.map(shellWord)].join(' ');
    child.stdin!.write(`${command} </dev/null 2>/dev/null; printf '\\n%s %d\\n' ${hex} "$?"\n`);
  }

  private onData(chunk: Buffer): void {
    this.out = Buffer.concat([this.out, chunk]);
    const c = this.current;
    if (!c) return;
    const at = this.out.indexOf(c.token);
    if (at === -1) return;
    const end = this.out.indexOf(10, at + c.token.length);
    if (end === -1) return;
    const code = Number(this.out.subarray(at + c.token.length, end).toString('latin1'));
    const stdout = this.out.subarray(0, at);
    this.out = this.out.subarray(end + 1);
    clearTimeout(c.timer);
    this.current = undefined;
    c.p.resolve({ code, stdout });
    this.next();
  }

  /** An idle shell does not keep a command-line run of baton alive; a busy one does. */
  private idle(idle: boolean): void {
    const c = this.child;
    if (!c) return;
    for (const h of [c, c.stdout, c.stderr, c.stdin] as Array<{ ref?: () => void; unref?: () => void } | null>)
      idle ? h?.unref?.() : h?.ref?.();
  }
}
