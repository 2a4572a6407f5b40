// The dashboard's pages and the parts of them that change while a task runs (rule: dashboard). Every page is built
// with the escaping template in html.ts: agent text, prompts and paths are untrusted. The pages' one script and one
// style sheet are real files under client/, read once when this module loads and inlined under the page's CSP nonce.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { TargetStatus } from '../../../agents/targets/target.ts';
import type { OverviewView, ResultView, StatusView } from '../../../core/engine.ts';
import { isTerminal, type TaskEvent } from '../../../core/task.ts';
import { type UsageTotals, usageText } from '../../../core/usage.ts';
import { eventText, type GitSnapshotView, gitChanges, gitLine, gitStatusWord, oneLine } from './format.ts';
import { html, type SafeHtml, trusted } from './html.ts';
import type { Rendered } from './respond.ts';

/** How often an open list asks for its rows again. */
const LIST_REFRESH_MS = 2_000;

/** A file of client/, as inlined into a page: it must not be able to close the element that holds it. */
function clientFile(name: string, element: 'script' | 'style'): SafeHtml {
  const text = readFileSync(new URL(`./client/${name}`, import.meta.url), 'utf8');
  if (text.toLowerCase().includes(`</${element}`)) throw new Error(`client/${name} must not contain </${element}`);
  return trusted(text);
}

const pageScript = clientFile('dashboard.js', 'script');
const pageStyle = clientFile('dashboard.css', 'style');

/** What a page shows of the logged-in session: its CSRF token, sent back by every form. */
export interface PageSession {
  csrf: string;
}

/** One round as the engine's status view reports it. */
type RoundView = StatusView['rounds'][number];

/** The parts of a task page that change while it runs, swapped in live by the page's script. */
export type TaskParts = Record<'facts' | 'controls' | 'answer' | 'rounds', SafeHtml>;

/** A page; with a session it gets the log-out form and the page script. */
export function page(title: string, body: SafeHtml, opts: { session?: PageSession } = {}): Rendered {
  const nonce = randomBytes(16).toString('base64');
  const logout =
    opts.session &&
    html`<form class="logout" method="post" action="/ui/logout"><input type="hidden" name="csrf"
      value="${opts.session.csrf}"><button>Log out</button></form>`;
  const script = opts.session && html`<script nonce="${nonce}">${pageScript}</script>`;
  const doc = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baton — ${title}</title><style
    nonce="${nonce}">${pageStyle}</style></head><body>${logout}${body}${script}</body></html>`;
  return { html: String(doc), nonce };
}

export function loginPage(error?: string): Rendered {
  return page(
    'Log in',
    html`<h1>baton dashboard</h1>${error && html`<p id="error">${error}</p>`}
      <p>Run <code>baton ui</code> for a one-time login link, or paste the control token (from the hub config).</p>
      <form method="post" action="/ui/login"><label>Control token
      <input type="password" name="token" autocomplete="current-password" autofocus></label>
      <button type="submit">Log in</button></form>`,
  );
}

export function notFound(message: string): Rendered {
  return page('Not found', html`<p>${message} <a href="/ui">All tasks</a></p>`);
}

/** A page saying why an action or a request was refused. */
export function refusedPage(title: string, message: SafeHtml | string): Rendered {
  return page(title, html`<p id="error">${message}</p>`);
}

/** Every caller's tasks, newest first, with the filter; the list refreshes itself from `/ui/rows`. */
export function listPage(
  list: OverviewView,
  q: string,
  cursor: string | undefined,
  session: PageSession,
  usage?: UsageTotals,
  targets?: readonly TargetStatus[],
): Rendered {
  const body = html`<h1>Tasks (all callers)</h1>${targets ? targetsSection(targets) : ''}${usage ? usageSection(usage) : ''}
      <form class="filter" method="get" action="/ui"><label>Filter <input type="search" name="q" value="${q}"
        placeholder="id, caller, agent, state, project or prompt"></label> <button>Filter</button>
        ${q && html`<a href="/ui">clear</a>`}</form>
      <p class="zone">Times are in your time zone (<span class="offset"></span>); the list refreshes by itself.</p>
      <div id="list" data-refresh="${`/ui/rows?${new URLSearchParams({ q, ...(cursor ? { cursor } : {}) })}`}"
        data-every="${LIST_REFRESH_MS}">${listBody(list, q)}</div>`;
  return page('Tasks', body, { session });
}

/** The targets the agents run on, with what each fences now and, when it cannot fence as configured, why and the fix. */
function targetsSection(targets: readonly TargetStatus[]): SafeHtml {
  const rows = targets.map(
    (
      x,
    ) => html`<tr data-target="${x.name}"><td>${x.name}</td><td>${x.kind}</td><td class="fence-${x.fence}">${x.fence}</td>
      <td class="warning">${x.error ?? x.warning ?? ''}</td></tr>`,
  );
  return html`<h2>Targets</h2><table id="targets"><thead><tr><th>target</th><th>kind</th><th>fence</th><th>warning</th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}

