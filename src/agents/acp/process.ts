// Starting an ACP agent: resolve its binary, spawn it in its own process group (rule: own-process-group) with a
// scrubbed environment, connect the SDK client over bounded stdio framing, and run `initialize`.
import { statSync } from 'node:fs';
import * as acp from '@agentclientprotocol/sdk';
import { binaryNotFound, findAgentBinary } from '../../lib/agent-path.ts';
import { childEnv } from '../../lib/child-env.ts';
import type { Logger } from '../../lib/log.ts';
import type { ChildGroup, GroupExit } from '../../lib/process-group.ts';
import { redact, safeText } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import { type ExecutionTarget, UNFENCED } from '../targets/target.ts';
import type { AcpConfig } from './config.ts';
import { stdioStream } from './stream.ts';

/** Backstop for initialize + session/new|load: an agent that never answers must not hold a task forever. */
export const ACP_STARTUP_TIMEOUT_MS = 120_000;
/** Tail of the agent's stderr kept for error messages (bounded memory, last line shown). */
const STDERR_TAIL_BYTES = 8 * 1024;
const STDERR_LINE_MAX_CODE_POINTS = 300;
/** How long to wait for the process's exit status once its stdout closed, to name the exit code in the error. */
const EXIT_REPORT_WAIT_MS = 2_000;

/** ACP's "authentication required" error: baton never logs in for the user (the agent's own login is used). */
const AUTH_REQUIRED_CODE = -32000;
const LOGIN_HINT = "; log in with the agent's own CLI first (baton uses the agent's existing login), then retry";

const CLIENT_INFO = { name: 'baton', title: 'baton', version: BATON_VERSION };

/** The shared child allowlist for an ACP agent (never a BATON_* variable), plus the agent's configured env. */
export function agentEnvironment(extra: Record<string, string> | undefined): Record<string, string> {
  return childEnv('acp', { set: extra });
}

/** Absolute path of an executable: as given when it has a slash, else found on the env's PATH or the usual install
 * places, never in baton's own package (src/lib/agent-path.ts). */
export function resolveBinary(command: string, env: Record<string, string>): string | undefined {
  return findAgentBinary(command, env.PATH ?? '');
}

export interface AcpHandlers {
  onUpdate(notification: acp.SessionNotification): void;
  onPermission(
    request: acp.RequestPermissionRequest,
  ): acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>;
}

export class AgentStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentStartError';
  }
}

/** One running ACP agent process and its connection. */
export class AcpProcess {
  readonly group: ChildGroup;
  readonly connection: acp.ClientConnection;
  readonly agentName: string;
  initializeResult: acp.InitializeResponse | undefined;
  /** Set when the agent broke the framing (rule: bounded-frames); the connection is closed with it. */
  frameError: Error | undefined;
  private stderrTail = '';
  private exit: GroupExit | undefined;

