// What readers see of tasks (rules: event-cursor, event-pages, paged-results, live-text, hub-tools, free-probes,
// dashboard): a task's status with a page of events, the long-polls over one task or several, a round's answer page by
// page, the lists of tasks, the prompts the operator is shown, and the agents a caller reaches. Nothing here changes a
// task.
import type { Agent, AgentProbe } from '../agents/agent.ts';
import { probeAgent } from '../agents/probe.ts';
import { cutCodePoints } from '../lib/chars.ts';
import { redact, redactDeep } from '../lib/redact.ts';
import type { TaskAccess } from './access.ts';
import {
  DEFAULT_EVENT_PAGE,
  DEFAULT_LIST_PAGE,
  type EngineOptions,
  EVENT_PAGE_TEXT_CODE_POINTS,
  InvalidArgumentError,
  MAX_WAIT_MS,
  MAX_WAIT_TASKS,
  OPERATOR,
  type OverviewView,
  type Reader,
} from './engine-types.ts';
import { pageText, RESULT_PAGE_CODE_POINTS } from './paging.ts';
import { probeGroupRecorder } from './recovery.ts';
import type { Scheduler } from './scheduler.ts';
import type { Store } from './store.ts';
import { isTerminal } from './task.ts';
import { settledLength, type TaskLog } from './task-log.ts';
import {
  type AgentsView,
  type FanInView,
  type ListView,
  type ResultView,
  roundViews,
  type StatusView,
  type TaskView,
  type WaitView,
} from './views.ts';
import type { Waiters } from './waiters.ts';

/** Events per ready task in one agent_wait over several tasks: 16 full pages of message text would be megabytes. */
const FAN_IN_EVENT_PAGE = 25;
/** What agent_agents reports of an agent is probed at most this often (probes spawn the agent's binary). */
const AGENT_PROBE_TTL_MS = 60_000;
/** How much of each task's first prompt the dashboard's list shows and filters on. */
const OVERVIEW_PROMPT_CHARS = 200;
/** Shown prompts are read this much longer than shown, so a credential at the cut is still recognised whole. */
const PROMPT_REDACT_MARGIN = 512;

/**
 * A prompt as the operator is shown it (rule: no-secrets-out): the store keeps the caller's words whole (the agent
 * needs them), but a page never shows a credential quoted in them.
 */
function shownPrompt(text: string, maxChars: number): string {
  return cutCodePoints(redact(text), maxChars);
}

export class TaskReads {
  private readonly opts: EngineOptions;
  private readonly store: Store;
  private readonly log: TaskLog;
  private readonly waiters: Waiters;
  private readonly access: TaskAccess;
  private readonly scheduler: Scheduler;
  /** Recent agent probes for agent_agents, by agent name. */
  private readonly probes = new Map<string, { at: number; probe: Promise<AgentProbe> }>();

  constructor(parts: {
    opts: EngineOptions;
    store: Store;
    log: TaskLog;
    waiters: Waiters;
    access: TaskAccess;
    scheduler: Scheduler;
  }) {
    this.opts = parts.opts;
    this.store = parts.store;
    this.log = parts.log;
    this.waiters = parts.waiters;
    this.access = parts.access;
    this.scheduler = parts.scheduler;
  }

  /**
   * A glance at a task (rule: event-pages): its rounds and a page of events whose `message` events come without their
   * text (`chars` instead; agent_wait carries the text, agent_result the answer). `messageText` is for the operator's
   * dashboard, which shows the text like a live stream would.
   */
  status(
    caller: Reader,
    taskId: string,
    after = 0,
    limit = DEFAULT_EVENT_PAGE,
    opts: { messageText?: boolean } = {},
  ): StatusView {
    const task = this.access.owned(caller, taskId);
    const { events, hasMore } = this.store.eventPage(
      task.id,
      after,
      limit,
      EVENT_PAGE_TEXT_CODE_POINTS,
      opts.messageText ?? false,
    );
    return {
      ...this.access.readerView(caller, task),
      rounds: roundViews(this.store, task.id),
      events,
      nextCursor: events.length ? events[events.length - 1]!.seq : after,
      hasMore,
    };
  }

