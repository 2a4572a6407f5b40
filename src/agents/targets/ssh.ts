// The `ssh` execution target: the agent runs on another machine through the OpenSSH client, over one multiplexed
// connection per target (a master kept by ssh itself, its socket in a 0700 dir of baton's), with batch mode and a
// strict host-key check. The remote agent leads a process group of its own whose id (and start time) it prints first,
// so cancel, the group stop and the next start's reaping reach it there. baton sends no credential and no variable of
// its own: the remote agent uses the remote user's login and binary. docs/targets.md is the user's page. (rules:
// execution-targets, ssh-target)
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { ensurePrivateDir } from '../../lib/private-fs.ts';
import { type ChildGroup, DEFAULT_STOP_GRACE_MS, spawnGroup, stopGroup } from '../../lib/process-group.ts';
import { redact } from '../../lib/redact.ts';
import type { SshTargetConfig } from './config.ts';
import { TargetError } from './errors.ts';
import { RemoteShell, shellWord } from './ssh-runner.ts';
import type { ExecutionTarget, RemoteGroup, RemoteHost, TargetSpawnOptions, TargetStatus } from './types.ts';

/** How long a connection check or a remote command may take before it counts as failed. */
const EXEC_TIMEOUT_MS = 30_000;
/** The first line of a remote group's stdout (its pgid and start time) is at most this long. */
const HEADER_MAX_BYTES = 64;
/** A control socket path must fit a sockaddr_un (108 bytes) with its name (24) and ssh's temporary suffix (17). */
const CONTROL_DIR_MAX = 64;
/** Variables of the hub's environment the local ssh client needs (to find its config, keys and ssh-agent). */
const SSH_CLIENT_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SSH_AUTH_SOCK', 'LANG', 'TZ'];
/** Never sent: the remote login's own, or a path of this machine. */
const NOT_SENT = new Set(['PATH', 'HOME', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL', 'PWD', 'OLDPWD', 'SSH_AUTH_SOCK']);

/**
 * The remote side of `spawn`: a new session (so a new process group) whose leader prints its pid and start time on
 * the first line, moves to the work dir and execs the agent with the variables baton sets for it. Every value is an
 * argument of the script, never part of it.
 */
const LAUNCH =
  'cd -- "$1" || exit 127; shift; ' +
  'echo "$$ $(sed "s/.*) //" /proc/$$/stat 2>/dev/null | cut -d" " -f20)"; ' +
  'exec env -- "$@"';

/**
 * The stop of a remote group (`kill -SIG -PGID`: dash's kill takes no `--`): TERM, up to the grace for it to go, then KILL. A leader whose start time differs from
 * the one recorded is another process that reused the id: left alone. (The start time is the 20th field after the
 * command name, which may hold spaces: Linux /proc; elsewhere none is recorded and the check is skipped.)
 */
const STOP =
  'p=$1; st=$2; n=$3; ' +
  'if [ -n "$st" ] && [ -r /proc/$p/stat ] && [ "$(sed "s/.*) //" /proc/$p/stat | cut -d" " -f20)" != "$st" ]; then exit 0; fi; ' +
  'kill -TERM -$p 2>/dev/null || exit 0; i=0; ' +
  'while kill -0 -$p 2>/dev/null; do i=$((i+1)); ' +
  'if [ $i -gt $n ]; then kill -KILL -$p 2>/dev/null; fi; ' +
  'if [ $i -gt $((n*2+100)) ]; then exit 1; fi; sleep 0.01; done; exit 0';

export interface SshContext {
  /** baton's state dir: the control socket's dir is made in it (or in the system temp dir when that path is long). */
  stateDir?: string;
}

interface Started {
  remote: Promise<RemoteGroup | undefined>;
  /** The ssh error, once the connection dropped under this group. */
  lost?: string;
  stopping: boolean;
}

export class SshTarget implements ExecutionTarget, RemoteHost {
  readonly name: string;
  readonly kind = 'ssh' as const;
  readonly roots: readonly string[];
  readonly worktreesDir: string | undefined;
  readonly remote: RemoteHost = this;
  private readonly config: SshTargetConfig;
  private readonly ctx: SshContext;
  private controlDir: string | undefined;
  private shell: RemoteShell | undefined;
  private readonly socketName: string;
  private readonly started = new Map<number, Started>();

  constructor(name: string, config: SshTargetConfig, ctx: SshContext = {}) {
    this.name = name;
    this.config = config;
    this.ctx = ctx;
    this.roots = config.roots;
    // A socket per target and settings: two targets on one host with other keys or known hosts never share a
    // connection (ssh's own %C names only the host, port and user).
    this.socketName = createHash('sha256')
      .update(JSON.stringify([name, config.host, config.user, config.port, config.identityFile, config.knownHostsFile]))
      .digest('hex')
      .slice(0, 24);
    this.worktreesDir = config.worktreesDir;
  }

  /** `user@host:port` as the messages name it. */
  get address(): string {
    const c = this.config;
    return `${c.user ? `${c.user}@` : ''}${c.host}${c.port ? `:${c.port}` : ''}`;
  }

  status(): TargetStatus {
    return { name: this.name, kind: 'ssh', fence: 'remote', host: this.address };
  }

  private socketDir(): string {
    if (this.controlDir) return this.controlDir;
    const preferred = this.ctx.stateDir ? join(this.ctx.stateDir, 'ssh') : undefined;
    this.controlDir =
      preferred && preferred.length <= CONTROL_DIR_MAX
        ? ensurePrivateDir(preferred)
        : mkdtempSync(join(tmpdir(), 'baton-ssh-'));
    return this.controlDir;
  }

  /** The ssh command line up to the remote command: multiplexed, batch mode, strict host keys, nothing forwarded. */
  sshArgs(): string[] {
    const c = this.config;
    const o = (kv: string) => ['-o', kv];
    return [
      '-T',
      ...o('BatchMode=yes'),
      ...o('StrictHostKeyChecking=yes'),
      ...(c.knownHostsFile ? [...o(`UserKnownHostsFile=${c.knownHostsFile}`), ...o('GlobalKnownHostsFile=none')] : []),
      ...(c.identityFile ? [...o(`IdentityFile=${c.identityFile}`), ...o('IdentitiesOnly=yes')] : []),
      ...o('ControlMaster=auto'),
      ...o(`ControlPath=${join(this.socketDir(), this.socketName)}`),
      ...o('ControlPersist=600'),
      ...o('ConnectTimeout=10'),
      ...o('ServerAliveInterval=5'),
      ...o('ServerAliveCountMax=3'),
      ...o('ForwardAgent=no'),
      ...o('ForwardX11=no'),
      ...o('ClearAllForwardings=yes'),
      ...o('PermitLocalCommand=no'),
      ...o('LogLevel=ERROR'),
      ...(c.port ? ['-p', String(c.port)] : []),
      ...(c.user ? ['-l', c.user] : []),
      '--',
      c.host,
    ];
  }

  /**
   * Runs `script` under the remote /bin/sh with `args` as $1…, through the target's remote shell: its exit code and
   * stdout. A connection that fails (an unreachable host, a wrong host key) throws a TargetError naming the target and
   * ssh's error.
   */
  async exec(
    script: string,
    args: readonly string[],
    opts: { timeoutMs?: number } = {},
  ): Promise<{ code: number; stdout: Buffer; stderr: string }> {
    this.shell ??= new RemoteShell({
      sshArgs: () => this.sshArgs(),
      env: sshClientEnv(),
      failure: (why) => this.connectError(why),
    });
    const r = await this.shell.run(script, args, opts.timeoutMs ?? EXEC_TIMEOUT_MS);
    return { ...r, stderr: '' };
  }

  connectError(why: string): TargetError {
    return new TargetError(
      `target "${this.name}" (ssh ${this.address}): cannot reach the host: ${redact(why || 'ssh failed')}`,
    );
  }

  /** Connects (or reuses the connection): throws naming the target when the host cannot be reached or its key differs. */
  async check(): Promise<void> {
    await this.exec('exit 0', []);
  }

  spawn(command: string, args: readonly string[], opts: TargetSpawnOptions): ChildGroup {
    if (!opts.cwd) throw new TargetError(`target "${this.name}": a remote process needs a work dir on that host`);
    const sent = sentEnv(opts.env, opts.keep ?? []);
    const remoteArgs = [opts.cwd, ...sent, command, ...args];
    // setsid -w: a new session whose leader is the launch shell (then the agent), waited for, so ssh ends with it.
    const remoteCommand = [
      'exec',
      'setsid',
      '-w',
      '/bin/sh',
      '-c',
      shellWord(LAUNCH),
      'sh',
      ...remoteArgs.map(shellWord),
    ];
    const group = spawnGroup('ssh', [...this.sshArgs(), remoteCommand.join(' ')], {
      env: sshClientEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    if (group.pgid <= 0) return group;
    const entry: Started = { remote: Promise.resolve(undefined), stopping: false };
    this.started.set(group.pgid, entry);
    const child = group.child;
    let stderrTail = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString('utf8')).slice(-2048);
    });
    let header: (g: RemoteGroup | undefined) => void = () => {};
    entry.remote = new Promise((r) => {
      header = r;
    });
    const raw = child.stdout!;
    const out = new HeaderStrip(header);
    raw.pipe(out);
    raw.once('close', () => header(undefined));
    Object.defineProperty(child, 'stdout', { value: out, configurable: true });
    // 255 is ssh's own failure: the connection went, not the agent (unless baton stopped it). Noted at the exit,
    // before anything that reacts to it can start a stop; ssh's message is read once its stderr has drained.
    child.once('exit', (code) => {
      if (code === 255 && !entry.stopping) entry.lost = 'the connection was lost';
    });
    child.stderr?.once('close', () => {
      if (entry.lost) entry.lost = lastLine(stderrTail) || entry.lost;
    });
    const exited = group.exited;
    return {
      child,
      pgid: group.pgid,
      exited,
      signal: (sig) => {
        void this.signalRemote(entry, sig);
        return true;
      },
      stop: async (graceMs = DEFAULT_STOP_GRACE_MS) => {
        entry.stopping = true;
        await this.stopStarted(group.pgid, graceMs);
        return group.stop(graceMs);
      },
    };
  }

  private async signalRemote(entry: Started, sig: NodeJS.Signals): Promise<void> {
    const g = await entry.remote;
    if (!g) return;
    await this.exec('kill -"$1" "-$2" 2>/dev/null; exit 0', [sig.replace(/^SIG/, ''), String(g.pgid)]).catch(() => {});
  }

  remoteGroup(localPgid: number): Promise<RemoteGroup | undefined> | undefined {
    return this.started.get(localPgid)?.remote;
  }

  connectionLost(localPgid: number): string | undefined {
    const lost = this.started.get(localPgid)?.lost;
    // Asked once, when the round ends: the entry has served its purpose.
    if (lost) this.started.delete(localPgid);
    return lost;
  }

  /** The remote group a local ssh client of this target started: stopped there, then the client here. */
  async stopGroup(pgid: number, graceMs = DEFAULT_STOP_GRACE_MS): Promise<boolean> {
    const entry = this.started.get(pgid);
    if (entry) entry.stopping = true;
    const remoteGone = await this.stopStarted(pgid, graceMs);
    const localGone = await stopGroup(pgid, graceMs);
    // Kept while it says why its connection dropped: the round's end asks (connectionLost) after this stop.
    if (!entry?.lost) this.started.delete(pgid);
    return remoteGone && localGone;
  }

  private async stopStarted(localPgid: number, graceMs: number): Promise<boolean> {
    const g = await this.started.get(localPgid)?.remote;
    if (!g) return true;
    return this.stopRemoteGroup(g, graceMs);
  }

  /** TERM, the grace, KILL, on the host; a group already gone (or a reused id) counts as stopped. */
  async stopRemoteGroup(g: RemoteGroup, graceMs = DEFAULT_STOP_GRACE_MS): Promise<boolean> {
    const rounds = Math.max(1, Math.ceil(graceMs / 10));
    try {
      const r = await this.exec(STOP, [String(g.pgid), g.start ?? '', String(rounds)], {
        timeoutMs: EXEC_TIMEOUT_MS + graceMs * 2,
      });
      return r.code === 0;
    } catch {
      return false;
    }
  }

  /** Ends the shared connection (the hub stopping). */
  async close(): Promise<void> {
    this.shell?.close();
    this.shell = undefined;
    if (!this.controlDir) return;
    await new Promise<void>((resolve) => {
      execFile('ssh', ['-O', 'exit', ...this.sshArgs()], { env: sshClientEnv(), timeout: 5_000 }, () => resolve());
    });
  }
}

/** Cuts the launch header (`<pgid> <start>\n`) off the remote stdout; the agent's own output follows untouched. */
class HeaderStrip extends Transform {
  private pending: Buffer | undefined = Buffer.alloc(0);
  private readonly onHeader: (g: RemoteGroup | undefined) => void;

  constructor(onHeader: (g: RemoteGroup | undefined) => void) {
    super();
    this.onHeader = onHeader;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    if (!this.pending) {
      done(null, chunk);
      return;
    }
    const all = Buffer.concat([this.pending, chunk]);
    const nl = all.indexOf(10);
    if (nl === -1 && all.length < HEADER_MAX_BYTES) {
      this.pending = all;
      done();
      return;
    }
    this.pending = undefined;
    const line = all.subarray(0, nl === -1 ? 0 : nl).toString('latin1');
    const m = /^(\d+)(?: (\d+))?$/.exec(line.trim());
    this.onHeader(m ? { pgid: Number(m[1]), start: m[2] ?? null } : undefined);
    done(null, all.subarray(nl + 1));
  }
}

function sshClientEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of SSH_CLIENT_ENV) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  return env;
}

/**
 * The `NAME=value` words of what the adapter and the agent's entry set for it: the variables whose value differs from
 * the hub's own environment, minus the remote login's own and any path into a dir of this machine kept for the agent
 * (its private home). baton's own variables never reach an adapter's env (child-env.ts).
 */
function sentEnv(env: NodeJS.ProcessEnv, keep: readonly string[]): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || NOT_SENT.has(name) || process.env[name] === value) continue;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
    if (keep.some((k) => value === k || value.startsWith(`${k}/`))) continue;
    out.push(`${name}=${value}`);
  }
  return out;
}

function lastLine(text: string): string {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1) ?? ''
  );
}