  private constructor(agentName: string, group: ChildGroup, handlers: AcpHandlers, logger: Logger) {
    this.agentName = agentName;
    this.group = group;
    const child = group.child;
    child.on('error', (err) => logger.debug('acp agent process error', { agent: agentName, error: err.message }));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-STDERR_TAIL_BYTES);
    });
    void group.exited.then((e) => {
      this.exit = e;
    });
    const stream = stdioStream(child.stdout!, child.stdin!, {
      onFrameError: (err) => {
        this.frameError = err;
        logger.warn('acp agent broke the framing; stopping it', { agent: agentName, error: err.message });
        // Nothing after an oversized frame can be trusted: the session is over, so is the process.
        void this.stop();
      },
      onMalformed: () => logger.debug('acp agent wrote a non-JSON-RPC line on stdout (skipped)', { agent: agentName }),
    });
    this.connection = acp
      .client({ name: 'baton' })
      .onNotification(acp.methods.client.session.update, ({ params }) => handlers.onUpdate(params))
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => handlers.onPermission(params))
      .connect(stream);
  }

  /** Spawns the agent (cwd, env) and runs initialize. Throws AgentStartError with a clear message on any failure. */
  static async start(opts: {
    agentName: string;
    config: AcpConfig;
    cwd: string;
    handlers: AcpHandlers;
    logger: Logger;
    signal?: AbortSignal;
    onProcessGroup?: (pgid: number) => void;
    /** Where the agent runs (default: unfenced on this machine). */
    target?: ExecutionTarget;
  }): Promise<AcpProcess> {
    const env = agentEnvironment(opts.config.env);
    const [command, ...args] = opts.config.command as [string, ...string[]];
    // On another machine the command is found there, in the work dir there (the remote login's PATH).
    const remote = opts.target?.remote !== undefined;
    const binary = remote ? command : resolveBinary(command, env);
    if (!binary) throw new AgentStartError(`agent "${opts.agentName}": ${binaryNotFound(command)}`);
    if (opts.signal?.aborted) throw new AgentStartError(`agent "${opts.agentName}": start was cancelled`);
    if (!remote && !isDirectory(opts.cwd))
      throw new AgentStartError(`agent "${opts.agentName}": working directory "${opts.cwd}" does not exist`);
    let group: ChildGroup;
    try {
      group = (opts.target ?? UNFENCED).spawn(binary, args, { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      throw new AgentStartError(`agent "${opts.agentName}": ${(err as Error).message}`);
    }
    const spawnError = new Promise<Error>((r) => group.child.once('error', r));
    if (group.pgid <= 0) {
      const err = await spawnError;
      throw new AgentStartError(`agent "${opts.agentName}": could not start "${binary}": ${redact(err.message)}`);
    }
    opts.onProcessGroup?.(group.pgid);
    const proc = new AcpProcess(opts.agentName, group, opts.handlers, opts.logger);
    try {
      const init = await proc.startupStep<acp.InitializeResponse>(
        'initialize',
        proc.connection.agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          // No fs or terminal: the agent works on the task's cwd itself, baton serves no files or shells.
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          clientInfo: CLIENT_INFO,
        }),
        opts.signal,
      );
      if (init.protocolVersion !== acp.PROTOCOL_VERSION)
        throw new AgentStartError(
          `agent "${opts.agentName}" speaks ACP protocol version ${init.protocolVersion}; baton needs version ${acp.PROTOCOL_VERSION}`,
        );
      proc.initializeResult = init;
      return proc;
    } catch (err) {
      await proc.stop();
      throw err;
    }
  }

  get agent(): acp.ClientContext {
    return this.connection.agent;
  }

  /** Races one startup request against the abort signal, the agent's death and the startup backstop. */
  async startupStep<T>(what: string, request: Promise<T>, signal?: AbortSignal): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new AgentStartError(
              `agent "${this.agentName}" did not answer ${what} within ${ACP_STARTUP_TIMEOUT_MS / 1000} s; check that "command" starts its ACP stdio mode`,
            ),
          ),
        ACP_STARTUP_TIMEOUT_MS,
      );
      onAbort = () => reject(new AgentStartError(`agent "${this.agentName}": start was cancelled`));
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([request, guard]);
    } catch (err) {
      if (err instanceof AgentStartError) throw err;
      throw new AgentStartError(`agent "${this.agentName}" failed ${what}: ${await this.describeFailure(err)}`);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Why a request failed: the agent's own JSON-RPC error, a broken frame, or the process having exited. */
  async describeFailure(err: unknown): Promise<string> {
    if (this.frameError) return `${this.frameError.message}; the agent was stopped`;
    if (err instanceof acp.RequestError) {
      const hint = err.code === AUTH_REQUIRED_CODE ? LOGIN_HINT : '';
      return `${safeText(`${err.message}${dataDetail(err.data)}`, STDERR_LINE_MAX_CODE_POINTS, { oneLine: true })}${hint}`;
    }
    const exit = this.exit ?? (await raceTimeout(this.group.exited, EXIT_REPORT_WAIT_MS));
    if (exit) {
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      const line = this.lastStderrLine();
      return `the agent process ${how}${line ? ` (last stderr line: ${line})` : ''}`;
    }
    return safeText(err instanceof Error ? err.message : String(err), STDERR_LINE_MAX_CODE_POINTS, { oneLine: true });
  }

  lastStderrLine(): string | undefined {
    const lines = this.stderrTail.split('\n').map((l) => l.trim());
    const last = lines.filter(Boolean).at(-1);
    return last ? safeText(last, STDERR_LINE_MAX_CODE_POINTS, { oneLine: true }) : undefined;
  }

  get exited(): boolean {
    return this.exit !== undefined;
  }

  /** Closes the connection and stops the process group (TERM, then KILL); resolves once it has exited. */
  async stop(): Promise<GroupExit> {
    this.connection.close();
    return this.group.stop();
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function dataDetail(data: unknown): string {
  if (typeof data === 'string') return `: ${data}`;
  if (data && typeof data === 'object' && typeof (data as { details?: unknown }).details === 'string')
    return `: ${(data as { details: string }).details}`;
  return '';
}

function raceTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<undefined>((r) => {
      timer = setTimeout(() => r(undefined), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