/** Usage per caller and agent over a period of UTC days, with a form to pick another period (rule: usage-budgets). */
function usageSection(u: UsageTotals): SafeHtml {
  const rows = u.totals.map(
    (x) => html`<tr><td>${x.caller}</td><td>${x.agent}</td><td>${usageText(x.usage)}</td></tr>`,
  );
  return html`<h2>Usage ${u.from === u.to ? `on ${u.from}` : `from ${u.from} to ${u.to}`} (UTC)</h2>
    <form class="usage" method="get" action="/ui"><label>from <input type="date" name="from" value="${u.from}"></label>
      <label>to <input type="date" name="to" value="${u.to}"></label> <button>Show</button></form>
    ${
      rows.length
        ? html`<table id="usage"><thead><tr><th>caller</th><th>agent</th><th>usage</th></tr></thead><tbody>${rows}</tbody></table>`
        : html`<p class="none">No usage reported.</p>`
    }`;
}

/** The list's rows alone, for the page's refresh. */
export function listBody(list: OverviewView, q: string): SafeHtml {
  if (!list.tasks.length) return html`<p class="none">${q ? 'No task matches the filter.' : 'No tasks yet.'}</p>`;
  // The target column shows once a listed task runs anywhere but the default `local` (as `baton tasks list`).
  const targets = list.tasks.some((t) => (t.target ?? 'local') !== 'local');
  const rows = list.tasks.map(
    (t) => html`<tr data-task="${t.taskId}"><td><a href="/ui/tasks/${t.taskId}">${t.taskId}</a></td>
      <td title="${t.cwd}">${basename(t.cwd)}</td><td>${t.agent}</td>${targets ? html`<td class="target">${t.target ?? 'local'}</td>` : ''}<td>${String(t.caller ?? '')}</td>
      <td class="state-${t.state}">${t.state}</td><td>${time(t.createdAt, 'age')}</td>
      <td class="prompt">${oneLine(t.promptStart, 120)}</td></tr>`,
  );
  const more =
    list.nextCursor &&
    html`<p><a href="/ui?${String(new URLSearchParams({ q, cursor: list.nextCursor }))}">Older tasks</a></p>`;
  return html`<table id="tasks"><thead><tr><th>task</th><th>project</th><th>agent</th>${targets ? html`<th>target</th>` : ''}<th>caller</th><th>state</th>
    <th>age</th><th>prompt</th></tr></thead><tbody>${rows}</tbody></table>${more}`;
}

/** A task's page: `follow` names whether the page opens its event stream (more events may come). */
export function taskPage(t: StatusView, parts: TaskParts, follow: boolean, session: PageSession): Rendered {
  const body = html`<p><a href="/ui">All tasks</a></p><h1>Task ${t.taskId}</h1>
      <p class="zone">Times are in your time zone (<span class="offset"></span>).</p>
      <div id="facts">${parts.facts}</div>
      <div id="controls" data-state="${t.state}">${parts.controls}</div>
      <h2>Answer</h2><div id="answer">${parts.answer}</div>
      <h2>Rounds</h2><div id="rounds">${parts.rounds}</div>
      <h2>Events</h2><p id="stream">${follow ? 'following live events…' : 'the task has ended'}</p>
      <ol id="events" data-after="${t.nextCursor}" data-follow="${follow ? `/ui/tasks/${t.taskId}/events` : ''}">${t.events.map(eventItem)}</ol>`;
  return page(`Task ${t.taskId}`, body, { session });
}

