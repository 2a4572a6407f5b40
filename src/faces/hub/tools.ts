import { z } from 'zod';
import { DECISIONS } from '../../core/approvals.ts';
import {
  DEFAULT_EVENT_PAGE,
  type Engine,
  EVENT_PAGE_TEXT_CODE_POINTS,
  InvalidArgumentError,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  MAX_WAIT_TASKS,
} from '../../core/engine.ts';
import { RESULT_PREVIEW_CODE_POINTS } from '../../core/store.ts';
import type { AgentsView } from '../../core/views.ts';
import { NEWS_LINGER_MS } from '../../core/waiters.ts';
import { toolErrorResult } from '../errors.ts';
import { defineTool, inputRequired, jsonResult, requestCanElicit, type ToolDef } from '../mcp-tools.ts';
import { applyApprovalAnswers, approvalInputRequests } from './approval-input.ts';

/**
 * A prompt is at most this many Unicode code points, the unit zod's `max` and JSON Schema's `maxLength` count (and the
 * unit results are paged in): 262,144 astral characters pass, one more does not.
 */
export const MAX_PROMPT_LENGTH = 262_144;
export const MAX_KEY_LENGTH = 200;
const MAX_PATH_LENGTH = 4_096;

const taskId = z.string().min(1).max(100).describe('The task id returned by agent_run.');
const prompt = z.string().min(1, 'prompt must not be empty').max(MAX_PROMPT_LENGTH);
const idempotencyKey = z
  .string()
  .min(1)
  .max(MAX_KEY_LENGTH)
  .describe('A key unique to this request; retrying with the same key and payload returns the same task.');
const cursor = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** The schema's ceiling is the config's own for limits.hardTimeoutMs (7 days); the engine checks the operator's. */
const timeoutSeconds = z
  .number()
  .int()
  .min(1)
  .max(604_800)
  .optional()
  .describe(
    "The round's hard deadline in seconds, at most the operator's limit (a larger value is refused, naming the limit).",
  );

/**
 * The event-page text budget as descriptions show it ("8,192"). Grouped by hand: toLocaleString would fault in ICU's
 * locale data, about 6 MiB of the daemon's resident memory, for one comma.
 */
const PAGE_TEXT = String(EVENT_PAGE_TEXT_CODE_POINTS).replace(/\B(?=(\d{3})+$)/g, ',');

/** What every view's `result` says (rule: whole-preview), so a client knows when agent_result is not needed. */
const WHOLE_PREVIEW = `An ended task's \`result\` gives the answer's length (\`chars\`) and its first ${RESULT_PREVIEW_CODE_POINTS} code points (\`preview\`); when \`complete\` is true the preview is the whole answer and agent_result is not needed.`;

async function guarded(fn: () => unknown | Promise<unknown>, tool?: string) {
  try {
    return jsonResult((await fn()) as Record<string, unknown>);
  } catch (err) {
    // A bad argument only the engine can tell is a schema violation all the same (rule: strict-inputs).
    return toolErrorResult(err, { tool, internalCode: true });
  }
}

/** Where an agent runs: its target's name and what that target fences (`secrets`, `sandbox`, `remote` or `off`). */
export type PlacementOf = (agent: string) => { target: string; fence: string } | undefined;

/** agent_agents' view with each agent's target and fence beside what its probe said. */
function withPlacement(view: AgentsView, placementOf: PlacementOf | undefined): AgentsView {
  if (!placementOf) return view;
  return { ...view, agents: view.agents.map((a) => ({ ...a, ...placementOf(a.name) })) };
}

