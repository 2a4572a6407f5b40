// `baton tasks` (rules: tasks-command, operator-cli): the operator's view of every caller's tasks on the running hub,
// over the control endpoint. Every subcommand takes --json (one stable JSON document, or JSON lines for tail); the
// exit codes are the table in TASK_EXIT_CODES.
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ResultView, StatusView, TaskView, WaitView } from '../core/engine.ts';
import { isTerminal, type TaskEvent } from '../core/task.ts';
import { type UsageTotals, usageText } from '../core/usage.ts';
import { eventText, gitChanges, gitLine, gitStatusWord } from '../faces/hub/ui/format.ts';
import { redactError } from '../lib/redact.ts';
import { stripTerminalControls } from '../lib/text.ts';
import { control } from './control.ts';
import { type HubAddress, loadHubAddress } from './hub-config.ts';
import { localTime } from './time.ts';

const out = (s: string): void => void process.stdout.write(`${s}\n`);
const json = (v: unknown): void => out(JSON.stringify(v));
/** The hub answers a long-poll within 25 s; the client allows for a slow machine on top. */
const WAIT_REQUEST_TIMEOUT_MS = 40_000;
/** How many tasks `tasks list` shows without --limit or --all. */
export const DEFAULT_LIST_LIMIT = 20;
const PAGE = 100;

/**
 * Exit codes of `tasks tail` and `tasks result` by the task's final state, so a script can tell the outcomes apart.
 * 1 is any error (hub unreachable, unknown task) and 2 a usage error (bad flag or value), as for every baton command.
 */
export const TASK_EXIT_CODES = { succeeded: 0, failed: 3, cancelled: 4, interrupted: 5, unfinished: 6 } as const;
const EXIT_TABLE =
  'Exit codes: 0 succeeded, 1 error (hub not answering, no such task), 2 usage error, 3 failed, 4 cancelled, ' +
  '5 interrupted';

type OperatorTask = TaskView & { caller: string };
type AvailableResult = Extract<ResultView, { available: true }>;

function exitCodeOf(state: string): number {
  return TASK_EXIT_CODES[state as keyof typeof TASK_EXIT_CODES] ?? TASK_EXIT_CODES.unfinished;
}

function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
      throw new InvalidArgumentError(`${flag} must be a whole number ≥ 1`);
    return n;
  };
}

function offsetArg(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('--offset must be a whole number ≥ 0');
  return n;
}

