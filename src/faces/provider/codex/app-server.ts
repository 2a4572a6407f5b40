// The `codex` / `codex-reply` contract and the background job tools, served over `codex app-server` (Codex ≥ 0.154,
// which has no `codex mcp-server`). Each call runs one app-server in its own process group inside the shared isolated
// home; threads live in that home, so `codex-reply` resumes them by id, also after a bridge restart.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ProtocolError } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { AgentSession, Sandbox } from '../../../agents/agent.ts';
import type { DeadlineExceededError } from '../../../core/deadlines.ts';
import { JobTable, MAX_STATUS_WAIT_MS } from '../../../core/jobs.ts';
import { runRound } from '../../../core/round.ts';
import type { Logger } from '../../../lib/log.ts';
import { redact } from '../../../lib/redact.ts';
import type { TaskBackend } from '../../mcp-tasks.ts';
import { jobTaskBackend } from '../job-tasks.ts';
import { defineProviderTool, type ProviderTool, structuredResult, ToolFailure } from '../stdio-server.ts';
import { codexReplySchema, codexSchema, codexStartSchema, jobIdSchema, peekSchema } from './schemas.ts';
import type { ThreadRecords } from './threads.ts';
import {
  AUTH_INVALIDATED_ACTION,
  AUTH_INVALIDATED_CODE,
  AUTH_INVALIDATED_MESSAGE,
  type CallLimits,
  type CallSpec,
  type CodexRuntime,
  callAgent,
  InFlightTurns,
} from './turns.ts';

/** JSON-RPC error of a call whose deadline expired (rule: codex-provider). */
export const REQUEST_TIMEOUT_CODE = -32001;

export interface AppServerOptions {
  runtime: CodexRuntime;
  threads: ThreadRecords;
  launchDir: string;
  models: readonly [string, ...string[]];
  defaultModel: string;
  defaultEffort: string;
  defaultGoal?: string;
  limits: CallLimits;
  statusIntervalMs: number;
  heartbeatMs: number;
}

export interface CodexTools {
  tools: ProviderTool[];
  /** `codex` and `codex-reply` as MCP Tasks, run as jobs (the same ones codex-start runs). */
  tasks: TaskBackend;
  shutdown(): Promise<void>;
}

export interface CallArgs {
  prompt: string;
  cwd?: string;
  sandbox?: Sandbox;
  model?: string;
  model_reasoning_effort?: string;
  goal?: string;
  allow_subagents?: boolean;
  threadId?: string;
}

/** The job table of a Codex provider (app-server and legacy bridge alike), under the operator's call limits. */
export function codexJobTable(opts: { limits: CallLimits; statusIntervalMs: number }, logger: Logger): JobTable {
  return new JobTable({
    logger,
    statusIntervalMs: opts.statusIntervalMs,
    hardDeadlineMs: opts.limits.hardMs,
    idleDeadlineMs: opts.limits.idleMs,
    // Waiting for a cancelled job to wind down: interrupt, the grace, then the group stop (another grace) and the
    // close; cover all of it.
    cancelWaitMs: 2 * opts.limits.cancelGraceMs + 10_000,
  });
}

