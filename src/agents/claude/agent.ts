// The Claude Code adapter (rule: claude-print-mode): one `claude -p` process per turn. Background turns stream
// `stream-json`; blocking one-shots read the single `json` result; continuation is `--resume <session_id>`. Every run
// gets the private config dir of rule `isolated-homes` and the tool policy of policy.ts.
import { join } from 'node:path';
import { spawnFailure } from '../../lib/agent-path.ts';
import { captureCommand } from '../../lib/capture.ts';
import { childEnv } from '../../lib/child-env.ts';
import type { Logger } from '../../lib/log.ts';
import { safeText } from '../../lib/redact.ts';
import { findVersion } from '../../lib/version.ts';
import {
  type Agent,
  type AgentEvent,
  type AgentProbe,
  type AgentSession,
  MAX_RESULT_BYTES,
  type OpenSessionOptions,
  type TurnOptions,
} from '../agent.ts';
import { runCli } from '../cli-process.ts';
import { EventQueue } from '../event-queue.ts';
import type { ExecutionTarget } from '../targets/target.ts';
import { VersionGate } from '../version-gate.ts';
import { ClaudeConfigHome, canonicalClaudeConfigDir } from './home.ts';
import { type ClaudePolicy, claudeArgs } from './policy.ts';
import { type ClaudeResult, ClaudeStreamMapper, isClaudeResult, resultFailure } from './stream.ts';

/** The CLI retries failed requests with backoff (401s for over a minute); baton's own deadlines bound runs instead. */
export const DEFAULT_CLAUDE_MAX_RETRIES = 2;
/** A `json` result line may carry a 10 MiB answer plus metadata. */
const MAX_JSON_LINE_BYTES = MAX_RESULT_BYTES + 2 * 1024 * 1024;
/** Error text shown to callers is cut to this many code points. */
const MAX_ERROR_CODE_POINTS = 2_000;

export interface ClaudeAgentOptions {
  /** The `claude` binary (default: `claude` on PATH). */
  command?: string;
  model?: string;
  effort?: string;
  /** Fixed tool policy; when unset each session's sandbox decides. */
  policy?: ClaudePolicy;
  /** Private CLAUDE_CONFIG_DIR for this agent's runs. */
  homeDir: string;
  /** The user's Claude config dir whose credentials are copied (default $CLAUDE_CONFIG_DIR or ~/.claude). */
  userConfigDir?: string;
  maxRetries?: number;
  /** Environment the child inherits (default process.env). */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  interruptGraceMs?: number;
  stopGraceMs?: number;
  /** Where its runs happen and what is fenced around them (default: unfenced on this machine). */
  target?: ExecutionTarget;
}

export interface BlockingRunOptions {
  cwd: string;
  signal?: AbortSignal;
  onProcessGroup?: (pgid: number) => void;
}

export type BlockingRunResult =
  | { ok: true; text: string; sessionId?: string }
  | { ok: false; error: string; cancelled?: boolean };

export class ClaudeAgent implements Agent {
  readonly name: string;
  readonly kind = 'claude';
  readonly home: ClaudeConfigHome;
  private readonly opts: ClaudeAgentOptions;
  /** Rule `free-probes`: the binary's version against the tested range, before the first round (turns run here only). */
  readonly versionGate: VersionGate;

  constructor(name: string, opts: ClaudeAgentOptions) {
    this.name = name;
    this.opts = opts;
    this.home = new ClaudeConfigHome(opts.homeDir, opts.userConfigDir ?? canonicalClaudeConfigDir(opts.env));
    this.versionGate = new VersionGate('claude-code', {
      argv: () => [this.command],
      env: () => this.childEnv(),
      logger: opts.logger,
      ...(opts.target?.remote ? { ask: (argv) => this.runThere(argv) } : {}),
    });
  }

  /**
   * The user's credentials mirrored into the private config dir for one run, written back when rotated. On another
   * machine there is nothing to mirror: the remote user's own login and config dir apply (never sent from here).
   */
  beginRun(): (() => void) | undefined {
    if (this.opts.target?.remote) return undefined;
    const mirror = this.home.beginRun();
    return () => this.home.endRun(mirror);
  }

  /** A short command on the agent's other machine, in its login environment (the probe and the version check). */
  private async runThere(argv: readonly string[]): Promise<{ code: number | null; stdout: string }> {
    const r = await this.opts.target!.remote!.exec('"$@"', argv, { timeoutMs: 15_000 });
    return { code: r.code, stdout: r.stdout.toString('utf8') };
  }

  get command(): string {
    return this.opts.command ?? 'claude';
  }

