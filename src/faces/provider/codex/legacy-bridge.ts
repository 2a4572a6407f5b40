// The legacy passthrough itself (P-CX legacy path), with its streams injected: the client's frames arrive on
// `clientIn` and leave on `clientOut`, Codex's `codex mcp-server` is spawned as a process group, and ending the bridge
// calls `exit`. legacy.ts binds it to the process; tests create it in-process on their own streams.
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { Agent, AgentEvent, AgentSession, Sandbox } from '../../../agents/agent.ts';
import { childEnv } from '../../../agents/codex/adapter.ts';
import { EventQueue } from '../../../agents/event-queue.ts';
import { DeadlineExceededError } from '../../../core/deadlines.ts';
import { JobTable } from '../../../core/jobs.ts';
import { runRound } from '../../../core/round.ts';
import { readLines } from '../../../lib/jsonl.ts';
import type { Logger } from '../../../lib/log.ts';
import { type ChildGroup, spawnGroup } from '../../../lib/process-group.ts';
import { redact } from '../../../lib/redact.ts';
import { stripTerminalControls } from '../../../lib/text.ts';
import { describeIssues, toolError, toolJsonSchema } from '../../mcp-tools.ts';
import { MAX_CLIENT_FRAME_BYTES, type ProviderTool, progressSender, ToolFailure } from '../stdio-server.ts';
import { authFailure, backgroundTools, type CallArgs } from './app-server.ts';
import { type CodexHomeSettings, prepareProviderHome } from './home.ts';
import {
  authErrorResult,
  isTypedUnauthorized,
  type JsonRpcId,
  keyOf,
  type Message,
  statusOf,
} from './legacy-frames.ts';
import { codexReplySchema, codexSchema } from './schemas.ts';
import { AUTH_INVALIDATED_CODE, type CallLimits, type InFlightEntry, InFlightTurns } from './turns.ts';

/** Late native responses the bridge may be waiting to drop at once; reaching it ends the bridge (P-CX). */
export const MAX_SUPPRESSED_CODEX_RESPONSES = 16;
/** After Codex's task_complete, how long its tools/call response may take before the bridge answers for it. */
export const DEFAULT_TERMINAL_RESPONSE_GRACE_MS = 5_000;
/** Bound of a teardown: Codex's group gets TERM, then KILL after this. */
const TEARDOWN_GRACE_MS = 2_000;
/** Largest native frame accepted from Codex (SE-5). */
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

/** One curated call in flight (the client's, or a job's private one). */
interface LegacyCall {
  id: JsonRpcId;
  key: string;
  entry: InFlightEntry;
  /** Correlated activity: refreshes the idle deadline of the round the call belongs to. */
  touch: () => void;
  /** Ends the client call's own round (its deadlines); a job's round belongs to the job table. */
  endRound: () => void;
  threadId?: string;
  lastAgentMessage?: string;
  terminalTimer?: NodeJS.Timeout;
  cancelTimer?: NodeJS.Timeout;
  heartbeat?: NodeJS.Timeout;
  lastActivityAt: number;
  lastProgressAt: number;
  progress: { send: (message: string) => void; stop: () => void };
  /** Set for a job's private call: events and the answer go to it instead of the client. */
  job?: {
    queue: EventQueue<AgentEvent>;
    cancelRequested: boolean;
    jobIds: { jobId?: string };
    onActivity?: () => void;
  };
}

