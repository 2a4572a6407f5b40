// Background jobs on the legacy path: each job's turn is a private tools/call on the same `codex mcp-server`, never
// shown to the client (its id starts with JOB_REQUEST_PREFIX). The job table runs that turn as a round (deadlines,
// result cap, one end); this file turns the private call into the turn's events and its native answer into its end.
import { randomUUID } from 'node:crypto';
import type { Agent, AgentEvent, AgentSession } from '../../../agents/agent.ts';
import { EventQueue } from '../../../agents/event-queue.ts';
import { DeadlineExceededError } from '../../../core/deadlines.ts';
import { redact } from '../../../lib/redact.ts';
import type { CallArgs } from './app-server.ts';
import { type CallMeta, endJob, type JobSide, type LegacyCall, type LegacyCalls } from './legacy-calls.ts';
import type { Message } from './legacy-frames.ts';

/** Request ids of the jobs' private calls; server requests and events about them never reach the client. */
export const JOB_REQUEST_PREFIX = 'baton-job-';

export interface JobAgentDeps {
  calls: LegacyCalls;
  /** The native arguments and the peek metadata of a curated call. */
  nativeArgs(args: CallArgs): { native: Record<string, unknown>; meta: CallMeta };
  toCodex(line: string): void;
}

/** An Agent whose one turn is the private call for `args`; `jobIds.jobId` is filled in once the job exists. */
export function legacyJobAgent(deps: JobAgentDeps, args: CallArgs, jobIds: { jobId?: string }): Agent {
  return {
    name: 'codex',
    kind: 'codex',
    probe: async () => ({ name: 'codex', kind: 'codex', available: true }),
    async openSession(sessionOpts): Promise<AgentSession> {
      return {
        id: args.threadId,
        close: async () => {},
        turn(_prompt, turnOpts) {
          const queue = new EventQueue<AgentEvent>();
          const { native, meta } = deps.nativeArgs(args);
          const id = `${JOB_REQUEST_PREFIX}${randomUUID()}`;
          const job: JobSide = {
            queue,
            cancelRequested: false,
            jobIds,
            ...(sessionOpts.onActivity ? { onActivity: sessionOpts.onActivity } : {}),
          };
          const call = deps.calls.start(id, meta, undefined, job);
          deps.toCodex(
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
              if (!deps.calls.has(call)) return;
              // A cancel or an expired deadline of the job's round: Codex is asked to stop and must confirm it.
              job.cancelRequested = true;
              const reason = turnOpts.signal.reason;
              deps.toCodex(
                JSON.stringify({
                  jsonrpc: '2.0',
                  method: 'notifications/cancelled',
                  params: {
                    requestId: id,
                    ...(reason instanceof DeadlineExceededError ? { reason: reason.message } : {}),
                  },
                }),
              );
              deps.calls.awaitCancel(call);
            },
            { once: true },
          );
          return queue;
        },
      };
    },
  };
}

/** Codex's native response to a job's private call ends the job's turn. */
export function finishJob(call: LegacyCall, msg: Message): void {
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
  if (job.cancelRequested) endJob(job, { kind: 'end', outcome: 'cancelled', acknowledged: true });
  else if (msg.error || result.isError)
    endJob(job, { kind: 'end', outcome: 'failed', error: redact(text || 'Codex reported an error') });
  else endJob(job, { kind: 'message', text }, { kind: 'end', outcome: 'succeeded' });
}
