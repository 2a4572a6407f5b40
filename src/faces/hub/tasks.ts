// The hub's durable tasks as MCP Tasks (rule: mcp-tasks-extension). A negotiating client's agent_run or agent_continue
// becomes an MCP task that IS the baton round it started: the id is the baton task id (`t-…`, round 1) or
// `t-…/<round>` for a continued round, states come from the same store, tasks/cancel is agent_cancel, tasks/get
// long-polls like agent_wait, and the completed result is the round's answer. Nothing is kept besides the store, so a
// task survives a hub restart like every baton task.
import { type Engine, EngineError, MAX_EVENT_PAGE, type StatusView } from '../../core/engine.ts';
import { isTerminal, type TaskEvent, type TaskState } from '../../core/task.ts';
import { cutCodePoints } from '../../lib/chars.ts';
import type { TaskBackend, TaskSnapshot } from '../mcp-tasks.ts';
import { type CallToolResult, requestCanElicit } from '../mcp-tools.ts';
import { applyApprovalAnswers, approvalElicitation } from './approval-input.ts';

/** The answer a completed task carries is at most this many result pages (agent_result pages the rest). */
const RESULT_PAGES = 8;
const STATUS_MESSAGE_CODE_POINTS = 300;
const TASK_TOOLS = new Set(['agent_run', 'agent_continue']);

export function hubTaskBackend(engine: Engine, caller: string): TaskBackend {
  /** The last event seen of each task being polled, so a poll reads only what is new. */
  const cursors = new Map<string, { seq: number; message?: string }>();

  const parse = (mcpId: string) => {
    const m = /^(t-[A-Za-z0-9_-]{1,64})(?:\/([1-9][0-9]{0,8}))?$/.exec(mcpId);
    return m ? { id: m[1]!, n: m[2] ? Number(m[2]) : 1 } : undefined;
  };

  /** The task's status and the description of its newest event; undefined when it is not this caller's. */
  const read = (id: string) => {
    let view: StatusView;
    const cursor = cursors.get(id) ?? { seq: 0 };
    let newest: TaskEvent | undefined;
    try {
      view = engine.status(caller, id, cursor.seq, MAX_EVENT_PAGE);
      newest = newestTelling(view.events);
      // Only a working task reports its newest event; a finished one answers without reading the rest.
      while (view.hasMore && !isTerminal(view.state)) {
        view = engine.status(caller, id, view.nextCursor, MAX_EVENT_PAGE);
        newest = newestTelling(view.events) ?? newest;
      }
      // A status page gives `message` events without their text (rule: event-pages): read the one to show.
      if (newest?.kind === 'message' && newest.text === undefined)
        newest = engine.status(caller, id, newest.seq - 1, 1, { messageText: true }).events[0] ?? newest;
    } catch (err) {
      if (err instanceof EngineError && err.code === 'not_found') return undefined;
      throw err;
    }
    cursor.message = (newest && describe(newest)) ?? cursor.message;
    cursor.seq = view.nextCursor;
    if (isTerminal(view.state)) cursors.delete(id);
    else cursors.set(id, cursor);
    return { view, message: cursor.message };
  };

  /** The task, its round and what it says now; undefined when no such round of this caller's exists. */
  const locate = (mcpId: string) => {
    const ref = parse(mcpId);
    const got = ref ? read(ref.id) : undefined;
    const round = got?.view.rounds[ref!.n - 1];
    return got && round ? { ...ref!, ...got, round } : undefined;
  };

  /** `canElicit`: the requester declared form elicitation, so a permission request is put to it (rule: approvals). */
  const snapshot = (mcpId: string, canElicit = false): TaskSnapshot | undefined => {
    const at = locate(mcpId);
    if (!at) return undefined;
    const { view, round, id, n } = at;
    const base = {
      taskId: mcpId,
      createdAt: n === 1 ? view.createdAt : (round.startedAt ?? view.updatedAt),
      lastUpdatedAt: round.endedAt ?? view.updatedAt,
    };
    const state = n === view.round ? view.state : round.state;
    const waiting = n === view.round ? view.waiting : undefined;
    if (waiting && canElicit) {
      const inputRequests = { [waiting.requestId]: approvalElicitation(id, waiting) };
      return {
        ...base,
        status: 'input_required',
        statusMessage: `waiting for a decision: ${waiting.what}`,
        inputRequests,
      };
    }
    if (waiting) {
      const statusMessage = `waiting for a decision: ${waiting.what} (agent_respond with requestId ${waiting.requestId})`;
      return { ...base, status: 'working', statusMessage };
    }
    if (!isTerminal(state)) return { ...base, status: 'working', statusMessage: at.message ?? state };
    if (state === 'cancelled') return { ...base, status: 'cancelled', statusMessage: round.error ?? 'cancelled' };
    return { ...base, status: 'completed', result: answer(engine, caller, id, n, state, round.error) };
  };

  return {
    start(call, extra) {
      if (!TASK_TOOLS.has(call.tool.name)) return undefined;
      return (async () => {
        // The tool itself admits the work, so refusals and -32602 are exactly those of the plain call.
        const res = (await call.tool.handler(call.args, extra)) as CallToolResult;
        const view = res.structuredContent as { taskId?: string; round?: number } | undefined;
        if (res.isError || !view?.taskId) return { result: res };
        const n = call.tool.name === 'agent_run' ? 1 : (view.round ?? 1);
        const task = snapshot(n === 1 ? view.taskId : `${view.taskId}/${n}`);
        return task ? { task } : { result: res };
      })();
    },

    async get(mcpId, holdMs, signal, ctx) {
      const canElicit = requestCanElicit(ctx);
      const first = snapshot(mcpId, canElicit);
      const ref = parse(mcpId);
      // A task that needs input answers at once, so the requester can give it.
      if (first?.status !== 'working' || !ref || holdMs <= 0 || signal.aborted) return first;
      // Wakes at the task's next event or its end, like agent_wait; an event past any cursor means "anything new".
      await engine.wait(caller, ref.id, Number.MAX_SAFE_INTEGER, holdMs, signal).catch(() => {});
      return snapshot(mcpId, canElicit);
    },

    update(mcpId, inputResponses) {
      const at = locate(mcpId);
      if (!at) return false;
      if (at.n === at.view.round) applyApprovalAnswers(engine, caller, [at.id], inputResponses);
      return true;
    },

    cancel(mcpId) {
      const at = locate(mcpId);
      if (!at) return false;
      if (at.n === at.view.round && !isTerminal(at.view.state)) engine.cancel(caller, at.id);
      return true;
    },
  };
}