export function createLegacyBridge(opts: LegacyOptions, streams: LegacyStreams): LegacyBridge {
  const logger = opts.logger;
  const maxSuppressed = opts.maxSuppressed ?? MAX_SUPPRESSED_CODEX_RESPONSES;
  const terminalGraceMs = opts.terminalGraceMs ?? DEFAULT_TERMINAL_RESPONSE_GRACE_MS;
  const home = prepareProviderHome(opts.homeDir, opts.settings, opts.userCodexHome, opts.launchDir);
  const [file, ...prefix] = opts.command;
  const env = childEnv(
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
  const calls = new Map<string, LegacyCall>();
  /** Calls closed locally whose late native response is still to be dropped. */
  const suppressed = new Map<string, { abandoned: boolean; threadId?: string; jobId?: string }>();
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

  const jobs = new JobTable({
    logger,
    statusIntervalMs: opts.statusIntervalMs,
    hardDeadlineMs: opts.limits.hardMs,
    idleDeadlineMs: opts.limits.idleMs,
    cancelWaitMs: 2 * opts.limits.cancelGraceMs + 10_000,
  });

  /** Ends the bridge: bounded stop of Codex's group, then exit (the client reconnects to a new bridge). */
  const teardown = (reason: string, code = 1) => {
    shuttingDown ??= (async () => {
      logger.warn('codex bridge shutting down', { reason });
      for (const c of localRequests.values()) c.abort();
      await Promise.race([jobs.closeAll(), new Promise((r) => setTimeout(r, TEARDOWN_GRACE_MS).unref())]);
      for (const call of calls.values()) closeCall(call);
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

  const closeCall = (call: LegacyCall) => {
    call.endRound();
    clearTimeout(call.terminalTimer);
    clearTimeout(call.cancelTimer);
    clearInterval(call.heartbeat);
    call.progress.stop();
    inflight.remove(call.entry);
    calls.delete(call.key);
  };

  /** Closes a call locally; its native response, if it ever comes, is dropped. */
  const suppress = (call: LegacyCall, abandoned: boolean) => {
    closeCall(call);
    suppressed.set(call.key, { abandoned, threadId: call.threadId, jobId: call.job?.jobIds.jobId });
    if (suppressed.size >= maxSuppressed) {
      void teardown(`${suppressed.size} late Codex responses are pending suppression (MAX_SUPPRESSED_CODEX_RESPONSES)`);
    }
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

  const answerCall = (call: LegacyCall, msg: Record<string, unknown>) => {
    if (call.job) return;
    send({ id: call.id, ...msg });
  };

  const startCall = (
    id: JsonRpcId,
    meta: { cwd?: string; cwdInferred: boolean; sandbox: string; threadId?: string },
    progressToken?: string | number,
    job?: LegacyCall['job'],
  ) => {
    const key = keyOf(id);
    const entry = inflight.add({
      ids: job ? job.jobIds : { requestId: key },
      cwd: meta.cwd,
      cwdInferred: meta.cwdInferred,
      sandbox: meta.sandbox,
      threadId: meta.threadId,
    });
    const call: LegacyCall = {
      id,
      key,
      entry,
      threadId: meta.threadId,
      lastActivityAt: Date.now(),
      lastProgressAt: Date.now(),
      progress: progressSender(progressToken, (params) => send({ method: 'notifications/progress', params })),
      touch: job?.onActivity ?? (() => {}),
      endRound: () => {},
      job,
    };
    calls.set(key, call);
    if (!job) {
      // A client call is a round of its own: its deadlines are runRound's; its answer is Codex's own frame, forwarded
      // as is, so the round carries no events and ends when the call closes.
      const closed = new EventQueue<AgentEvent>();
      call.endRound = () => closed.end();
      void runRound({
        idleMs: opts.limits.idleMs,
        hardMs: opts.limits.hardMs,
        start: (_signal, touch) => {
          call.touch = touch;
          return closed;
        },
        onDeadline: (err) => {
          // That one call fails; Codex is asked to stop; its late answer is dropped; the connection stays up.
          toCodex(
            JSON.stringify({
              jsonrpc: '2.0',
              method: 'notifications/cancelled',
              params: { requestId: id, reason: err.message },
            }),
          );
          send({ id, error: { code: -32001, message: `Codex call timed out: ${err.message}` } });
          suppress(call, false);
          watchMidFrame();
        },
      });
    }
    if (!job && progressToken !== undefined) {
      call.lastProgressAt = Date.now();
      call.progress.send('Codex: started');
      call.heartbeat = setInterval(() => {
        if (Date.now() - call.lastProgressAt < opts.heartbeatMs) return;
        call.lastProgressAt = Date.now();
        call.progress.send(
          `Codex: still running (last event ${Math.round((Date.now() - call.lastActivityAt) / 1000)} s ago)`,
        );
      }, opts.heartbeatMs);
    }
    return call;
  };

  /** Native arguments of a curated call; the caller's choices only, the rest is the server's. */
  const nativeArgs = (args: CallArgs): { native: Record<string, unknown>; meta: Parameters<typeof startCall>[1] } => {
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
  const legacyAgent = (args: CallArgs, jobIds: { jobId?: string }): Agent => ({
    name: 'codex',
    kind: 'codex',
    probe: async () => ({ name: 'codex', kind: 'codex', available: true }),
    async openSession(sessionOpts): Promise<AgentSession> {
      return {
        id: args.threadId,
        close: async () => {},
        turn(_prompt, turnOpts) {
          const queue = new EventQueue<AgentEvent>();
          const { native, meta } = nativeArgs(args);
          const id = `baton-job-${randomUUID()}`;
          const call = startCall(id, meta, undefined, {
            queue,
            cancelRequested: false,
            jobIds,
            ...(sessionOpts.onActivity ? { onActivity: sessionOpts.onActivity } : {}),
          });
          toCodex(
            JSON.stringify({
              jsonrpc: '2.0',
              id,
              method: 'tools/call',
              params: { name: args.threadId ? 'codex-reply' : 'codex', arguments: native },
            }),
          );
          turnOpts.signal.addEventListener(
            'abort',
            () => {
              if (!calls.has(call.key)) return;
              // A cancel or an expired deadline of the job's round: Codex is asked to stop and must confirm it.
              call.job!.cancelRequested = true;
              call.entry.state = 'canceling';
              const reason = turnOpts.signal.reason;
              toCodex(
                JSON.stringify({
                  jsonrpc: '2.0',
                  method: 'notifications/cancelled',
                  params: {
                    requestId: id,
                    ...(reason instanceof DeadlineExceededError ? { reason: reason.message } : {}),
                  },
                }),
              );
              call.cancelTimer = setTimeout(() => abandon(call), opts.limits.cancelGraceMs);
            },
            { once: true },
          );
          return queue;
        },
      };
    },
  });

  const abandon = (call: LegacyCall) => {
    inflight.abandoned++;
    logger.warn('codex: cancel not acknowledged within the grace; turn abandoned', {
      threadId: call.threadId,
      ...(call.job ? { jobId: call.job.jobIds.jobId } : { requestId: call.key }),
    });
    if (call.job) {
      call.job.queue.push({ kind: 'end', outcome: 'cancelled', acknowledged: false });
      call.job.queue.end();
    }
    suppress(call, true);
    watchMidFrame();
  };

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
        agent: legacyAgent(args, jobIds),
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
  const curated = new Map<string, ProviderTool['schema']>([
    ['codex', codexSchema(opts.models)],
    ['codex-reply', codexReplySchema],
  ]);
  const curatedListing = (native: Array<Record<string, unknown>>) => {
    const nativeByName = new Map(native.map((t) => [t.name, t]));
    const described = (name: string, schema: ProviderTool['schema']) => ({
      ...(nativeByName.get(name) ?? {}),
      name,
      inputSchema: toolJsonSchema(schema),
    });
    return [
      described('codex', curated.get('codex')!),
      described('codex-reply', curated.get('codex-reply')!),
      ...localTools.map((t) => ({ name: t.name, description: t.description, inputSchema: toolJsonSchema(t.schema) })),
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
        if (call && !call.job && !call.cancelTimer) {
          call.entry.state = 'canceling';
          call.cancelTimer = setTimeout(() => abandon(call), opts.limits.cancelGraceMs);
        }
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
          code: ErrorCode.InvalidParams,
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
    startCall(id, meta, progressToken);
    toCodex(JSON.stringify({ ...msg, params: { ...msg.params, arguments: native } }));
  };

  const runLocal = async (id: JsonRpcId, tool: ProviderTool, rawArgs: unknown) => {
    const parsed = tool.schema.safeParse(rawArgs);
    if (!parsed.success) {
      send({
        id,
        error: {
          code: ErrorCode.InvalidParams,
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
      const message = redact(err instanceof Error ? err.message : String(err));
      send({ id, result: toolError(message, err instanceof ToolFailure ? err.structured : undefined) });
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
      const late = suppressed.get(key);
      if (late) {
        suppressed.delete(key);
        if (late.abandoned) logAbandonedFinished(late, key);
        return;
      }
      const call = calls.get(key);
      if (call) {
        closeCall(call);
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
            call.job.queue.push({
              kind: 'end',
              outcome: 'failed',
              error: `${AUTH_INVALIDATED_CODE}: ${authFailure().message}`,
            });
            call.job.queue.end();
          } else send({ id: call.id, result: authErrorResult(call.threadId) });
          suppress(call, false);
          return;
        }
        if (event.type === 'turn_aborted' && call.cancelTimer) {
          // Codex confirms a cancel with turn_aborted and, as MCP asks, sends no response for the cancelled request.
          closeCall(call);
          if (call.job) {
            call.job.queue.push({ kind: 'end', outcome: 'cancelled', acknowledged: true });
            call.job.queue.end();
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
          call.lastAgentMessage = typeof event.last_agent_message === 'string' ? event.last_agent_message : '';
          // Terminal result recovery: answer for Codex if its own response does not follow within the grace.
          call.terminalTimer = setTimeout(() => recover(call), terminalGraceMs);
        }
        if (call.job) return;
      } else if (meta?.requestId !== undefined) {
        const key = keyOf(meta.requestId);
        const late = suppressed.get(key);
        if (late && event.type === 'turn_aborted') {
          // A call closed locally (deadline, abandoned cancel) that Codex has now aborted: no response will follow.
          suppressed.delete(key);
          if (late.abandoned) logAbandonedFinished(late, key);
        }
        if (String(meta.requestId).startsWith('baton-job-')) return;
      }
      toClient(raw);
      return;
    }
    if (msg.method !== undefined && msg.id !== undefined) {
      // A server request (e.g. an approval elicitation) for a job's private call is declined; others go to the client.
      const related = (msg.params as { _meta?: { requestId?: JsonRpcId } } | undefined)?._meta?.requestId;
      if (related !== undefined && String(related).startsWith('baton-job-')) {
        toCodex(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { action: 'decline' } }));
        return;
      }
    }
    toClient(raw);
  };

  const logAbandonedFinished = (late: { threadId?: string; jobId?: string }, key: string) =>
    logger.warn('codex: an abandoned turn finished', {
      threadId: late.threadId,
      ...(late.jobId ? { jobId: late.jobId } : { requestId: key }),
    });

  const recover = (call: LegacyCall) => {
    if (!calls.has(call.key)) return;
    const content = redact(call.lastAgentMessage ?? '');
    logger.info('codex: no tools/call response after task completion; answering for Codex', { requestId: call.key });
    if (call.job) {
      call.job.queue.push({ kind: 'message', text: content });
      call.job.queue.push({ kind: 'end', outcome: 'succeeded' });
      call.job.queue.end();
    } else
      answerCall(call, {
        result: { content: [{ type: 'text', text: content }], structuredContent: { threadId: call.threadId, content } },
      });
    suppress(call, false);
  };

  const finishJob = (call: LegacyCall, msg: Message) => {
    const job = call.job!;
    const result = (msg.result ?? {}) as {
      isError?: boolean;
      content?: Array<{ text?: string }>;
      structuredContent?: { content?: unknown };
    };
    const text =
      typeof result.structuredContent?.content === 'string'
        ? result.structuredContent.content
        : (result.content ?? []).map((c) => c.text ?? '').join('');
    if (job.cancelRequested) job.queue.push({ kind: 'end', outcome: 'cancelled', acknowledged: true });
    else if (msg.error || result.isError)
      job.queue.push({ kind: 'end', outcome: 'failed', error: redact(text || 'Codex reported an error') });
    else {
      job.queue.push({ kind: 'message', text });
      job.queue.push({ kind: 'end', outcome: 'succeeded' });
    }
    job.queue.end();
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
    for (const call of [...calls.values()]) {
      if (call.job) {
        call.job.queue.push({ kind: 'end', outcome: 'failed', error: 'Codex exited' });
        call.job.queue.end();
      } else
        send({
          id: call.id,
          error: { code: ErrorCode.InternalError, message: 'Codex exited; reconnect to start a new bridge' },
        });
      closeCall(call);
    }
    void teardown(`codex mcp-server exited (code ${exit.code ?? 'none'}, signal ${exit.signal ?? 'none'})`);
  });
  streams.clientIn.once('end', () => void teardown('stdin closed', 0));
  streams.clientOut.on('error', () => void teardown('stdout broken', 0));
  return { teardown };
}
