// The legacy passthrough itself (rule `codex-provider` legacy path), with its streams injected: the client's frames
// arrive on `clientIn` and leave on `clientOut`, Codex's `codex mcp-server` is spawned as a process group, and ending
// the bridge calls `exit`. legacy.ts binds it to the process; tests create it in-process on their own streams.
import type { Readable, Writable } from 'node:stream';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Sandbox } from '../../../agents/agent.ts';
import { codexChildEnv } from '../../../agents/codex/env.ts';
import { type ExecutionTarget, UNFENCED } from '../../../agents/targets/target.ts';
import { threadCommandsOf } from '../../../codex/thread-commands.ts';
import { cutCodePoints } from '../../../lib/chars.ts';
import { readLines } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import type { ChildGroup } from '../../../lib/process-group.ts';
import { redact } from '../../../lib/redact.ts';
import { stripTerminalControls } from '../../../lib/text.ts';
import { toolErrorResult } from '../../errors.ts';
import { argumentsIssue, describeIssues, toolJsonSchema } from '../../mcp-tools.ts';
import { MAX_CLIENT_FRAME_BYTES, type ProviderTool } from '../stdio-server.ts';
import { authFailure, backgroundTools, type CallArgs, codexJobTable } from './app-server.ts';
import { type CodexHomeSettings, prepareProviderHome } from './home.ts';
import { type CallMeta, endJob, type LegacyCall, LegacyCalls } from './legacy-calls.ts';
import {
  authErrorResult,
  type ClientFrame,
  type CodexFrame,
  clientFrame,
  codexFrame,
  isTypedUnauthorized,
  type JsonRpcId,
  keyOf,
  statusOf,
} from './legacy-frames.ts';
import { finishJob, JOB_REQUEST_PREFIX, legacyJobAgent } from './legacy-jobs.ts';
import { codexReplySchema, codexSchema } from './schemas.ts';
import { AUTH_INVALIDATED_CODE, type CallLimits, InFlightTurns } from './turns.ts';

/**
 * Late native responses the bridge may be waiting to drop at once; reaching it ends the bridge (rule: codex-provider).
 */
export const MAX_SUPPRESSED_CODEX_RESPONSES = 16;
/** After Codex's task_complete, how long its tools/call response may take before the bridge answers for it. */
export const DEFAULT_TERMINAL_RESPONSE_GRACE_MS = 5_000;
/** Bound of a teardown: Codex's group gets TERM, then KILL after this. */
const TEARDOWN_GRACE_MS = 2_000;
/** How much of a dropped line from Codex is logged, and how much more is read so a credential at the cut is redacted. */
const DROPPED_LINE_LOG_CHARS = 200;
const DROPPED_LINE_REDACT_MARGIN = 512;
/** Largest native frame accepted from Codex (rule: bounded-frames). */
const MAX_CODEX_FRAME_BYTES = 64 * 1024 * 1024;

export interface LegacyOptions {
  command: string[];
  homeDir: string;
  settings: CodexHomeSettings;
  userCodexHome: string;
  launchDir: string;
  models: readonly [string, ...string[]];
  defaultGoal?: string;
  limits: CallLimits;
  statusIntervalMs: number;
  heartbeatMs: number;
  terminalGraceMs?: number;
  maxSuppressed?: number;
  logger: Logger;
  /** Where `codex mcp-server` runs and what is fenced around it (default: unfenced on this machine). */
  target?: ExecutionTarget;
  /** Runs once at teardown, after Codex stopped and before `exit` (removing the bridge's home). */
  onExit: () => void;
}

/** Where the bridge's client frames come from and go to, and how it ends. */
export interface LegacyStreams {
  clientIn: Readable;
  clientOut: Writable;
  /** Called once, last, with the exit code (143 after SIGTERM, 0 on a clean close, 1 on a failure). */
  exit(code: number): void;
}

export interface LegacyBridge {
  /** Ends the bridge (idempotent): bounded stop of Codex's group, write-back of a rotated login, then `exit`. */
  teardown(reason: string, code?: number): Promise<void>;
}

/** What the bridge remembers between frames; the frame handlers read and change only this and the call table. */
interface BridgeState {
  /** Codex reported the login invalid: the call that saw it got one structured error, new turns are refused. */
  authInvalidated: boolean;
  /** Codex's last stdout chunk ended inside a frame (a stall there leaves no line boundary for later frames). */
  codexMidFrame: boolean;
  /** Set once the bridge is ending; nothing more goes to the client. */
  shuttingDown: Promise<void> | undefined;
  /** Ids of the client's tools/list requests, whose answers get the curated listing. */
  toolsListIds: Set<string>;
  /** Client requests for the bridge's own tools, aborted by the client's notifications/cancelled. */
  localRequests: Map<string, AbortController>;
  /** Each thread's cwd and sandbox, so a codex-reply reports where its thread runs. */
  threadCwds: Map<string, { cwd: string; sandbox: string }>;
  /** The thread of each background job. */
  jobThreads: Map<string, string>;
}

