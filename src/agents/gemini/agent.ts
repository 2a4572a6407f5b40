// The Gemini CLI adapter (rule: gemini-sandboxed): a blocking one-shot `gemini --prompt= -o json` (prompt on stdin)
// that ALWAYS runs with `--sandbox`. Where the sandbox cannot start, the run fails with the CLI's own reason; nothing
// falls back to an unsandboxed run. The operator may pick the sandbox mode for the whole server (GEMINI_SANDBOX_MODES).
// Hub delegation uses Gemini's ACP mode through the ACP adapter; this adapter is the provider's path and a plain
// one-shot agent.
import { spawnFailure } from '../../lib/agent-path.ts';
import { captureCommand } from '../../lib/capture.ts';
import { childEnv } from '../../lib/child-env.ts';
import type { Logger } from '../../lib/log.ts';
import { safeText } from '../../lib/redact.ts';
import {
  type Agent,
  type AgentEvent,
  type AgentProbe,
  type AgentSession,
  MAX_RESULT_BYTES,
  type OpenSessionOptions,
  type TurnOptions,
} from '../agent.ts';
import { type CliOutcome, runCli } from '../cli-process.ts';
import type { ExecutionTarget } from '../targets/target.ts';
import { VersionGate } from '../version-gate.ts';
import { canonicalGeminiDir, GeminiHome } from './home.ts';
import { NO_RELAUNCH } from './no-relaunch.ts';

/**
 * Sandbox modes an operator can choose: `auto` lets the CLI pick its container runtime (docker, podman, or
 * sandbox-exec on macOS); a runtime name pins it; `external` declares that baton itself runs inside a sandbox
 * (container or VM) the operator provides, so the CLI is told it is already sandboxed instead of nesting one.
 */
export const GEMINI_SANDBOX_MODES = ['auto', 'docker', 'podman', 'sandbox-exec', 'runsc', 'lxc', 'external'] as const;
export type GeminiSandboxMode = (typeof GEMINI_SANDBOX_MODES)[number];

/** Value of SANDBOX that tells the CLI it already runs inside the operator's sandbox. */
const EXTERNAL_SANDBOX_MARKER = 'baton-external';
/** No configured MCP server carries this name, so the allow-list admits none (rule: no-recursion). */
const NO_MCP_SERVER = '__baton_no_mcp_servers__';
/** `-o json` prints one pretty-printed object: the answer plus stats. */
const MAX_STDOUT_BYTES = MAX_RESULT_BYTES + 2 * 1024 * 1024;
const MAX_ERROR_CODE_POINTS = 2_000;

export interface GeminiAgentOptions {
  /** argv prefix of the CLI, e.g. ["gemini"] or ["node", "/path/gemini.js"]; an `agy` binary fits too. */
  command?: readonly string[];
  model?: string;
  sandboxMode?: GeminiSandboxMode;
  homeDir: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  interruptGraceMs?: number;
  stopGraceMs?: number;
  /** Where its runs happen and what is fenced around them (default: unfenced on this machine). */
  target?: ExecutionTarget;
}

export type GeminiRunResult =
  | { ok: true; text: string; sessionId?: string }
  | { ok: false; error: string; cancelled?: boolean; sandboxFailure?: boolean };

export class GeminiAgent implements Agent {
  readonly name: string;
  readonly kind = 'gemini';
  readonly home: GeminiHome;
  private readonly opts: GeminiAgentOptions;
  /** Rule `free-probes`: the binary's version against the tested range, before the first run. */
  private readonly versionGate: VersionGate;

  constructor(name: string, opts: GeminiAgentOptions) {
    this.name = name;
    this.opts = opts;
    const env = opts.env ?? process.env;
    this.home = new GeminiHome(opts.homeDir, canonicalGeminiDir(env), env);
    this.versionGate = new VersionGate('gemini-cli', {
      argv: () => this.argvPrefix,
      env: () => ({ ...this.childEnv(), [NO_RELAUNCH]: 'true' }),
      logger: opts.logger,
    });
  }

  get argvPrefix(): readonly string[] {
    return this.opts.command?.length ? this.opts.command : ['gemini'];
  }

  get sandboxMode(): GeminiSandboxMode {
    return this.opts.sandboxMode ?? 'auto';
  }

  childEnv(): Record<string, string> {
    // GEMINI_SANDBOX and SANDBOX never come from the environment: GEMINI_SANDBOX=false would switch the sandbox off
    // behind the flag's back. Only the operator's mode sets them.
    const mode = this.sandboxMode;
    return childEnv('gemini', {
      parent: this.opts.env ?? process.env,
      set: {
        ...(mode === 'external' ? { SANDBOX: EXTERNAL_SANDBOX_MARKER } : {}),
        ...(mode !== 'auto' && mode !== 'external' ? { GEMINI_SANDBOX: mode } : {}),
        GEMINI_CLI_HOME: this.home.dir,
      },
    });
  }

  args(): string[] {
    const [, ...prefixArgs] = this.argvPrefix;
    return [
      ...prefixArgs,
      // The prompt itself arrives on stdin (no argv size limit, never parsed as a flag).
      '--prompt=',
      '--output-format',
      'json',
      '--sandbox',
      '--extensions',
      'none',
      '--allowed-mcp-server-names',
      NO_MCP_SERVER,
      ...(this.opts.model ? ['--model', this.opts.model] : []),
    ];
  }