  /**
   * Long-poll (rule: event-cursor): returns at once when events exist past `after` or the task is terminal, else waits.
   */
  async wait(
    caller: Reader,
    taskId: string,
    after = 0,
    timeoutMs = MAX_WAIT_MS,
    signal?: AbortSignal,
  ): Promise<WaitView> {
    const bound = Math.min(Math.max(0, timeoutMs), MAX_WAIT_MS);
    let task = this.access.owned(caller, taskId);
    let timedOut = false;
    if (task.lastSeq <= after && !isTerminal(task.state)) {
      timedOut = !(await this.waiters.wait(task.id, bound, signal));
      task = this.access.mustGet(task.id);
    }
    const { events, hasMore } = this.store.eventPage(
      task.id,
      after,
      DEFAULT_EVENT_PAGE,
      EVENT_PAGE_TEXT_CODE_POINTS,
      true,
    );
    return {
      ...this.access.readerView(caller, task),
      events,
      nextCursor: events.length ? events[events.length - 1]!.seq : after,
      hasMore,
      timedOut: timedOut && events.length === 0,
    };
  }

  /**
   * Fan-in long-poll (rule: hub-tools): waits until any of `items` has events after its own cursor, or every one of them is
   * terminal, and says which are ready. Each task is checked like agent_wait's single form checks one (a task that is
   * not the reader's is not found); one page of events is returned for each ready task.
   */
  async waitAny(
    caller: Reader,
    items: readonly { taskId: string; after?: number }[],
    timeoutMs = MAX_WAIT_MS,
    signal?: AbortSignal,
  ): Promise<FanInView> {
    if (items.length < 1 || items.length > MAX_WAIT_TASKS)
      throw new InvalidArgumentError(`tasks: give between 1 and ${MAX_WAIT_TASKS} tasks`);
    const seen = new Set<string>();
    for (const { taskId } of items) {
      if (seen.has(taskId)) throw new InvalidArgumentError(`tasks: task ${taskId} is listed twice`);
      seen.add(taskId);
    }
    const bound = Math.min(Math.max(0, timeoutMs), MAX_WAIT_MS);
    let tasks = items.map((i) => this.access.owned(caller, i.taskId));
    const ready = () => tasks.filter((t, i) => t.lastSeq > (items[i]!.after ?? 0));
    if (!ready().length && !tasks.every((t) => isTerminal(t.state))) {
      await this.waiters.waitAny(
        tasks.map((t) => t.id),
        bound,
        signal,
      );
      this.log.flushForRead();
      tasks = tasks.map((t) => this.access.mustGet(t.id));
    }
    const readyIds = new Set(ready().map((t) => t.id));
    return {
      ready: [...readyIds],
      timedOut: readyIds.size === 0 && !tasks.every((t) => isTerminal(t.state)),
      tasks: tasks.map((task, i) => {
        const after = items[i]!.after ?? 0;
        const { events, hasMore } = readyIds.has(task.id)
          ? this.store.eventPage(task.id, after, FAN_IN_EVENT_PAGE, EVENT_PAGE_TEXT_CODE_POINTS, true)
          : { events: [], hasMore: false };
        return {
          ...this.access.readerView(caller, task),
          ready: readyIds.has(task.id),
          events,
          nextCursor: events.length ? events[events.length - 1]!.seq : after,
          hasMore,
        };
      }),
    };
  }

  /**
   * What this caller may reach (rules: hub-tools, free-probes): each agent's kind, and — from a probe that spends no
   * inference, reused for AGENT_PROBE_TTL_MS — whether it is installed, its version, login state, and the models and
   * efforts it offers where it says so. A missing binary is an entry with `available: false`, not an error.
   */
  async agentsOf(caller: string): Promise<AgentsView> {
    const names = this.opts.reachable(caller);
    const agents = await Promise.all(
      names.map(async (name) => {
        const agent = this.opts.agents.get(name);
        if (!agent) return { name, kind: 'unknown', available: false, detail: 'not configured on this hub' };
        const { binary: _binary, ...probe } = await this.probeOf(agent);
        return { ...probe, target: this.opts.targetOf?.(name)?.name ?? 'local' };
      }),
    );
    return { agents };
  }

  private probeOf(agent: Agent): Promise<AgentProbe> {
    const cached = this.probes.get(agent.name);
    if (cached && Date.now() - cached.at < AGENT_PROBE_TTL_MS) return cached.probe;
    const probe = probeAgent(agent, {
      catalog: true,
      ...(this.opts.probeTimeoutMs ? { timeoutMs: this.opts.probeTimeoutMs } : {}),
      ...probeGroupRecorder(this.store, this.opts.logger),
      // What an agent prints about itself is agent text: redacted once, here.
    }).then((p) => redactDeep(p) as AgentProbe);
    this.probes.set(agent.name, { at: Date.now(), probe });
    return probe;
  }