/** The changing parts of a task page, rendered the same for the first load and for live updates. */
export function taskParts(
  t: StatusView,
  session: PageSession,
  prompts: Map<number, RoundPrompt>,
  answer: ResultView,
): TaskParts {
  return {
    facts: factsList(t),
    controls: controls(t, session),
    answer: answerSection(t, answer),
    rounds: html`${t.rounds.map((r) => roundSection(r, prompts.get(r.n)))}`,
  };
}

function answerSection(t: StatusView, r: ResultView): SafeHtml {
  if (!r.available) return html`<p class="none">No answer yet (round ${t.round} is ${t.state}).</p>`;
  const cut = r.done ? '' : `The first ${r.nextOffset} of ${r.total} characters; agent_result pages through the rest.`;
  return html`<p>Round ${r.round}, ${r.total} characters${r.error ? html`, error: ${r.error}` : ''}.</p>
      <pre class="answer">${r.text}</pre>${cut && html`<p class="cut">${cut}</p>`}`;
}

/** `<time>` holds UTC; the page's script rewrites it in the viewer's zone with the offset (`age` as time since). */
function time(iso: string | null | undefined, form: 'full' | 'clock' | 'age' = 'full'): SafeHtml {
  if (!iso) return html``;
  return html`<time datetime="${iso}" data-form="${form}">${iso}</time>`;
}

function factsList(t: StatusView): SafeHtml {
  const facts: [string, SafeHtml | string | number | null][] = [
    ['caller', typeof t.caller === 'string' ? t.caller : ''],
    ['agent', t.agent],
    ['target', t.target && t.target !== 'local' ? t.target : null],
    ['state', t.state],
    ['round', t.round],
    ['cwd', t.cwd],
    ['workdir', t.workdir === t.cwd ? null : t.workdir],
    ['isolation', t.isolation],
    ['session', t.sessionId],
    ['created', time(t.createdAt)],
    ['updated', time(t.updatedAt)],
    ['error', t.error],
    ['queue', t.queue ? `position ${t.queue.position}: ${t.queue.why}` : null],
    ['usage', t.usage ? usageText(t.usage) : null],
  ];
  return html`<dl>${facts
    .filter(([, v]) => v !== null && v !== '')
    .map(([k, v]) => html`<dt>${k}</dt><dd id="${`fact-${k}`}">${v}</dd>`)}</dl>`;
}

const DECISION_LABELS = {
  allow: 'Approve',
  allow_always: 'Approve for the session',
  deny: 'Deny',
  deny_always: 'Deny for the session',
} as const;

/** Cancel while a round is queued or running; Continue (with a prompt box) once it has ended. */
function controls(t: StatusView, session: PageSession): SafeHtml {
  const csrf = html`<input type="hidden" name="csrf" value="${session.csrf}">`;
  if (!isTerminal(t.state)) {
    const w = t.waiting;
    // A parked permission request: one button per decision it offers (rule: approvals).
    const answer =
      w &&
      html`<p class="waiting">Waiting for a decision: the agent asks to ${w.what} (${w.kind}); denied at ${time(w.expiresAt)} unless answered.</p>
      ${w.options.map(
        (d) => html`<form method="post" action="/ui/tasks/${t.taskId}/respond" class="respond">${csrf}
        <input type="hidden" name="request" value="${w.requestId}"><input type="hidden" name="decision" value="${d}">
        <button id="${`respond-${d}`}" type="submit">${DECISION_LABELS[d]}</button></form>`,
      )}`;
    return html`${answer || ''}<form method="post" action="/ui/tasks/${t.taskId}/cancel">${csrf}
      <button id="cancel" type="submit">Cancel round ${t.round}</button></form>`;
  }
  const key = randomBytes(18).toString('base64url');
  return html`<form method="post" action="/ui/tasks/${t.taskId}/continue" class="continue">${csrf}
    <input type="hidden" name="key" value="${key}"><label for="prompt">Continue the session with a new prompt</label>
    <textarea id="prompt" name="prompt" rows="4" required></textarea>
    <button id="continue" type="submit">Continue</button></form>`;
}

