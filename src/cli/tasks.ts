// `baton tasks` (rule: tasks-command): the operator's view of every caller's tasks on the running hub, over the control
// endpoint.
import type { Command } from 'commander';
import type { StatusView, TaskView, WaitView } from '../core/engine.ts';
import type { TaskEvent } from '../core/task.ts';
import { type HubConfig, loadConfig } from '../faces/hub/config.ts';
import { locateConfig } from '../faces/hub/locate.ts';
import { eventLine, gitChanges, gitLine, gitStatusWord } from '../faces/hub/ui/format.ts';
import { redactError } from '../lib/redact.ts';
import { control } from './hub.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);
/** The hub answers a long-poll within 25 s; the client allows for a slow machine on top. */
const WAIT_REQUEST_TIMEOUT_MS = 40_000;

type OperatorTask = TaskView & { caller: string };

export function registerTasksCommand(program: Command): void {
  const config = () => loadConfig(locateConfig({ flag: program.opts<{ config?: string }>().config }));
  const tasks = program
    .command('tasks')
    .description("The running hub's tasks across all callers: list, show ID, tail ID, cancel ID.");

  tasks
    .command('list', { isDefault: true })
    .description('One line per task: id, caller, agent, state, round, last update.')
    .option('--limit <n>', 'show at most this many tasks', (v) => Number.parseInt(v, 10))
    .action(async (opts: { limit?: number }) => {
      const cfg = config();
      const rows: OperatorTask[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor ? `?cursor=${encodeURIComponent(cursor)}&limit=100` : '?limit=100';
        const page = await request<{ tasks: OperatorTask[]; nextCursor: string | null }>(
          cfg,
          'GET',
          `/control/tasks${q}`,
        );
        rows.push(...page.tasks);
        cursor = page.nextCursor;
      } while (cursor && (opts.limit === undefined || rows.length < opts.limit));
      const shown = opts.limit === undefined ? rows : rows.slice(0, opts.limit);
      if (!shown.length) {
        out('no tasks');
        return;
      }
      table(
        ['TASK', 'CALLER', 'AGENT', 'STATE', 'ROUND', 'UPDATED'],
        shown.map((t) => [t.taskId, t.caller, t.agent, t.state, String(t.round), shortTime(t.updatedAt)]),
      );
    });

  tasks
    .command('show <id>')
    .description('A task with its rounds, git snapshots and events.')
    .action(async (id: string) => {
      const cfg = config();
      let status = await request<StatusView & OperatorTask>(cfg, 'GET', `/control/tasks/${taskPath(id)}?limit=500`);
      const facts: [string, unknown][] = [
        ['task', status.taskId],
        ['caller', status.caller],
        ['agent', status.agent],
        ['state', status.state],
        ['round', status.round],
        ['cwd', status.cwd],
        ['workdir', status.workdir !== status.cwd ? status.workdir : null],
        ['isolation', status.isolation],
        ['session', status.sessionId],
        ['created', status.createdAt],
        ['updated', status.updatedAt],
        ['error', status.error],
        ['result', status.result?.chars ? `${status.result.chars} characters: ${status.result.preview}` : null],
      ];
      for (const [k, v] of facts) if (v !== null && v !== undefined && v !== '') out(`${`${k}:`.padEnd(11)}${v}`);
      for (const r of status.rounds) {
        out(`round ${r.n}: ${r.state}${r.abandoned ? ' (abandoned)' : ''}${r.error ? ` — ${r.error}` : ''}`);
        out(`  git before: ${gitLine(r.gitBefore)}`);
        if (r.gitAfter) out(`  git after:  ${gitLine(r.gitAfter)}`);
        for (const c of gitChanges(r.gitBefore, r.gitAfter))
          out(`    ${gitStatusWord(c.before)} → ${gitStatusWord(c.after)}  ${c.path}`);
      }
      out('events:');
      for (;;) {
        for (const ev of status.events) out(`  ${eventLine(ev)}`);
        if (!status.hasMore) break;
        status = await request(cfg, 'GET', `/control/tasks/${taskPath(id)}?limit=500&after=${status.nextCursor}`);
      }
    });

  tasks
    .command('tail <id>')
    .description('Print the events so far, then follow live ones until the task ends.')
    .action(async (id: string) => {
      const cfg = config();
      let after = 0;
      for (;;) {
        const w = await request<WaitView>(
          cfg,
          'GET',
          `/control/tasks/${taskPath(id)}/wait?after=${after}`,
          WAIT_REQUEST_TIMEOUT_MS,
        );
        for (const ev of w.events as TaskEvent[]) out(eventLine(ev));
        after = w.nextCursor;
        if (TERMINAL.has(w.state) && !w.hasMore) {
          out(`task ${w.taskId} is ${w.state}`);
          return;
        }
      }
    });

  tasks
    .command('cancel <id>')
    .description("Cancel the task's current round (any caller's).")
    .action(async (id: string) => {
      const cfg = config();
      const t = await request<OperatorTask>(cfg, 'POST', `/control/tasks/${taskPath(id)}/cancel`);
      out(
        TERMINAL.has(t.state)
          ? `task ${t.taskId} is ${t.state}`
          : `cancel requested for ${t.taskId} (round ${t.round}); \`baton tasks tail ${t.taskId}\` shows the end`,
      );
    });
}

async function request<T>(cfg: HubConfig, method: string, path: string, timeoutMs?: number): Promise<T> {
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

function shortTime(iso: string): string {
  return iso.replace('T', ' ').slice(0, 19);
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