export function createLegacyBridge(opts: LegacyOptions, streams: LegacyStreams): LegacyBridge {
  const logger = opts.logger;
  const maxSuppressed = opts.maxSuppressed ?? MAX_SUPPRESSED_CODEX_RESPONSES;
  const terminalGraceMs = opts.terminalGraceMs ?? DEFAULT_TERMINAL_RESPONSE_GRACE_MS;
  const home = prepareProviderHome(opts.homeDir, opts.settings, opts.userCodexHome, opts.launchDir);
  const [file, ...prefix] = opts.command;
  const env = codexChildEnv(
    { ...(opts.settings.modelProvider ? { modelProvider: opts.settings.modelProvider } : {}) },
    opts.homeDir,
  );
  const codex: ChildGroup = (opts.target ?? UNFENCED).spawn(file!, [...prefix, 'mcp-server'], {
    cwd: opts.launchDir,
    env,
    stdio: ['pipe', 'pipe', 'ignore'],
    keep: [opts.homeDir],
  });
  codex.child.on('error', (err) => logger.error('could not start codex mcp-server', { error: err.message }));
  codex.child.stdin?.on('error', () => {});

  const inflight = new InFlightTurns();
  const state: BridgeState = {
    authInvalidated: false,
    codexMidFrame: false,
    shuttingDown: undefined,
    toolsListIds: new Set(),
    localRequests: new Map(),
    threadCwds: new Map(),
    jobThreads: new Map(),
  };
  const { toolsListIds, localRequests, threadCwds, jobThreads } = state;

  const toClient = (line: string | Buffer) => {
    if (state.shuttingDown) return;
    streams.clientOut.write(typeof line === 'string' ? `${line}\n` : Buffer.concat([line, Buffer.from('\n')]));
  };
  const send = (msg: Record<string, unknown>) => toClient(JSON.stringify({ jsonrpc: '2.0', ...msg }));
  const toCodex = (line: string | Buffer) => {
    codex.child.stdin?.write(typeof line === 'string' ? `${line}\n` : Buffer.concat([line, Buffer.from('\n')]));
  };
  const { threadCommands, stopCommands } = threadCommandsOf(opts.homeDir, codex.pgid, logger);
  const calls = new LegacyCalls({
    inflight,
    limits: opts.limits,
    heartbeatMs: opts.heartbeatMs,
    terminalGraceMs,
    maxSuppressed,
    logger,
    send,
    toCodex,
    teardown: (reason) => void teardown(reason),
    watchMidFrame: () => watchMidFrame(),
    threadCommands,
    stopCommands,
  });

  const jobs = codexJobTable(opts, logger);

  /** Ends the bridge: bounded stop of Codex's group, then exit (the client reconnects to a new bridge). */
  const teardown = (reason: string, code = 1) => {
    state.shuttingDown ??= (async () => {
      logger.warn('codex bridge shutting down', { reason });
      for (const c of localRequests.values()) c.abort();
      await Promise.race([jobs.closeAll(), new Promise((r) => setTimeout(r, TEARDOWN_GRACE_MS).unref())]);
      for (const call of calls.all()) calls.close(call);
      codex.child.stdin?.end();
      // A clean close lets Codex exit on EOF; a failing bridge stops the group at once (still TERM, then KILL).
      if (code === 0) await Promise.race([codex.exited, new Promise((r) => setTimeout(r, TEARDOWN_GRACE_MS).unref())]);
      await codex.stop(TEARDOWN_GRACE_MS);
      try {
        if (home.writeBackAuth()) logger.info('codex: rotated login written back to the user auth.json');
      } catch (err) {
        logger.warn('codex: could not write the rotated login back', { error: redact(String(err)) });
      }
      try {
        opts.onExit();
      } catch {}
      streams.exit(code);
    })();
    return state.shuttingDown;
  };

  /** A stall inside a native frame leaves no line boundary for later frames: one more grace, then the bridge ends. */
  const watchMidFrame = () => {
    if (!state.codexMidFrame) return;
    let sawNewline = false;
    const onData = (d: Buffer) => {
      if (d.includes(10)) sawNewline = true;
    };
    codex.child.stdout?.on('data', onData);
    setTimeout(() => {
      codex.child.stdout?.off('data', onData);
      if (!sawNewline && state.codexMidFrame) void teardown('Codex stalled inside a frame and ignored the cancel');
    }, opts.limits.cancelGraceMs).unref();
  };

  /** Native arguments of a curated call; the caller's choices only, the rest is the server's. */
  const nativeArgs = (args: CallArgs): { native: Record<string, unknown>; meta: CallMeta } => {
    if (args.threadId !== undefined) {
      const known = threadCwds.get(args.threadId);
      const reminder = args.goal ? `Reminder of the goal for this thread: ${args.goal}\n\n` : '';
      return {
        native: { threadId: args.threadId, prompt: reminder + args.prompt },
        meta: {
          cwd: known?.cwd,
          cwdInferred: known !== undefined,
          sandbox: known?.sandbox ?? 'unknown',
          threadId: args.threadId,
        },
      };
    }
    const cwd = args.cwd ?? opts.launchDir;
    const goal = args.goal ?? opts.defaultGoal ?? '';
    const config: Record<string, unknown> = {
      model_reasoning_effort: args.model_reasoning_effort ?? opts.settings.effort,
    };
    if (args.allow_subagents) {
      config['features.multi_agent'] = true;
      config['agents.enabled'] = true;
    }
    return {
      native: {
        prompt: args.prompt,
        cwd,
        sandbox: args.sandbox,
        model: args.model ?? opts.settings.model,
        config,
        ...(goal ? { 'developer-instructions': goal } : {}),
      },
      meta: { cwd, cwdInferred: false, sandbox: args.sandbox ?? opts.settings.sandboxMode },
    };
  };

  // ---- Background jobs: private tools/call requests on the same Codex, never shown to the client.
  const jobDeps = { calls, nativeArgs, toCodex };
  const localTools: ProviderTool[] = backgroundTools({
    jobs,
    inflight,
    jobThreads,
    statusIntervalMs: opts.statusIntervalMs,
    models: opts.models,
    start: (args) => {
      if (state.authInvalidated) throw authFailure();
      const jobIds: { jobId?: string } = {};
      const { meta } = nativeArgs(args);
      const started = jobs.start({
        agent: legacyJobAgent(jobDeps, args, jobIds),
        prompt: args.prompt,
        cwd: meta.cwd ?? opts.launchDir,
        sandbox: (meta.sandbox as Sandbox) ?? 'read-only',
        label: 'Codex',
      });
      jobIds.jobId = started.jobId;
      if (args.threadId) jobThreads.set(started.jobId, args.threadId);
      return started;
    },
  });
  const localByName = new Map(localTools.map((t) => [t.name, t]));
  const curated = new Map<string, ProviderTool['input']>([
    ['codex', codexSchema(opts.models)],
    ['codex-reply', codexReplySchema],
  ]);
  const curatedListing = (native: Array<Record<string, unknown>>) => {
    const nativeByName = new Map(native.map((t) => [t.name, t]));
    const described = (name: string, schema: ProviderTool['input']) => ({
      ...(nativeByName.get(name) ?? {}),
      name,
      inputSchema: toolJsonSchema(schema),
    });
    return [
      described('codex', curated.get('codex')!),
      described('codex-reply', curated.get('codex-reply')!),
      ...localTools.map((t) => ({ name: t.name, description: t.description, inputSchema: toolJsonSchema(t.input) })),
    ];
  };

  // ---- Client → Codex: one handler per kind of frame (legacy-frames.ts tells them apart).
  const onClientLine = (raw: Buffer) => {
    const frame = clientFrame(raw);
    switch (frame.kind) {
      case 'tools_list':
        toolsListIds.add(keyOf(frame.id));
        return toCodex(raw);
      case 'cancelled':
        return onClientCancel(frame.requestId, raw);
      case 'tools_call':
        return onToolsCall(frame, raw);
      case 'unparsable':
      case 'other':
        return toCodex(raw);
    }
  };

  /** A client cancel: a local tool's request is aborted, a call to Codex waits for Codex to confirm it. */
  const onClientCancel = (requestId: JsonRpcId | undefined, raw: Buffer) => {
    if (requestId !== undefined) {
      localRequests.get(keyOf(requestId))?.abort();
      const call = calls.get(keyOf(requestId));
      if (call && !call.job && !call.cancelTimer) calls.awaitCancel(call);
    }
    toCodex(raw);
  };

  /** A tools/call: refused, run by the bridge (job tools), rewritten for Codex (codex, codex-reply), or forwarded. */
  const onToolsCall = ({ msg, id, name, args: rawArgs }: Extract<ClientFrame, { kind: 'tools_call' }>, raw: Buffer) => {
    // The same refusals as every other face (own __proto__-like keys, lone surrogates), forwarded tools included.
    const issue = argumentsIssue(rawArgs);
    if (issue) return invalidParams(id, name, issue);
    const local = localByName.get(name);
    if (local) return void runLocal(id, local, rawArgs);
    const schema = curated.get(name);
    if (!schema) return toCodex(raw);
    const parsed = schema.safeParse(rawArgs);
    if (!parsed.success) return invalidParams(id, name, describeIssues(parsed.error));
    if (state.authInvalidated) return send({ id, result: authErrorResult() });
    const { native, meta } = nativeArgs(parsed.data as CallArgs);
    const progressToken = (msg.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    calls.start(id, meta, progressToken);
    toCodex(JSON.stringify({ ...msg, params: { ...msg.params, arguments: native } }));
  };

  const invalidParams = (id: JsonRpcId, name: string, issue: string) =>
    send({ id, error: { code: ProtocolErrorCode.InvalidParams, message: `invalid arguments for ${name}: ${issue}` } });

  const runLocal = async (id: JsonRpcId, tool: ProviderTool, rawArgs: unknown) => {
    const parsed = tool.input.safeParse(rawArgs);
    if (!parsed.success) return invalidParams(id, tool.name, describeIssues(parsed.error));
    const controller = new AbortController();
    localRequests.set(keyOf(id), controller);
    try {
      const result = await tool.handler(parsed.data, {
        requestId: id,
        signal: controller.signal,
        progress: () => {},
        trackGroup: () => {},
      });
      if (!controller.signal.aborted) send({ id, result });
    } catch (err) {
      if (controller.signal.aborted) return;
      send({ id, result: toolErrorResult(err, { tool: tool.name }) });
    } finally {
      localRequests.delete(keyOf(id));
    }
  };

  // ---- Codex → client: one handler per kind of frame (legacy-frames.ts tells them apart).
  const onCodexLine = (raw: Buffer) => {
    const frame = codexFrame(raw);
    switch (frame.kind) {
      case 'response':
        return onCodexResponse(frame, raw);
      case 'event':
        return onCodexEvent(frame, raw);
      case 'server_request':
        return onCodexRequest(frame, raw);
      case 'not_object':
        // No JSON-RPC message, and nothing a client could act on either: dropped, and the line logged redacted.
        return logger.warn('codex mcp-server wrote a line of JSON that is not a JSON object; dropped', {
          line: cutCodePoints(
            redact(cutCodePoints(raw.toString('utf8'), DROPPED_LINE_LOG_CHARS + DROPPED_LINE_REDACT_MARGIN)),
            DROPPED_LINE_LOG_CHARS,
          ),
        });
      case 'unparsable':
      case 'other':
        return toClient(raw);
    }
  };

  /** A response: a tools/list gets the curated listing, a call's response ends the call (a job's stays private). */
  const onCodexResponse = ({ msg, key }: Extract<CodexFrame, { kind: 'response' }>, raw: Buffer) => {
    if (toolsListIds.delete(key) && msg.result && Array.isArray(msg.result.tools)) {
      const tools = curatedListing(msg.result.tools as Array<Record<string, unknown>>);
      return send({ id: msg.id, result: { ...msg.result, tools } });
    }
    if (calls.settleLate(key)) return;
    const call = calls.get(key);
    if (call) {
      calls.close(call);
      if (call.job) return finishJob(call, msg);
    }
    toClient(raw);
  };

  /** A native event: a call's progress, thread, auth failure or cancel confirmation; shown unless a job's. */
  const onCodexEvent = (frame: Extract<CodexFrame, { kind: 'event' }>, raw: Buffer) => {
    const { requestId, event } = frame;
    const call = requestId !== undefined ? calls.get(keyOf(requestId)) : undefined;
    if (call) {
      if (onCallEvent(call, frame) === 'consumed' || call.job) return;
    } else if (requestId !== undefined) {
      // A call closed locally (deadline, abandoned cancel) that Codex has now aborted: no response will follow.
      if (event.type === 'turn_aborted') calls.settleLate(keyOf(requestId));
      if (String(requestId).startsWith(JOB_REQUEST_PREFIX)) return;
    }
    toClient(raw);
  };

  /** One event of a live call; 'consumed' when the event must not reach the client. */
  const onCallEvent = (call: LegacyCall, { threadId: metaThread, event }: Extract<CodexFrame, { kind: 'event' }>) => {
    call.lastActivityAt = Date.now();
    call.entry.lastActivityAt = call.lastActivityAt;
    call.touch();
    const threadId = metaThread ?? (event.type === 'session_configured' ? (event.thread_id as string) : undefined);
    if (threadId && !call.threadId) learnThread(call, threadId);
    if (isTypedUnauthorized(event)) return onUnauthorized(call);
    if (event.type === 'turn_aborted' && call.cancelTimer) return onCancelConfirmed(call);
    const status = statusOf(event);
    if (status) {
      call.lastProgressAt = Date.now();
      call.progress.send(status);
      call.job?.queue.push({ kind: 'status', text: status });
    }
    if (call.job && event.type === 'agent_message' && event.phase === 'commentary' && typeof event.message === 'string')
      call.job.queue.push({ kind: 'commentary', text: stripTerminalControls(event.message) });
    if (event.type === 'task_complete') {
      // Terminal result recovery: answer for Codex if its own response does not follow within the grace.
      calls.expectResponse(call, typeof event.last_agent_message === 'string' ? event.last_agent_message : '');
    }
    return 'shown';
  };

  /** The call's thread became known: remembered for codex-reply's cwd, and told to a job. */
  const learnThread = (call: LegacyCall, threadId: string) => {
    call.threadId = threadId;
    call.entry.threadId = threadId;
    if (call.entry.cwd) threadCwds.set(threadId, { cwd: call.entry.cwd, sandbox: call.entry.sandbox });
    if (call.job) {
      const jobId = call.job.jobIds.jobId;
      if (jobId) jobThreads.set(jobId, threadId);
      call.job.queue.push({ kind: 'session', id: threadId });
    }
  };

  /** The typed event is replaced by one structured tool error; new turns are refused from now on. */
  const onUnauthorized = (call: LegacyCall): 'consumed' => {
    state.authInvalidated = true;
    if (call.job) {
      endJob(call.job, { kind: 'end', outcome: 'failed', error: `${AUTH_INVALIDATED_CODE}: ${authFailure().message}` });
    } else send({ id: call.id, result: authErrorResult(call.threadId) });
    calls.suppress(call, { abandoned: false, stopAsked: false });
    return 'consumed';
  };

  /**
   * Codex confirms a cancel with turn_aborted and, as MCP asks, sends no response for the cancelled request. The job
   * ends once the commands the turn left running are stopped, so a cancel answered means work stopped.
   */
  const onCancelConfirmed = (call: LegacyCall): 'consumed' | 'shown' => {
    calls.close(call);
    const stopped = stopCommands(call.threadId, call.commandsBefore);
    const job = call.job;
    if (!job) return 'shown';
    void stopped.then(() => endJob(job, { kind: 'end', outcome: 'cancelled', acknowledged: true }));
    return 'consumed';
  };

  /** A server request (e.g. an approval elicitation) for a job's private call is declined; others go to the client. */
  const onCodexRequest = ({ msg, related }: Extract<CodexFrame, { kind: 'server_request' }>, raw: Buffer) => {
    if (related !== undefined && String(related).startsWith(JOB_REQUEST_PREFIX)) {
      return toCodex(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { action: 'decline' } }));
    }
    toClient(raw);
  };

  codex.child.stdout?.on('data', (d: Buffer) => {
    state.codexMidFrame = d.length > 0 && d[d.length - 1] !== 10;
  });
  readLines(codex.child.stdout!, {
    maxLineBytes: MAX_CODEX_FRAME_BYTES,
    onLine: onCodexLine,
    onError: (err) => void teardown(`Codex sent an unusable frame: ${err.message}`),
  });
  readLines(streams.clientIn, {
    maxLineBytes: MAX_CLIENT_FRAME_BYTES,
    onLine: onClientLine,
    onError: (err) => void teardown(`the client sent an unusable frame: ${err.message}`),
  });
  codex.exited.then((exit) => {
    for (const call of calls.all()) {
      if (call.job) endJob(call.job, { kind: 'end', outcome: 'failed', error: 'Codex exited' });
      else
        send({
          id: call.id,
          error: { code: ProtocolErrorCode.InternalError, message: 'Codex exited; reconnect to start a new bridge' },
        });
      calls.close(call);
    }
    void teardown(`codex mcp-server exited (code ${exit.code ?? 'none'}, signal ${exit.signal ?? 'none'})`);
  });
  streams.clientIn.once('end', () => void teardown('stdin closed', 0));
  streams.clientOut.on('error', () => void teardown('stdout broken', 0));
  return { teardown };
}