/** The completed round's answer as a tool result: failed and interrupted rounds are tool errors, not protocol ones. */
function answer(
  engine: Engine,
  caller: string,
  id: string,
  n: number,
  state: TaskState,
  error: string | null,
): CallToolResult {
  let text = '';
  let offset = 0;
  let done = false;
  for (let i = 0; i < RESULT_PAGES && !done; i++) {
    const page = engine.result(caller, id, offset, n);
    if (page.available) {
      text += page.text;
      offset = page.nextOffset;
    }
    done = !page.available || page.done;
  }
  const more = done ? {} : { nextOffset: offset };
  const structured = { taskId: id, round: n, state, text, done, ...more, ...(error ? { error } : {}) };
  const failed = state !== 'succeeded';
  const shown = failed ? [error ?? `the round ended ${state}`, text].filter(Boolean).join('\n\n') : text;
  const tail = done
    ? ''
    : `\n\n[answer continues: agent_result with taskId "${id}" and offset ${structured.nextOffset}]`;
  return {
    content: [{ type: 'text', text: `${shown}${tail}` }],
    structuredContent: structured,
    ...(failed ? { isError: true } : {}),
  };
}

/** The newest event that says something to a reader (session and usage events do not). */
function newestTelling(events: TaskEvent[]): TaskEvent | undefined {
  for (let i = events.length - 1; i >= 0; i--) if (describe(events[i]!)) return events[i];
  return undefined;
}

/** One line saying what the task is doing, from one event. */
function describe(event: TaskEvent): string | undefined {
  const e = event as Record<string, unknown>;
  if (e.kind === 'session' || e.kind === 'usage') return undefined;
  const line =
    e.kind === 'lifecycle'
      ? String(e.state)
      : e.kind === 'tool'
        ? `tool ${String(e.family ?? '')} ${String(e.phase ?? '')}`.replace(/\s+/g, ' ').trim()
        : e.kind === 'permission'
          ? `permission ${String(e.decision)}: ${String(e.what)}`
          : e.kind === 'error'
            ? `error: ${String(e.message)}`
            : typeof e.text === 'string'
              ? e.text
              : String(e.kind);
  return cutCodePoints(line, STATUS_MESSAGE_CODE_POINTS);
}