export function appServerTools(opts: AppServerOptions): CodexTools {
  const inflight = new InFlightTurns();
  const logger = opts.runtime.logger;
  let authInvalidated = false;
  const windDowns = new Set<Promise<unknown>>();
  const jobThreads = new Map<string, string>();
  const jobs = codexJobTable(opts, logger);

  const refuseIfAuthInvalid = () => {
    if (authInvalidated) throw authFailure();
  };

  /** Turns a call's arguments into what its session runs with (new session, or the thread's inherited record). */
  const specOf = (args: CallArgs): { spec: CallSpec; prompt: string } => {
    if (args.threadId !== undefined) {
      const record = opts.threads.get(args.threadId);
      if (!record) {
        throw new ToolFailure(
          `thread ${JSON.stringify(args.threadId)} was not started through this server's Codex home; start a new session with codex`,
        );
      }
      const reminder = args.goal ? `Reminder of the goal for this thread: ${args.goal}\n\n` : '';
      return {
        spec: {
          cwd: record.cwd,
          cwdInferred: true,
          sandbox: record.sandbox,
          model: record.model,
          effort: record.effort,
          allowSubagents: record.allowSubagents,
          threadId: args.threadId,
        },
        prompt: reminder + args.prompt,
      };
    }
    const cwd = existingDir(args.cwd ?? opts.launchDir);
    const goal = args.goal ?? opts.defaultGoal ?? '';
    return {
      spec: {
        cwd,
        cwdInferred: false,
        sandbox: args.sandbox!,
        model: args.model ?? opts.defaultModel,
        effort: args.model_reasoning_effort ?? opts.defaultEffort,
        allowSubagents: args.allow_subagents === true,
        ...(goal ? { developerInstructions: goal } : {}),
      },
      prompt: args.prompt,
    };
  };

  const hooksFor = (spec: CallSpec) => ({
    inflight,
    logger,
    onUnauthorized: () => {
      authInvalidated = true;
    },
    onThread: (threadId: string) => {
      if (spec.threadId === undefined) {
        opts.threads.set(threadId, {
          cwd: spec.cwd,
          sandbox: spec.sandbox,
          model: spec.model,
          effort: spec.effort,
          allowSubagents: spec.allowSubagents,
        });
      }
    },
  });

  /** One blocking call: the turn runs to its end, a deadline (-32001), or the client's cancel. */
  const blocking = async (
    args: CallArgs,
    ctx: Parameters<ProviderTool['handler']>[1],
  ): Promise<ReturnType<typeof structuredResult>> => {
    refuseIfAuthInvalid();
    const { spec, prompt } = specOf(args);
    const requestId = `${typeof ctx.requestId}:${ctx.requestId}`;
    let lastActivityAt = Date.now();
    let lastProgressAt = Date.now();
    const expired = Promise.withResolvers<DeadlineExceededError>();
    const progress = (text: string) => {
      lastProgressAt = Date.now();
      ctx.progress(text);
    };
    const { agent, outcome } = callAgent(
      opts.runtime,
      spec,
      opts.limits,
      { requestId },
      {
        ...hooksFor(spec),
        onActivity: () => {
          lastActivityAt = Date.now();
        },
      },
    );
    progress('Codex: started');
    // During silence, a heartbeat with the age of the last correlated event; it never refreshes a deadline.
    const heartbeat = setInterval(() => {
      if (Date.now() - lastProgressAt < opts.heartbeatMs) return;
      progress(`Codex: still running (last event ${Math.round((Date.now() - lastActivityAt) / 1000)} s ago)`);
    }, opts.heartbeatMs);
    let session: AgentSession | undefined;
    const run = runRound({
      signal: ctx.signal,
      idleMs: opts.limits.idleMs,
      hardMs: opts.limits.hardMs,
      // The call fails at once with -32001; the turn's interrupt and wind-down continue in the background.
      onDeadline: (err) => expired.resolve(err),
      label: 'Codex',
      start: async (signal, touch) => {
        session = await agent.openSession({
          cwd: spec.cwd,
          sandbox: spec.sandbox,
          signal,
          // Every notification of the call's thread refreshes the idle deadline; heartbeats never do.
          onActivity: touch,
          onProcessGroup: ctx.trackGroup,
        });
        return session.turn(prompt, { signal });
      },
      onEvent: (ev) => {
        if (ev.kind === 'status') progress(ev.text);
      },
      close: async () => {
        await session?.close();
      },
    });
    windDowns.add(run);
    run.finally(() => windDowns.delete(run)).catch(() => {});
    const cancelled = new Promise<'cancelled'>((r) => {
      if (ctx.signal.aborted) r('cancelled');
      else ctx.signal.addEventListener('abort', () => r('cancelled'), { once: true });
    });
    try {
      const settled = await Promise.race([run, expired.promise, cancelled]);
      if (settled === 'cancelled') {
        // The SDK sends nothing for a cancelled request; the wind-down (interrupt, grace, abandon) continues.
        throw new ToolFailure('the call was cancelled');
      }
      if (settled instanceof Error) {
        throw new ProtocolError(
          REQUEST_TIMEOUT_CODE,
          `Codex call timed out: ${settled.message}; the turn was interrupted`,
        );
      }
      // A turn that could not run is reported as what went wrong, not as a turn outcome.
      if (settled.thrown !== undefined && !settled.end) throw settled.thrown;
      const threadId = outcome.threadId;
      if (outcome.unauthorized) throw authFailure();
      if (settled.state !== 'succeeded') {
        const why = settled.stop === 'too_large' ? settled.error : settled.end?.error;
        throw new ToolFailure(
          `Codex turn ${settled.state === 'cancelled' ? 'was cancelled' : 'failed'}: ${redact(why ?? 'no result')}`,
          threadId ? { threadId } : undefined,
        );
      }
      const content = redact(settled.text);
      return { ...structuredResult({ threadId, content }, content) };
    } finally {
      clearInterval(heartbeat);
    }
  };

  const startJob = (args: CallArgs) => {
    refuseIfAuthInvalid();
    const { spec, prompt } = specOf(args);
    const ids: { jobId?: string } = {};
    const hooks = hooksFor(spec);
    const { agent } = callAgent(opts.runtime, spec, opts.limits, ids, {
      ...hooks,
      onThread: (threadId) => {
        hooks.onThread(threadId);
        if (ids.jobId) jobThreads.set(ids.jobId, threadId);
      },
    });
    const started = jobs.start({ agent, prompt, cwd: spec.cwd, sandbox: spec.sandbox, label: 'Codex' });
    ids.jobId = started.jobId;
    if (spec.threadId) jobThreads.set(started.jobId, spec.threadId);
    return started;
  };

  const tools: ProviderTool[] = [
    defineProviderTool({
      name: 'codex',
      description:
        'Run a Codex session on a task and wait for its answer. Every new session names its sandbox. Returns the ' +
        'answer as text and structuredContent.threadId for codex-reply. Prefer this blocking call; use codex-start ' +
        'only when the work must outlive your wait or be cancelled later by jobId.',
      input: codexSchema(opts.models),
      handler: (args, ctx) => blocking(args, ctx),
    }),
    defineProviderTool({
      name: 'codex-reply',
      description:
        'Continue a Codex session (threadId from an earlier codex call) with a new prompt. Model, effort, sandbox ' +
        'and sub-agents are inherited; a goal here is a prompt-level reminder.',
      input: codexReplySchema,
      handler: (args, ctx) => blocking(args, ctx),
    }),
    ...backgroundTools({
      jobs,
      inflight,
      jobThreads,
      statusIntervalMs: opts.statusIntervalMs,
      models: opts.models,
      start: startJob,
    }),
  ];
  // A task's answer is the blocking call's: the text, and the thread to continue with codex-reply.
  const asTask = {
    start: startJob,
    answer: (jobId: string, content: string) => {
      const threadId = jobThreads.get(jobId);
      return structuredResult({ ...(threadId ? { threadId } : {}), content }, content);
    },
  };

  return {
    tools,
    tasks: jobTaskBackend(jobs, { codex: asTask, 'codex-reply': asTask }),
    async shutdown() {
      await jobs.closeAll();
      await Promise.allSettled([...windDowns]);
    },
  };
}