export function registerTasksCommand(program: Command): void {
  const config = () => loadHubAddress(program.opts<{ config?: string }>().config);
  const tasks = program
    .command('tasks')
    .description("The running hub's tasks across all callers: list, show ID, tail ID, result ID, cancel ID.")
    .addHelpText('after', `\n${EXIT_TABLE} (tail and result; 6 from result: not finished yet).`);

  tasks
    .command('list', { isDefault: true })
    .description(`Newest first, one line per task (the ${DEFAULT_LIST_LIMIT} newest unless --limit or --all).`)
    .option('--limit <n>', 'show the N newest tasks', positiveInt('--limit'))
    .addOption(new Option('--all', 'show every task').conflicts('limit'))
    .option('--json', 'print {"tasks": [...], "more": bool} instead of a table')
    .action(async (opts: { limit?: number; all?: boolean; json?: boolean }) => {
      const cfg = await config();
      const want = opts.all ? Number.POSITIVE_INFINITY : (opts.limit ?? DEFAULT_LIST_LIMIT);
      const rows: OperatorTask[] = [];
      let cursor: string | null = null;
      let more = false;
      do {
        const size = Math.min(PAGE, want - rows.length);
        const q = new URLSearchParams({ order: 'newest', limit: String(size) });
        if (cursor) q.set('cursor', cursor);
        const page = await request<{ tasks: OperatorTask[]; nextCursor: string | null }>(
          cfg,
          'GET',
          `/control/tasks?${q}`,
        );
        rows.push(...page.tasks);
        cursor = page.nextCursor;
        more = cursor !== null;
      } while (cursor && rows.length < want);
      if (opts.json) return json({ tasks: rows, more });
      if (!rows.length) {
        out('no tasks');
        return;
      }
      // The target column shows once a listed task ran anywhere but the default `local`.
      const targets = rows.some((t) => (t.target ?? 'local') !== 'local');
      // Likewise the usage column, once a listed task's agent reported any.
      const usage = rows.some((t) => t.usage);
      table(
        [
          'TASK',
          'CALLER',
          'AGENT',
          ...(targets ? ['TARGET'] : []),
          'STATE',
          'ROUND',
          ...(usage ? ['USAGE'] : []),
          'UPDATED',
        ],
        rows.map((t) => [
          t.taskId,
          t.caller,
          t.agent,
          ...(targets ? [t.target ?? 'local'] : []),
          t.state,
          String(t.round),
          ...(usage ? [usageText(t.usage)] : []),
          localTime(t.updatedAt),
        ]),
      );
      if (more) process.stderr.write(`showing the ${rows.length} newest; --limit N or --all shows more\n`);
    });

  tasks
    .command('show <id>')
    .description('A task with its rounds, git snapshots and events.')
    .option('--json', 'print the task with its rounds and every event as one JSON document')
    .action(async (id: string, opts: { json?: boolean }) => {
      const cfg = await config();
      const status = await request<StatusView & OperatorTask>(cfg, 'GET', `/control/tasks/${taskPath(id)}?limit=500`);
      const events = [...status.events];
      for (let page = status; page.hasMore; ) {
        page = await request(cfg, 'GET', `/control/tasks/${taskPath(id)}?limit=500&after=${page.nextCursor}`);
        events.push(...page.events);
      }
      if (opts.json) {
        const last = events.at(-1)?.seq ?? status.nextCursor;
        return json({ ...status, events, nextCursor: last, hasMore: false });
      }
      const facts: [string, unknown][] = [
        ['task', status.taskId],
        ['caller', status.caller],
        ['agent', status.agent],
        ['target', status.target],
        ['state', status.state],
        ['round', status.round],
        ['cwd', status.cwd],
        ['workdir', status.workdir !== status.cwd ? status.workdir : null],
        ['isolation', status.isolation],
        ['session', status.sessionId],
        ['created', localTime(status.createdAt)],
        ['updated', localTime(status.updatedAt)],
        ['error', status.error],
        ['queue', status.queue ? `position ${status.queue.position}: ${status.queue.why}` : null],
        [
          'waiting',
          status.waiting
            ? `request ${status.waiting.requestId}: ${status.waiting.what} (${status.waiting.kind}); options ${status.waiting.options.join(', ')}; denied at ${localTime(status.waiting.expiresAt)} — baton tasks approve|deny ${status.taskId} ${status.waiting.requestId}`
            : null,
        ],
        ['usage', status.usage ? usageText(status.usage) : null],
        ['result', status.result?.chars ? `${status.result.chars} characters: ${status.result.preview}` : null],
      ];
      for (const [k, v] of facts) if (v !== null && v !== undefined && v !== '') out(`${`${k}:`.padEnd(11)}${v}`);
      for (const r of status.rounds) {
        out(`round ${r.n}: ${r.state}${r.abandoned ? ' (abandoned)' : ''}${r.error ? ` — ${r.error}` : ''}`);
        if (r.usage) out(`  usage: ${usageText(r.usage)}`);
        out(`  git before: ${gitLine(r.gitBefore)}`);
        if (r.gitAfter) out(`  git after:  ${gitLine(r.gitAfter)}`);
        for (const c of gitChanges(r.gitBefore, r.gitAfter))
          out(`    ${gitStatusWord(c.before)} → ${gitStatusWord(c.after)}  ${c.path}`);
      }
      out('events:');
      for (const ev of events) out(`  ${eventLine(ev)}`);
    });

  tasks
    .command('tail <id>')
    .description('Print the events so far, follow live ones until the task ends, then print its answer.')
    .option(
      '--json',
      'JSON lines: {"type":"event","event":{...}} per event, then {"type":"end","task":{...},"answer":{...}}',
    )
    .addHelpText('after', `\n${EXIT_TABLE}.`)
    .action(async (id: string, opts: { json?: boolean }) => {
      const cfg = await config();
      let after = 0;
      for (;;) {
        const w = await request<WaitView & OperatorTask>(
          cfg,
          'GET',
          `/control/tasks/${taskPath(id)}/wait?after=${after}`,
          WAIT_REQUEST_TIMEOUT_MS,
        );
        for (const ev of w.events) opts.json ? json({ type: 'event', event: ev }) : out(eventLine(ev));
        after = w.nextCursor;
        if (!isTerminal(w.state) || w.hasMore) continue;
        const { events: _e, nextCursor: _n, hasMore: _h, timedOut: _t, ...task } = w;
        process.exitCode = exitCodeOf(w.state);
        // The end is known even when the answer cannot be fetched (a stopping hub closes right after its last event).
        const answer = await request<ResultView>(cfg, 'GET', `/control/tasks/${taskPath(id)}/result`).catch(
          (err: Error) => ({ unavailable: err.message }),
        );
        if (opts.json) return json({ type: 'end', task, answer: 'unavailable' in answer ? null : answer });
        out(`task ${w.taskId} ended: ${w.state}${w.error ? ` — ${stripTerminalControls(w.error)}` : ''}`);
        if ('unavailable' in answer)
          out(`answer not fetched (${answer.unavailable}); later: baton tasks result ${w.taskId}`);
        else printAnswerPage(w.taskId, answer);
        return;
      }
    });

  tasks
    .command('result <id>')
    .description("The answer of the task's latest round, exactly as the agent gave it (every page, from --offset).")
    .option('--offset <n>', 'start at this character (code point) of the answer', offsetArg)
    .option('--json', 'print {taskId, state, round, available, text, offset, total, …} as one JSON document')
    .addHelpText('after', `\n${EXIT_TABLE}, 6 not finished yet (no answer).`)
    .action(async (id: string, opts: { offset?: number; json?: boolean }) => {
      const cfg = await config();
      const first = await request<ResultView>(
        cfg,
        'GET',
        `/control/tasks/${taskPath(id)}/result?offset=${opts.offset ?? 0}`,
      );
      process.exitCode = exitCodeOf(first.state);
      if (!first.available) {
        if (opts.json) return json(first);
        process.stderr.write(
          `baton: task ${first.taskId} is ${first.state}: no answer yet (\`baton tasks tail ${first.taskId}\` follows it)\n`,
        );
        return;
      }
      let text = first.text;
      for (let page: AvailableResult = first; !page.done; ) {
        const next = await request<ResultView>(
          cfg,
          'GET',
          `/control/tasks/${taskPath(id)}/result?offset=${page.nextOffset}`,
        );
        if (!next.available) break;
        text += next.text;
        page = next;
      }
      if (opts.json) return json({ ...first, text, nextOffset: first.total, done: true });
      // Agent text: as given when piped, without terminal controls on a terminal; ending in a newline either way, as
      // text printed for a shell does (--json carries the answer exactly, final newline or not).
      const shown = process.stdout.isTTY ? stripTerminalControls(text) : text;
      process.stdout.write(shown && !shown.endsWith('\n') ? `${shown}\n` : shown);
    });

  tasks
    .command('cancel <id>')
    .description("Cancel the task's current round (any caller's); recorded as cancelled by the operator.")
    .option('--json', 'print the task as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const cfg = await config();
      const t = await request<OperatorTask>(cfg, 'POST', `/control/tasks/${taskPath(id)}/cancel`);
      if (opts.json) return json(t);
      out(
        isTerminal(t.state)
          ? `task ${t.taskId} is ${t.state}`
          : `cancel requested for ${t.taskId} (round ${t.round}); \`baton tasks tail ${t.taskId}\` shows the end`,
      );
    });

  for (const verb of ['approve', 'deny'] as const) {
    tasks
      .command(`${verb} <id> <request>`)
      .description(
        verb === 'approve'
          ? 'Allow the permission request a task waits for (its `waiting.requestId`, shown by tasks show).'
          : 'Deny the permission request a task waits for.',
      )
      .option('--always', 'for the rest of the agent session, where the request offers it')
      .option('--json', 'print the task as JSON')
      .action(async (id: string, requestId: string, opts: { always?: boolean; json?: boolean }) => {
        const cfg = await config();
        const decision = `${verb === 'approve' ? 'allow' : 'deny'}${opts.always ? '_always' : ''}`;
        const q = new URLSearchParams({ request: requestId, decision });
        const t = await request<OperatorTask>(cfg, 'POST', `/control/tasks/${taskPath(id)}/respond?${q}`);
        if (opts.json) return json(t);
        out(`${decision.replace('_', ' ')}: request ${requestId} of task ${t.taskId} answered`);
      });
  }

  tasks
    .command('usage')
    .description('Tokens and cost the agents reported, per caller and agent, over UTC days (default: today).')
    .option('--from <day>', 'first UTC day, YYYY-MM-DD')
    .option('--to <day>', 'last UTC day, YYYY-MM-DD')
    .option('--caller <name>', 'only this caller')
    .option('--json', 'print {from, to, totals: [{caller, agent, usage}]}')
    .action(async (opts: { from?: string; to?: string; caller?: string; json?: boolean }) => {
      const cfg = await config();
      const q = new URLSearchParams();
      for (const k of ['from', 'to', 'caller'] as const) if (opts[k] !== undefined) q.set(k, opts[k]);
      const u = await request<UsageTotals>(cfg, 'GET', `/control/usage?${q}`);
      if (opts.json) return json(u);
      out(u.from === u.to ? `usage on ${u.from} (UTC):` : `usage from ${u.from} to ${u.to} (UTC):`);
      if (!u.totals.length) return out('none reported');
      table(
        ['CALLER', 'AGENT', 'USAGE'],
        u.totals.map((x) => [x.caller, x.agent, usageText(x.usage)]),
      );
    });
}