  /** The child's environment: the shared allowlist (the user's login, proxies; never baton's), plus the isolated config dir. */
  childEnv(): Record<string, string> {
    const parent = this.opts.env ?? process.env;
    // CLAUDECODE (set inside a Claude Code session) is not on the allowlist: it would make the child refuse to nest.
    return childEnv('claude', {
      parent,
      set: {
        CLAUDE_CONFIG_DIR: this.home.dir,
        DISABLE_AUTOUPDATER: '1',
        CLAUDE_CODE_MAX_RETRIES:
          parent.CLAUDE_CODE_MAX_RETRIES ?? String(this.opts.maxRetries ?? DEFAULT_CLAUDE_MAX_RETRIES),
      },
    });
  }

  async probe(): Promise<AgentProbe> {
    const base: AgentProbe = { name: this.name, kind: this.kind, available: false, binary: this.command };
    if (this.opts.target?.remote) return this.probeThere(base);
    const env = this.childEnv();
    const version = await captureCommand([this.command, '--version'], { env, timeoutMs: 15_000 });
    if (version.error || version.code !== 0) {
      return {
        ...base,
        detail: version.error
          ? spawnFailure(this.command, version.error, 'Claude Code')
          : `"${this.command} --version" exited with code ${version.code}`,
      };
    }
    const endRun = this.beginRun();
    const auth = await captureCommand([this.command, 'auth', 'status', '--json'], { env, timeoutMs: 15_000 });
    endRun?.();
    return probed(base, version.stdout, auth.stdout);
  }

  /** The probe on the agent's other machine: its binary on the remote PATH, its version and the remote user's login. */
  private async probeThere(base: AgentProbe): Promise<AgentProbe> {
    const where = `on target "${this.opts.target!.name}"`;
    let version: { code: number | null; stdout: string };
    try {
      version = await this.runThere([this.command, '--version']);
    } catch (err) {
      return { ...base, detail: (err as Error).message };
    }
    if (version.code === 127) return { ...base, detail: `"${this.command}" was not found ${where}` };
    if (version.code !== 0)
      return { ...base, detail: `"${this.command} --version" exited with code ${version.code} ${where}` };
    const auth = await this.runThere([this.command, 'auth', 'status', '--json']).catch(() => ({ stdout: '' }));
    return probed(base, version.stdout, auth.stdout);
  }

  async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
    return new ClaudeSession(this, this.opts, opts);
  }

  /** One blocking `--output-format json` run (rule `claude-reviewer` `claude_code`). */
  async runBlocking(prompt: string, opts: BlockingRunOptions): Promise<BlockingRunResult> {
    const refused = await this.versionGate.refusal();
    if (refused) return { ok: false, error: refused };
    let result: ClaudeResult | undefined;
    const endRun = this.beginRun();
    const run = runCli({
      command: this.command,
      args: claudeArgs({
        outputFormat: 'json',
        policy: this.opts.policy ?? 'read-only',
        model: this.opts.model,
        effort: this.opts.effort,
      }),
      cwd: opts.cwd,
      env: this.childEnv(),
      target: this.opts.target,
      keep: [this.home.dir],
      stdin: prompt,
      signal: opts.signal,
      onProcessGroup: opts.onProcessGroup,
      maxLineBytes: MAX_JSON_LINE_BYTES,
      onJson: (msg) => {
        if (isClaudeResult(msg)) result = msg;
      },
      interruptGraceMs: this.opts.interruptGraceMs,
      stopGraceMs: this.opts.stopGraceMs,
    });
    const outcome = await run.done;
    endRun?.();
    if (outcome.aborted) return { ok: false, cancelled: true, error: 'the Claude run was cancelled' };
    const failure = runFailure(this.command, outcome, result);
    if (failure) return { ok: false, error: failure };
    const text = result?.result ?? '';
    if (Buffer.byteLength(text) > MAX_RESULT_BYTES) {
      return {
        ok: false,
        error: `output too large: Claude's answer exceeded the ${MAX_RESULT_BYTES}-byte result limit and was dropped`,
      };
    }
    return { ok: true, text, sessionId: result?.session_id };
  }
}

class ClaudeSession implements AgentSession {
  private sessionId: string | undefined;
  private readonly agent: ClaudeAgent;
  private readonly agentOpts: ClaudeAgentOptions;
  private readonly opts: OpenSessionOptions;
  private readonly running = new Set<AbortController>();
  private readonly finished = new Set<Promise<unknown>>();

  constructor(agent: ClaudeAgent, agentOpts: ClaudeAgentOptions, opts: OpenSessionOptions) {
    this.agent = agent;
    this.agentOpts = agentOpts;
    this.opts = opts;
    this.sessionId = opts.resume;
  }

  get id(): string | undefined {
    return this.sessionId;
  }