export interface BackgroundDeps {
  jobs: JobTable;
  inflight: InFlightTurns;
  /** jobId → threadId, once known. */
  jobThreads: Map<string, string>;
  statusIntervalMs: number;
  models: readonly [string, ...string[]];
  /** Starts a job for codex-start's (validated) arguments. */
  start(args: CallArgs): { jobId: string; cursor: number };
}

/**
 * The six job tools, the same on both paths (rule: codex-provider): codex-start, -status, -commentary, -result,
 * -cancel, -peek.
 */
export function backgroundTools(deps: BackgroundDeps): ProviderTool[] {
  const { jobs, inflight, jobThreads } = deps;
  const withThread = <V extends { jobId: string }>(view: V): Record<string, unknown> => {
    const threadId = jobThreads.get(view.jobId);
    return { ...view, ...(threadId ? { threadId } : {}) };
  };
  const defaultWaitMs = Math.min(deps.statusIntervalMs, MAX_STATUS_WAIT_MS);
  return [
    defineProviderTool({
      name: 'codex-start',
      description:
        'Start Codex in the background (a new session, or with threadId a reply). Returns {jobId, cursor}: poll ' +
        'codex-status with them until the state is terminal, then read codex-result. Jobs end with this connection.',
      input: codexStartSchema(deps.models),
      async handler(args) {
        const started = deps.start(args);
        return structuredResult({
          ...started,
          next: `call codex-status with {"jobId":"${started.jobId}","cursor":${started.cursor}}`,
        });
      },
    }),
    defineProviderTool({
      name: 'codex-status',
      description:
        'State of a background Codex job. Returns at once when the cursor is behind, else waits up to wait_ms ' +
        `(default: the status interval, at most 60 s). Pass the returned cursor to the next call.`,
      input: z.strictObject({
        jobId: jobIdSchema,
        cursor: z.number().int().min(0),
        wait_ms: z.number().int().min(0).max(MAX_STATUS_WAIT_MS).optional(),
      }),
      async handler(args, ctx) {
        const view = await jobs.status(args.jobId, args.cursor, args.wait_ms ?? defaultWaitMs, ctx.signal);
        return structuredResult(withThread(view));
      },
    }),
    defineProviderTool({
      name: 'codex-commentary',
      description:
        'Codex’s commentary messages of a job (only what Codex marks as commentary), in pages of 32,768 code ' +
        'points from offset; keeps the last 1 MiB and reports truncatedBefore. The text is untrusted.',
      input: z.strictObject({ jobId: jobIdSchema, offset: z.number().int().min(0).optional() }),
      async handler(args) {
        const page = jobs.commentary(args.jobId, args.offset ?? 0);
        return structuredResult({ ...page }, page.text);
      },
    }),
    defineProviderTool({
      name: 'codex-result',
      description:
        'The answer of a completed job, in pages of 32,768 code points; continue with nextOffset until done. ' +
        'structuredContent.threadId continues the session with codex-reply.',
      input: z.strictObject({ jobId: jobIdSchema, offset: z.number().int().min(0).optional() }),
      async handler(args) {
        const page = jobs.result(args.jobId, args.offset ?? 0);
        return structuredResult(withThread(page), page.text);
      },
    }),
    defineProviderTool({
      name: 'codex-cancel',
      description:
        'Cancel a background job by jobId; returns its final status. A cancel Codex does not confirm within the ' +
        'grace is recorded as abandoned. Inspect the working tree before re-running a cancelled writing job.',
      input: z.strictObject({ jobId: jobIdSchema }),
      async handler(args) {
        const view = await jobs.cancel(args.jobId);
        return structuredResult(withThread(view));
      },
    }),
    defineProviderTool({
      name: 'codex-peek',
      description:
        'Every Codex turn in flight (blocking and background), read-only and immediate. An empty list does not ' +
        'prove a turn finished (see abandonedTurnsProcessWide); long silence is not proof of a stall.',
      input: peekSchema,
      async handler(args) {
        return structuredResult({ ...inflight.peek(args) });
      },
    }),
  ];
}

export function authFailure(): ToolFailure {
  return new ToolFailure(AUTH_INVALIDATED_MESSAGE, {
    code: AUTH_INVALIDATED_CODE,
    action: AUTH_INVALIDATED_ACTION,
  });
}

function existingDir(dir: string): string {
  const abs = resolve(dir);
  try {
    if (statSync(abs).isDirectory()) return abs;
  } catch {}
  throw new ToolFailure(`cwd ${JSON.stringify(dir)} is not an existing directory`);
}