/** The first page of an answer, and the exact command for the rest when there is more. */
function printAnswerPage(taskId: string, r: ResultView): void {
  if (!r.available) return;
  if (!r.total) {
    out('no answer text');
    return;
  }
  out(`answer (${r.total} characters):`);
  const text = stripTerminalControls(r.text);
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  if (!r.done)
    out(
      `answer continues: ${r.nextOffset} of ${r.total} characters shown; the rest: baton tasks result ${taskId} --offset ${r.nextOffset}`,
    );
}

/** `HH:MM:SS±hh:mm r<round> <kind> <text>`; kinds this CLI does not know show their text or fields (eventText). */
function eventLine(ev: TaskEvent): string {
  return `${localTime(ev.time, { date: false })} r${ev.round} ${ev.kind} ${eventText(ev)}`.trimEnd();
}

async function request<T>(cfg: HubAddress, method: string, path: string, timeoutMs?: number): Promise<T> {
  const where = `http://${cfg.listen.host}:${cfg.listen.port}`;
  const res = await control(cfg, method, path, timeoutMs).catch((err) => {
    throw new Error(`the hub is not answering on ${where} (start it with \`baton start\`): ${redactError(err)}`);
  });
  const body = (await res.json().catch(() => ({}))) as { error?: string };
  if (res.status === 401) throw new Error(`the hub on ${where} refused the control token of this config`);
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body as T;
}

/** Ids are checked by the hub; this only keeps a typo from becoming another path. */
function taskPath(id: string): string {
  return encodeURIComponent(id);
}

function table(head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  out(line(head));
  for (const r of rows) out(line(r));
}