  async *turn(prompt: string, turnOpts: TurnOptions): AsyncIterable<AgentEvent> {
    const refused = await this.agent.versionGate.refusal();
    if (refused) {
      yield { kind: 'end', outcome: 'failed', error: refused };
      return;
    }
    const stop = new AbortController();
    const forward = () => stop.abort();
    if (turnOpts.signal.aborted || this.opts.signal.aborted) stop.abort();
    turnOpts.signal.addEventListener('abort', forward, { once: true });
    this.opts.signal.addEventListener('abort', forward, { once: true });
    this.running.add(stop);
    const queue = new EventQueue<AgentEvent>();
    const mapper = new ClaudeStreamMapper();
    const endRun = this.agent.beginRun();
    const run = runCli({
      command: this.agent.command,
      args: claudeArgs({
        outputFormat: 'stream-json',
        policy: this.agentOpts.policy ?? this.opts.sandbox,
        resume: this.sessionId,
        model: this.opts.model ?? this.agentOpts.model,
        effort: this.opts.effort ?? this.agentOpts.effort,
      }),
      cwd: this.opts.cwd,
      env: this.agent.childEnv(),
      target: this.agentOpts.target,
      keep: [this.agent.home.dir],
      stdin: prompt,
      signal: stop.signal,
      onProcessGroup: this.opts.onProcessGroup,
      maxLineBytes: MAX_JSON_LINE_BYTES,
      onJson: (msg) => {
        for (const ev of mapper.map(msg)) {
          if (ev.kind === 'session') this.sessionId = ev.id;
          queue.push(ev);
        }
      },
      interruptGraceMs: this.agentOpts.interruptGraceMs,
      stopGraceMs: this.agentOpts.stopGraceMs,
    });
    const finished = run.done.then((outcome) => {
      endRun?.();
      queue.push(...mapper.closeOpenTools());
      if (outcome.aborted) {
        queue.push({ kind: 'end', outcome: 'cancelled', acknowledged: outcome.acknowledged });
      } else {
        const failure = runFailure(this.agent.command, outcome, mapper.result);
        if (failure) queue.push({ kind: 'end', outcome: 'failed', error: failure });
        else {
          const text = mapper.result?.result ?? '';
          if (text) queue.push({ kind: 'message', text });
          queue.push({ kind: 'end', outcome: 'succeeded' });
        }
      }
      queue.end();
    });
    this.finished.add(finished);
    try {
      yield* queue;
    } finally {
      // A consumer that stops reading early still gets the process stopped and reaped.
      stop.abort();
      await finished;
      this.finished.delete(finished);
      this.running.delete(stop);
      turnOpts.signal.removeEventListener('abort', forward);
      this.opts.signal.removeEventListener('abort', forward);
    }
  }

  async close(): Promise<void> {
    for (const stop of this.running) stop.abort();
    await Promise.all([...this.finished]);
  }
}

/** A probe of a binary that answered `--version`: its version and what `auth status --json` says of the login. */
function probed(base: AgentProbe, versionOut: string, authOut: string): AgentProbe {
  let login: AgentProbe['login'] = 'unknown';
  try {
    const status = JSON.parse(authOut) as { loggedIn?: unknown };
    if (typeof status.loggedIn === 'boolean') login = status.loggedIn ? 'ok' : 'missing';
  } catch {}
  return {
    ...base,
    available: true,
    version: findVersion(versionOut) ?? versionOut.trim().slice(0, 64),
    login,
    detail:
      login === 'missing'
        ? 'Claude Code is not logged in: run `claude` once and log in (or set ANTHROPIC_API_KEY)'
        : undefined,
  };
}

/** Why a finished run failed, in redacted, control-free words; undefined when it succeeded. */
function runFailure(
  command: string,
  outcome: Awaited<ReturnType<typeof runCli>['done']>,
  result: ClaudeResult | undefined,
): string | undefined {
  if (outcome.spawnError) {
    return safeText(spawnFailure(command, outcome.spawnError, 'Claude Code'), MAX_ERROR_CODE_POINTS);
  }
  if (outcome.streamError)
    return safeText(
      `Claude Code's output broke the framing limits: ${outcome.streamError.message}`,
      MAX_ERROR_CODE_POINTS,
    );
  const lastLine = outcome.stderrTail.trim().split('\n').at(-1) ?? '';
  if (result) {
    const failure = resultFailure(result);
    if (failure === undefined) return undefined;
    // A result without its own text (e.g. an unknown --resume id) explains itself on stderr.
    const hasText = typeof result.result === 'string' && result.result.trim() !== '';
    return safeText(!hasText && lastLine ? `${failure}: ${lastLine}` : failure, MAX_ERROR_CODE_POINTS);
  }
  const how = outcome.exit.signal ? `signal ${outcome.exit.signal}` : `code ${outcome.exit.code}`;
  return safeText(
    `Claude Code exited (${how}) without a result${lastLine ? `: ${lastLine}` : ''}`,
    MAX_ERROR_CODE_POINTS,
  );
}

export function claudeHomeDir(stateDir: string, agentName: string): string {
  return join(stateDir, 'homes', `claude-${agentName.replace(/[^A-Za-z0-9_.-]/g, '_')}`);
}