/** A round's prompt as the page shows it, and who queued the round when the operator did. */
type RoundPrompt = { text: string; chars: number; by?: 'operator' };

function roundSection(r: RoundView, prompt: RoundPrompt | undefined): SafeHtml {
  const facts = [
    prompt?.by === 'operator' && html`<span class="by">queued by the operator</span>`,
    html`state <span class="state-${r.state}">${r.state}</span>${r.abandoned ? ' (abandoned)' : ''}`,
    r.startedAt ? html`started ${time(r.startedAt)}` : 'not started',
    r.endedAt && html`ended ${time(r.endedAt)}`,
    r.resultChars && `result ${r.resultChars} characters`,
    r.error && `error: ${r.error}`,
    r.usage && `usage ${usageText(r.usage)}`,
  ].filter((f) => f);
  const cut =
    prompt && prompt.chars > [...prompt.text].length
      ? html`<p class="cut">… ${prompt.chars - [...prompt.text].length} more characters</p>`
      : '';
  return html`<section class="round" id="round-${r.n}"><h3>Round ${r.n}</h3>
    <p class="round-facts">${facts.map((f, i) => html`${i ? ' · ' : ''}${f}`)}</p>
    <h4>Prompt</h4><pre class="prompt">${prompt?.text ?? ''}</pre>${cut}
    ${gitSection(r.gitBefore as GitSnapshotView | null, r.gitAfter as GitSnapshotView | null)}</section>`;
}

/**
 * The work tree around a round. Until the after snapshot exists (the round runs, or it ended before one was taken),
 * only the before snapshot is shown, as "before": comparing it with a missing after would read as if every dirty file
 * had been cleaned.
 */
function gitSection(before: GitSnapshotView | null, after: GitSnapshotView | null): SafeHtml {
  if (!after) {
    return html`<p>git before: ${gitLine(before)}<br>git after: not taken yet (the round has not ended)</p>
      ${dirtyList('dirty before the round', before, true)}`;
  }
  const changes = gitChanges(before, after);
  const changed = changes.length
    ? html`<table class="changes"><thead><tr><th>file</th><th>before</th><th>after</th></tr></thead><tbody>${changes.map(
        (c) => html`<tr><td>${c.path}</td><td>${gitStatusWord(c.before)}</td><td>${gitStatusWord(c.after)}</td></tr>`,
      )}</tbody></table>`
    : html`<p>No file changed status during this round.</p>`;
  const headMoved =
    before?.git &&
    after.git &&
    before.head !== after.head &&
    html`<p>HEAD moved: ${before.head?.slice(0, 12) ?? 'none'} → ${after.head?.slice(0, 12) ?? 'none'}</p>`;
  return html`<p>git before: ${gitLine(before)}<br>git after: ${gitLine(after)}</p>${headMoved}${changed}
    ${dirtyList('dirty before', before, false)}${dirtyList('dirty after', after, false)}`;
}

function dirtyList(label: string, s: GitSnapshotView | null, open: boolean): SafeHtml {
  if (!s?.git || !s.dirty?.length) return html``;
  const more = (s.dirtyCount ?? 0) > s.dirty.length && html`<li>… ${s.dirtyCount! - s.dirty.length} more</li>`;
  return html`<details class="dirty"${open ? trusted(' open') : ''}><summary>${label} (${s.dirtyCount})</summary><ul>${s.dirty.map(
    (f) => html`<li><code>${f.status}</code> ${f.path}</li>`,
  )}${more}</ul></details>`;
}

/** `r1 kind`: what precedes an event's text. */
export function eventHead(ev: TaskEvent): string {
  return `r${ev.round} ${ev.kind}`;
}

/** One event as a list item: its time, round and kind, then its text. Every kind renders, known or not. */
function eventItem(ev: TaskEvent): SafeHtml {
  const state = ev.kind === 'lifecycle' ? ev.state : null;
  return html`<li data-seq="${ev.seq}" data-kind="${ev.kind}" data-state="${state ?? ''}">${time(
    typeof ev.time === 'string' ? ev.time : null,
    'clock',
  )} <span class="head">${eventHead(ev)}</span> <span class="text">${eventText(ev)}</span></li>`;
}