  async probe(): Promise<AgentProbe> {
    const [command, ...prefix] = this.argvPrefix;
    const base: AgentProbe = { name: this.name, kind: this.kind, available: false, binary: this.argvPrefix.join(' ') };
    const version = await captureCommand([command!, ...prefix, '--version'], {
      env: { ...this.childEnv(), [NO_RELAUNCH]: 'true' },
      timeoutMs: 20_000,
    });
    if (version.error || version.code !== 0) {
      return {
        ...base,
        detail: version.error
          ? spawnFailure(command!, version.error, 'the Gemini CLI')
          : `"--version" exited with code ${version.code}`,
      };
    }
    const env = this.opts.env ?? process.env;
    const login = env.GEMINI_API_KEY || env.GOOGLE_API_KEY || env.GOOGLE_APPLICATION_CREDENTIALS ? 'ok' : 'unknown';
    return { ...base, available: true, version: version.stdout.trim().split('\n')[0]?.slice(0, 64), login };
  }

  async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
    let id: string | undefined;
    const agent = this;
    return {
      get id() {
        return id;
      },
      async *turn(prompt: string, turnOpts: TurnOptions): AsyncIterable<AgentEvent> {
        yield { kind: 'status', text: 'Gemini: running' };
        const signal = AbortSignal.any([turnOpts.signal, opts.signal]);
        const res = await agent.runBlocking(prompt, { cwd: opts.cwd, signal, onProcessGroup: opts.onProcessGroup });
        if (res.ok) {
          if (res.sessionId) {
            id = res.sessionId;
            yield { kind: 'session', id: res.sessionId };
          }
          if (res.text) yield { kind: 'message', text: res.text };
          yield { kind: 'end', outcome: 'succeeded' };
        } else if (res.cancelled) yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
        else yield { kind: 'end', outcome: 'failed', error: res.error };
      },
      close: async () => {},
    };
  }

  async runBlocking(
    prompt: string,
    opts: { cwd: string; signal?: AbortSignal; onProcessGroup?: (pgid: number) => void },
  ): Promise<GeminiRunResult> {
    const refused = await this.versionGate.refusal();
    if (refused) return { ok: false, error: refused };
    const snapshots = this.home.beginRun();
    const run = runCli({
      command: this.argvPrefix[0]!,
      args: this.args(),
      cwd: opts.cwd,
      env: this.childEnv(),
      target: this.opts.target,
      keep: [this.home.dir],
      stdin: prompt,
      signal: opts.signal,
      onProcessGroup: opts.onProcessGroup,
      collectStdoutBytes: MAX_STDOUT_BYTES,
      interruptGraceMs: this.opts.interruptGraceMs,
      stopGraceMs: this.opts.stopGraceMs,
    });
    const outcome = await run.done;
    this.home.endRun(snapshots);
    if (outcome.aborted) return { ok: false, cancelled: true, error: 'the Gemini run was cancelled' };
    return interpret(this.argvPrefix[0]!, this.sandboxMode, outcome);
  }
}

function interpret(command: string, mode: GeminiSandboxMode, outcome: CliOutcome): GeminiRunResult {
  if (outcome.spawnError) {
    return {
      ok: false,
      error: safeText(spawnFailure(command, outcome.spawnError, 'the Gemini CLI'), MAX_ERROR_CODE_POINTS),
    };
  }
  if (outcome.streamError)
    return {
      ok: false,
      error: safeText(`output too large: Gemini's output: ${outcome.streamError.message}`, MAX_ERROR_CODE_POINTS),
    };
  const sandboxReason = /FatalSandboxError: ([^\n]+)/.exec(outcome.stderrTail)?.[1];
  if (sandboxReason) {
    return {
      ok: false,
      sandboxFailure: true,
      error: safeText(
        `Gemini's sandbox could not start (sandbox mode "${mode}"): ${sandboxReason} Gemini always runs sandboxed ` +
          'here and never falls back to running without one: make the sandbox runtime available (e.g. a running ' +
          'Docker daemon with the Gemini sandbox image), or have the operator choose another mode with ' +
          '--gemini-sandbox when starting the server.',
        MAX_ERROR_CODE_POINTS,
      ),
    };
  }
  const parsed = parseJsonObject(outcome.stdout) ?? parseTrailingJsonObject(outcome.stderrTail);
  const response = parsed?.response;
  if (outcome.exit.code === 0 && typeof response === 'string') {
    if (Buffer.byteLength(response) > MAX_RESULT_BYTES) {
      return {
        ok: false,
        error: `output too large: Gemini's answer exceeded the ${MAX_RESULT_BYTES}-byte result limit and was dropped`,
      };
    }
    return {
      ok: true,
      text: response,
      sessionId: typeof parsed?.session_id === 'string' ? parsed.session_id : undefined,
    };
  }
  const err = parsed?.error as { message?: unknown } | undefined;
  if (err && typeof err.message === 'string')
    return { ok: false, error: safeText(`Gemini reported an error: ${err.message}`, MAX_ERROR_CODE_POINTS) };
  const lastLine = outcome.stderrTail.trim().split('\n').at(-1) ?? '';
  const how = outcome.exit.signal ? `signal ${outcome.exit.signal}` : `code ${outcome.exit.code}`;
  return {
    ok: false,
    error: safeText(
      `Gemini exited (${how}) without an answer${lastLine ? `: ${lastLine}` : ''}`,
      MAX_ERROR_CODE_POINTS,
    ),
  };
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Errors go to stderr as a pretty-printed object after any log lines: parse from the last top-level `{`. */
function parseTrailingJsonObject(text: string): Record<string, unknown> | undefined {
  const start = text.lastIndexOf('\n{');
  return start === -1 ? parseJsonObject(text.trim()) : parseJsonObject(text.slice(start + 1));
}