export function hubTools(engine: Engine, caller: string, placementOf?: PlacementOf): ToolDef[] {
  return [
    defineTool({
      name: 'agent_run',
      description: `Delegate a task to another agent. Returns at once with a taskId (the task usually already running) and nextCursor; follow it with agent_wait, passing nextCursor as \`after\` so the wait answers with what comes next. A short answer comes whole in the wait's \`result\` (\`complete: true\`); read a longer one with agent_result.`,
      input: z
        .object({
          agent: z
            .string()
            .min(1)
            .max(64)
            .optional()
            .describe('Target agent; may be omitted when only one is reachable.'),
          prompt,
          cwd: z.string().min(1).max(MAX_PATH_LENGTH).describe('Absolute directory inside an authorised root.'),
          idempotencyKey,
          isolation: z
            .enum(['none', 'worktree'])
            .optional()
            .describe(
              '"worktree" runs the task in a new git worktree on branch baton/<taskId>; baton never merges it.',
            ),
          model: z.string().min(1).max(128).optional(),
          effort: z.string().min(1).max(32).optional(),
          timeoutSeconds,
        })
        .strict(),
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: true },
      handler: (args) => guarded(() => engine.run(caller, args), 'agent_run'),
    }),
    defineTool({
      name: 'agent_status',
      description: `A glance: state, rounds, result summary, git snapshots and a page of events after \`after\`. Streamed answer text is left out: a \`message\` event says only how long it is (\`chars\`); agent_wait gives the text as it streams, agent_result the answer so far. A page ends early (hasMore) once its events carry ${PAGE_TEXT} code points of text. ${WHOLE_PREVIEW}`,
      input: z
        .object({ taskId, after: cursor.optional(), limit: z.number().int().min(1).max(MAX_EVENT_PAGE).optional() })
        .strict(),
      annotations: { readOnlyHint: true },
      handler: (args) => guarded(() => engine.status(caller, args.taskId, args.after, args.limit)),
    }),
    defineTool({
      name: 'agent_wait',
      description: `Wait (at most ${MAX_WAIT_MS / 1000} s) for events after \`after\` or a terminal state; pass the returned nextCursor next time. A page holds at most ${DEFAULT_EVENT_PAGE} events and ${PAGE_TEXT} code points of event text (streamed answer text included); hasMore says more is there now. A state change answers at once; other news up to ${NEWS_LINGER_MS} ms after it came, so news that comes together is one answer. ${WHOLE_PREVIEW} To wait on several tasks at once, give \`tasks\` (up to ${MAX_WAIT_TASKS}, each with its own cursor) instead of taskId/after: it returns when any has events after its cursor (\`ready\` names them) or all have ended.`,
      input: z
        .object({
          taskId: taskId.optional(),
          after: cursor.optional(),
          tasks: z
            .array(z.object({ taskId, after: cursor.optional() }).strict())
            .min(1)
            .max(MAX_WAIT_TASKS)
            .optional()
            .describe('Several tasks, each with the nextCursor last returned for it.'),
          timeoutMs: z.number().int().min(0).max(MAX_WAIT_MS).optional(),
        })
        .strict(),
      annotations: { readOnlyHint: true },
      handler: async (args, extra) => {
        // A caller that can be asked through its own input channel is put a permission request its tasks wait for as
        // a form, before the wait and when the wait ends on one (rule: approvals); its answers come with the retry.
        const ids = args.tasks ? args.tasks.map((x) => x.taskId) : args.taskId ? [args.taskId] : [];
        const ask = requestCanElicit(extra.ctx);
        const answers = extra.ctx?.mcpReq.inputResponses;
        const asks = () => (ask ? approvalInputRequests(engine, caller, ids, answers) : undefined);
        if (ask) applyApprovalAnswers(engine, caller, ids, answers);
        const before = asks();
        if (before) return inputRequired(before);
        const res = await guarded(() => {
          const timeout = args.timeoutMs ?? MAX_WAIT_MS;
          if (args.tasks) {
            if (args.taskId !== undefined || args.after !== undefined)
              throw new InvalidArgumentError('tasks: give either tasks or taskId (with after), not both');
            return engine.waitAny(caller, args.tasks, timeout, extra.signal);
          }
          if (args.taskId === undefined) throw new InvalidArgumentError('taskId: required (or give tasks)');
          return engine.wait(caller, args.taskId, args.after, timeout, extra.signal);
        }, 'agent_wait');
        const after = res.isError ? undefined : asks();
        return after ? inputRequired(after) : res;
      },
    }),
    defineTool({
      name: 'agent_result',
      description:
        'The final answer of the latest round, paged in 32,768 code points; pass nextOffset until done. While the round runs it is the answer so far, with partial: true. Not needed once a view of the ended task says `result.complete: true`: its `result.preview` is then the whole answer.',
      input: z.object({ taskId, offset: cursor.optional() }).strict(),
      annotations: { readOnlyHint: true },
      handler: (args) => guarded(() => engine.result(caller, args.taskId, args.offset)),
    }),
    defineTool({
      name: 'agent_continue',
      description:
        'Start another round in the same agent session. Refused while a round is running. Like agent_run, answers with nextCursor to pass to agent_wait as `after`.',
      input: z.object({ taskId, prompt, idempotencyKey, timeoutSeconds }).strict(),
      annotations: { destructiveHint: false, idempotentHint: true, openWorldHint: true },
      handler: (args) => guarded(() => engine.continue(caller, args), 'agent_continue'),
    }),
    defineTool({
      name: 'agent_cancel',
      description:
        'Cancel queued work or stop the running round (the agent is asked first, then its processes stopped).',
      input: z.object({ taskId }).strict(),
      annotations: { destructiveHint: true, idempotentHint: true },
      handler: (args) => guarded(() => engine.cancel(caller, args.taskId)),
    }),
    defineTool({
      name: 'agent_respond',
      description:
        "Answer a permission request a task's round waits for (its view's `waiting`: requestId, kind, what, options, expiresAt). Only the task's own caller may answer; `decision` must be one of the request's options. Unanswered, the request is denied at expiresAt.",
      input: z
        .object({
          taskId,
          requestId: z.string().min(1).max(64).describe("The requestId of the task view's `waiting`."),
          decision: z
            .enum(DECISIONS)
            .describe('allow or deny this once, or for the rest of the agent session (where offered).'),
        })
        .strict(),
      annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: true },
      handler: (args) =>
        guarded(() => engine.respond(caller, args.taskId, args.requestId, args.decision), 'agent_respond'),
    }),
    defineTool({
      name: 'agent_list',
      description: "This caller's tasks, oldest first, paged with a cursor.",
      input: z
        .object({
          cursor: z
            .string()
            .min(1)
            .max(64)
            .optional()
            .describe('The nextCursor of the previous page; opaque and valid only for this caller.'),
          limit: z.number().int().min(1).max(MAX_LIST_PAGE).optional(),
        })
        .strict(),
      annotations: { readOnlyHint: true },
      handler: (args) => guarded(() => engine.list(caller, args.cursor, args.limit), 'agent_list'),
    }),
    defineTool({
      name: 'agent_agents',
      description:
        'The agents this caller may name in agent_run: kind, whether installed, version, login state, and the models and efforts they offer where they say so. Spends no inference; probed at most once a minute.',
      input: z.object({}).strict(),
      annotations: { readOnlyHint: true, openWorldHint: false },
      handler: () => guarded(async () => withPlacement(await engine.agentsOf(caller), placementOf), 'agent_agents'),
    }),
  ];
}
