// The legacy passthrough itself (rule `codex-provider` legacy path), with its streams injected: the client's frames
// arrive on `clientIn` and leave on `clientOut`, Codex's `codex mcp-server` is spawned as a process group, and ending
// the bridge calls `exit`. legacy.ts binds it to the process; tests create it in-process on their own streams.
import type { Readable, Writable } from 'node:stream';
import { ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { Sandbox } from '../../../agents/agent.ts';
import { codexChildEnv } from '../../../agents/codex/env.ts';
import { readLines } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import { type ChildGroup, groupsWithEnvironment, signalGroup, spawnGroup } from '../../../lib/process-group.ts';
import { redact } from '../../../lib/redact.ts';
import { stripTerminalControls } from '../../../lib/text.ts';
import { toolErrorResult } from '../../errors.ts';
import { argumentsIssue, describeIssues, toolJsonSchema } from '../../mcp-tools.ts';
import { MAX_CLIENT_FRAME_BYTES, type ProviderTool } from '../stdio-server.ts';
import { authFailure, backgroundTools, type CallArgs, codexJobTable } from './app-server.ts';
import { type CodexHomeSettings, prepareProviderHome } from './home.ts';
import { type CallMeta, endJob, LegacyCalls } from './legacy-calls.ts';
import {
  authErrorResult,
  isTypedUnauthorized,
  type JsonRpcId,
  keyOf,
  type Message,
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
  const codex: ChildGroup = spawnGroup(file!, [...prefix, 'mcp-server'], {
    cwd: opts.launchDir,
    env,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  codex.child.on('error', (err) => logger.error('could not start codex mcp-server', { error: err.message }));
  codex.child.stdin?.on('error', () => {});

  const inflight = new InFlightTurns();
  const toolsListIds = new Set<string>();
  /** Client requests for the bridge's own tools, aborted by the client's notifications/cancelled. */
  const localRequests = new Map<string, AbortController>();
  const threadCwds = new Map<string, { cwd: string; sandbox: string }>();
  const jobThreads = new Map<string, string>();
  let authInvalidated = false;
  let codexMidFrame = false;
  let shuttingDown: Promise<void> | undefined;

  const toClient = (line: string | Buffer) => {
    if (shuttingDown) return;
    streams.clientOut.write(typeof line === 'string' ? `${line}\n` : Buffer.concat([line, Buffer.from('\n')]));
  };
  const send = (msg: Record<string, unknown>) => toClient(JSON.stringify({ jsonrpc: '2.0', ...msg }));
  const toCodex = (line: string | Buffer) => {
    codex.child.stdin?.write(typeof line === 'string' ? `${line}\n` : Buffer.concat([line, Buffer.from('\n')]));
  };
  // Codex ≤ 0.153 keeps a command running after it aborts the turn that started it (its unified exec outlives turns),
  // in a session of the command's own (the sandbox's), so neither Codex's cancel nor its process group reaches it. The
  // bridge finds a thread's commands by the CODEX_HOME and CODEX_THREAD_ID Codex gives them (rule: cancel-then-stop).
  function threadCommands(threadId: string): Set<number> {
    const groups = groupsWithEnvironment({ CODEX_HOME: opts.homeDir, CODEX_THREAD_ID: threadId });
    groups.delete(codex.pgid);
    return groups;
  }
  async function stopCommands(threadId: string | undefined, spare: ReadonlySet<number> | undefined): Promise<void> {
    if (threadId === undefined) return;
    // Gone means no live process carries the thread any more: a zombie left for a parent to reap does no work, and the
    // scan also catches a command started meanwhile.
    const running = () => [...threadCommands(threadId)].filter((g) => !spare?.has(g));
    let groups = running();
    if (groups.length === 0) return;
    logger.info('codex: stopping the commands of a stopped turn', { threadId, processGroups: groups.length });
    for (const sig of ['SIGTERM', 'SIGKILL'] as const) {
      for (const g of groups) signalGroup(g, sig);
      const deadline = Date.now() + TEARDOWN_GRACE_MS;
      while (groups.length > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        groups = running();
      }
      if (groups.length === 0) return;
    }
    logger.warn('codex: commands of a stopped turn survived SIGKILL', { threadId, processGroups: groups.length });
  }
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
    shuttingDown ??= (async () => {
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
    return shuttingDown;
  };

  /** A stall inside a native frame leaves no line boundary for later frames: one more grace, then the bridge ends. */
  const watchMidFrame = () => {
    if (!codexMidFrame) return;
    let sawNewline = false;
    const onData = (d: Buffer) => {
      if (d.includes(10)) sawNewline = true;
    };
    codex.child.stdout?.on('data', onData);
    setTimeout(() => {
      codex.child.stdout?.off('data', onData);
      if (!sawNewline && codexMidFrame) void teardown('Codex stalled inside a frame and ignored the cancel');
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
      if (authInvalidated) throw authFailure();
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

  // ---- Client → Codex.
  const onClientLine = (raw: Buffer) => {
    let msg: Message;
    try {
      msg = JSON.parse(raw.toString('utf8')) as Message;
    } catch {
      toCodex(raw);
      return;
    }
    if (msg.method === 'tools/list' && msg.id !== undefined) {
      toolsListIds.add(keyOf(msg.id));
      toCodex(raw);
      return;
    }
    if (msg.method === 'notifications/cancelled') {
      const requestId = msg.params?.requestId as JsonRpcId | undefined;
      if (requestId !== undefined) {
        localRequests.get(keyOf(requestId))?.abort();
        const call = calls.get(keyOf(requestId));
        if (call && !call.job && !call.cancelTimer) calls.awaitCancel(call);
      }
      toCodex(raw);
      return;
    }
    if (msg.method !== 'tools/call' || msg.id === undefined) {
      toCodex(raw);
      return;
    }
    const id = msg.id;
    const name = String(msg.params?.name ?? '');
    const rawArgs = msg.params?.arguments ?? {};
    // The same refusals as every other face (own __proto__-like keys, lone surrogates), forwarded tools included.
    const issue = argumentsIssue(rawArgs);
    if (issue) {
      send({
        id,
        error: { code: ProtocolErrorCode.InvalidParams, message: `invalid arguments for ${name}: ${issue}` },
      });
      return;
    }
    const local = localByName.get(name);
    if (local) {
      void runLocal(id, local, rawArgs);
      return;
    }
    const schema = curated.get(name);
    if (!schema) {
      toCodex(raw);
      return;
    }
    const parsed = schema.safeParse(rawArgs);
    if (!parsed.success) {
      send({
        id,
        error: {
          code: ProtocolErrorCode.InvalidParams,
          message: `invalid arguments for ${name}: ${describeIssues(parsed.error)}`,
        },
      });
      return;
    }
    if (authInvalidated) {
      send({ id, result: authErrorResult() });
      return;
    }
    const { native, meta } = nativeArgs(parsed.data as CallArgs);
    const progressToken = (msg.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    calls.start(id, meta, progressToken);
    toCodex(JSON.stringify({ ...msg, params: { ...msg.params, arguments: native } }));
  };

  const runLocal = async (id: JsonRpcId, tool: ProviderTool, rawArgs: unknown) => {
    const parsed = tool.input.safeParse(rawArgs);
    if (!parsed.success) {
      send({
        id,
        error: {
          code: ProtocolErrorCode.InvalidParams,
          message: `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`,
        },
      });
      return;
    }
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

  // ---- Codex → client.
  const onCodexLine = (raw: Buffer) => {
    let msg: Message;
    try {
      msg = JSON.parse(raw.toString('utf8')) as Message;
    } catch {
      toClient(raw);
      return;
    }
    const isResponse = msg.method === undefined && msg.id !== undefined;
    if (isResponse) {
      const key = keyOf(msg.id!);
      if (toolsListIds.delete(key) && msg.result && Array.isArray(msg.result.tools)) {
        send({
          id: msg.id,
          result: { ...msg.result, tools: curatedListing(msg.result.tools as Array<Record<string, unknown>>) },
        });
        return;
      }
      if (calls.settleLate(key)) return;
      const call = calls.get(key);
      if (call) {
        calls.close(call);
        if (call.job) finishJob(call, msg);
        else toClient(raw);
        return;
      }
      toClient(raw);
      return;
    }
    if (msg.method === 'codex/event') {
      const meta = msg.params?._meta as { requestId?: JsonRpcId; threadId?: string } | undefined;
      const call = meta?.requestId !== undefined ? calls.get(keyOf(meta.requestId)) : undefined;
      const event = (msg.params?.msg ?? {}) as Record<string, unknown>;
      if (call) {
        call.lastActivityAt = Date.now();
        call.entry.lastActivityAt = call.lastActivityAt;
        call.touch();
        const threadId =
          meta?.threadId ?? (event.type === 'session_configured' ? (event.thread_id as string) : undefined);
        if (threadId && !call.threadId) {
          call.threadId = threadId;
          call.entry.threadId = threadId;
          if (call.entry.cwd) threadCwds.set(threadId, { cwd: call.entry.cwd, sandbox: call.entry.sandbox });
          if (call.job) {
            const jobId = call.job.jobIds.jobId;
            if (jobId) jobThreads.set(jobId, threadId);
            call.job.queue.push({ kind: 'session', id: threadId });
          }
        }
        if (isTypedUnauthorized(event)) {
          // The typed event is replaced by one structured tool error; new turns are refused from now on.
          authInvalidated = true;
          if (call.job) {
            endJob(call.job, {
              kind: 'end',
              outcome: 'failed',
              error: `${AUTH_INVALIDATED_CODE}: ${authFailure().message}`,
            });
          } else send({ id: call.id, result: authErrorResult(call.threadId) });
          calls.suppress(call, { abandoned: false, stopAsked: false });
          return;
        }
        if (event.type === 'turn_aborted' && call.cancelTimer) {
          // Codex confirms a cancel with turn_aborted and, as MCP asks, sends no response for the cancelled request.
          // The job ends once the commands the turn left running are stopped, so a cancel answered means work stopped.
          calls.close(call);
          const stopped = stopCommands(call.threadId, call.commandsBefore);
          const job = call.job;
          if (job) {
            void stopped.then(() => endJob(job, { kind: 'end', outcome: 'cancelled', acknowledged: true }));
            return;
          }
          toClient(raw);
          return;
        }
        const status = statusOf(event);
        if (status) {
          call.lastProgressAt = Date.now();
          call.progress.send(status);
          call.job?.queue.push({ kind: 'status', text: status });
        }
        if (
          call.job &&
          event.type === 'agent_message' &&
          event.phase === 'commentary' &&
          typeof event.message === 'string'
        )
          call.job.queue.push({ kind: 'commentary', text: stripTerminalControls(event.message) });
        if (event.type === 'task_complete') {
          // Terminal result recovery: answer for Codex if its own response does not follow within the grace.
          calls.expectResponse(call, typeof event.last_agent_message === 'string' ? event.last_agent_message : '');
        }
        if (call.job) return;
      } else if (meta?.requestId !== undefined) {
        // A call closed locally (deadline, abandoned cancel) that Codex has now aborted: no response will follow.
        if (event.type === 'turn_aborted') calls.settleLate(keyOf(meta.requestId));
        if (String(meta.requestId).startsWith(JOB_REQUEST_PREFIX)) return;
      }
      toClient(raw);
      return;
    }
    if (msg.method !== undefined && msg.id !== undefined) {
      // A server request (e.g. an approval elicitation) for a job's private call is declined; others go to the client.
      const related = (msg.params as { _meta?: { requestId?: JsonRpcId } } | undefined)?._meta?.requestId;
      if (related !== undefined && String(related).startsWith(JOB_REQUEST_PREFIX)) {
        toCodex(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { action: 'decline' } }));
        return;
      }
    }
    toClient(raw);
  };

  codex.child.stdout?.on('data', (d: Buffer) => {
    codexMidFrame = d.length > 0 && d[d.length - 1] !== 10;
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