  /** A page of a round's answer: the latest round's unless `n` names an earlier one (an MCP task per round). */
  result(caller: Reader, taskId: string, offset = 0, n?: number): ResultView {
    const task = this.access.owned(caller, taskId);
    const latest = n === undefined || n === task.rounds;
    const round = this.store.roundSummary(task.id, n ?? task.rounds);
    const active = this.scheduler.activeOf(task.id);
    if (latest && task.state === 'running' && active?.round === task.rounds) {
      // The answer so far (rule: live-text), settled the way live `message` events are, so a credential still being
      // streamed never shows in part; redacted at read, like the final result is once at the end.
      const settled = active.text.slice(0, settledLength(active.text));
      return {
        taskId: task.id,
        state: task.state,
        round: task.rounds,
        available: true,
        partial: true,
        ...pageText(redact(settled), offset, RESULT_PAGE_CODE_POINTS),
      };
    }
    if ((latest && !isTerminal(task.state)) || !round) {
      return { taskId: task.id, state: task.state, round: n ?? task.rounds, available: false };
    }
    const page = this.store.resultPage(task.id, round.n, offset, RESULT_PAGE_CODE_POINTS);
    return {
      taskId: task.id,
      state: latest ? task.state : round.state,
      round: round.n,
      available: true,
      ...(round.error ? { error: round.error } : {}),
      ...page,
    };
  }

  /**
   * A page of the reader's tasks. The cursor is the id of the last task of the previous page, resolved only among the
   * reader's own tasks: it carries no position in the hub-wide order, so it tells a caller nothing about other callers'
   * tasks, and another caller's task id is refused exactly like a made-up one. `order` 'newest' pages from the most
   * recently created task back (the operator's list).
   */
  list(
    caller: Reader,
    cursor: string | undefined,
    limit = DEFAULT_LIST_PAGE,
    order: 'oldest' | 'newest' = 'oldest',
  ): ListView {
    let afterOrder: number | null = null;
    if (cursor !== undefined) {
      const order = this.store.listOrderOf(caller, cursor);
      if (order === undefined) {
        throw new InvalidArgumentError(
          'cursor is not one this list returned (or its task was removed); list again without a cursor',
        );
      }
      afterOrder = order;
    }
    this.log.flushForRead();
    const { tasks } = this.store.listTasks(caller, afterOrder, limit + 1, order);
    const more = tasks.length > limit;
    const page = tasks.slice(0, limit);
    return {
      tasks: page.map((t) => this.access.readerView(caller, t)),
      nextCursor: more ? page[page.length - 1]!.id : null,
    };
  }

  /** Every task with a round queued or running, oldest first, as the operator sees it (what a stop would interrupt). */
  unfinished(): TaskView[] {
    return this.store.tasksInStates(['queued', 'running']).map((t) => this.access.readerView(OPERATOR, t));
  }

  /**
   * The dashboard's list (rule: dashboard): every caller's tasks, newest first, each with the start of its first prompt;
   * `filter` keeps those whose id, caller, agent, state, cwd or prompt start contains it (any case). The cursor is the id
   * of the last task of the previous page.
   */
  overview(filter: string, cursor: string | undefined, limit = DEFAULT_LIST_PAGE): OverviewView {
    let beforeOrder = Number.MAX_SAFE_INTEGER;
    if (cursor !== undefined) {
      const order = this.store.listOrderOf(OPERATOR, cursor);
      if (order === undefined) throw new InvalidArgumentError('cursor is not one this list returned; list again');
      beforeOrder = order;
    }
    this.log.flushForRead();
    const rows = this.store.overviewTasks(
      filter.toLowerCase(),
      beforeOrder,
      limit + 1,
      OVERVIEW_PROMPT_CHARS + PROMPT_REDACT_MARGIN,
    );
    const page = rows.slice(0, limit);
    return {
      tasks: page.map((r) => ({
        ...this.access.readerView(OPERATOR, r.task),
        promptStart: shownPrompt(r.promptStart, OVERVIEW_PROMPT_CHARS),
      })),
      nextCursor: rows.length > limit ? page[page.length - 1]!.task.id : null,
    };
  }

  /**
   * Each round's prompt for the operator, cut to `maxChars` code points, with its full length, and `by: "operator"` on
   * a round the operator queued.
   */
  prompts(taskId: string, maxChars: number): { n: number; text: string; chars: number; by?: 'operator' }[] {
    const id = this.access.owned(OPERATOR, taskId).id;
    const byOperator = new Set(this.store.operatorRounds(id));
    return this.store
      .roundPrompts(id, maxChars + PROMPT_REDACT_MARGIN)
      .map((p) => ({ ...p, text: shownPrompt(p.text, maxChars), ...(byOperator.has(p.n) ? { by: 'operator' } : {}) }));
  }
}
