// The local web dashboard (rule: dashboard) at /ui on the hub: every caller's tasks, newest first and refreshing; a
// task's prompt, answer, rounds with their git snapshots and its live events over server-sent events fed by the
// engine's waiters; Cancel and Continue for the operator.
//
// Login: the control token in a POSTed form, or a one-time link `baton ui` asks for with the control token as bearer
// (single use, short-lived, only its digest kept). Either way the browser then holds only a random session id in an
// HttpOnly, SameSite=Strict cookie, so the token never appears in a URL, a page or a log. Actions that change state are
// POSTs that must come from this origin and carry the session's own CSRF token. Every page is built with the escaping
// template in html.ts: agent text, prompts and paths are untrusted.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename } from 'node:path';
import {
  type Engine,
  EngineError,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  OPERATOR,
  type OverviewView,
  type StatusView,
} from '../../../core/engine.ts';
import { isTerminal, type TaskEvent } from '../../../core/task.ts';
import type { Logger } from '../../../lib/log.ts';
import { readBodyText } from '../../../lib/net.ts';
import { redactError } from '../../../lib/redact.ts';
import { MAX_PROMPT_LENGTH } from '../tools.ts';
import { eventText, type GitSnapshotView, gitChanges, gitLine, gitStatusWord, oneLine } from './format.ts';
import { html, type SafeHtml, trusted } from './html.ts';

const COOKIE = 'baton_ui';
/** A dashboard session lasts this long; log in again after. */
const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Sessions kept at once; the oldest is dropped beyond this. */
const MAX_SESSIONS = 32;
/** A one-time login link works once, within this time. */
export const LOGIN_LINK_TTL_MS = 5 * 60_000;
/** Unused login links kept at once; the oldest is dropped beyond this. */
const MAX_LOGIN_LINKS = 16;
/** The login and cancel forms are tiny; anything bigger is refused unread. */
const MAX_FORM_BODY_BYTES = 4_096;
/** A continue form holds a prompt of at most MAX_PROMPT_LENGTH code points, form-encoded (up to 12 bytes each). */
const MAX_CONTINUE_BODY_BYTES = MAX_PROMPT_LENGTH * 12 + MAX_FORM_BODY_BYTES;
/** Open event streams at once (each is a held connection); more are refused until one closes. */
const MAX_STREAMS = 64;
/** Each round's prompt is shown up to this many characters. */
const PROMPT_SHOWN_CHARS = 20_000;
/** Tasks on one page of the list. */
const LIST_PAGE = 50;
/** How often an open list asks for its rows again. */
const LIST_REFRESH_MS = 2_000;

export interface DashboardOptions {
  engine: Engine;
  /** Constant-time comparison with the control token. */
  tokenMatches: (token: string) => boolean;
  logger: Logger;
}

/** One round as the engine's status view reports it. */
type RoundView = StatusView['rounds'][number];

interface Session {
  expires: number;
  /** Sent back by every form of this session; a page of another origin cannot read it. */
  csrf: string;
}

export class Dashboard {
  private readonly opts: DashboardOptions;
  /** sha256(session id) → session; the id itself is kept only by the browser. */
  private readonly sessions = new Map<string, Session>();
  /** sha256(login link code) → expiry; the code itself is only in the link `baton ui` printed or opened. */
  private readonly links = new Map<string, number>();
  private readonly streams = new Set<AbortController>();

  constructor(opts: DashboardOptions) {
    this.opts = opts;
  }

  /** Ends the open event streams (the hub is stopping). */
  close(): void {
    for (const s of this.streams) s.abort();
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, '') || '/ui';
    if (path === '/ui/login') {
      if (req.method !== 'POST') return sendHtml(res, 405, loginPage('Log in with the form.'));
      return this.login(req, res);
    }
    if (path === '/ui/link') {
      if (req.method !== 'POST') return sendText(res, 405, 'POST with the control token as bearer');
      return this.createLink(req, res);
    }
    const link = /^\/ui\/link\/([A-Za-z0-9_-]{1,128})$/.exec(path);
    if (link && req.method === 'GET') return this.useLink(res, link[1]!);

    const session = this.sessionOf(req);
    if (req.method === 'POST') {
      if (!session) return sendHtml(res, 401, loginPage());
      const form = await this.postedForm(req, session, path);
      if (typeof form === 'string') return sendHtml(res, 403, page('Refused', html`<p id="error">${form}</p>`));
      return this.action(res, path, session, form);
    }
    if (req.method !== 'GET') return sendHtml(res, 405, page('Not allowed', html`<p>Method not allowed.</p>`));
    if (!session) {
      if (path.endsWith('/events') || path === '/ui/rows') return sendText(res, 401, 'log in first');
      return sendHtml(res, path === '/ui' ? 200 : 401, loginPage());
    }
    if (path === '/ui' || path === '/ui/rows') {
      const q = (url.searchParams.get('q') ?? '').slice(0, 200);
      const cursor = url.searchParams.get('cursor') ?? undefined;
      return path === '/ui' ? this.listPage(res, session, q, cursor) : this.listRows(res, q, cursor);
    }
    const m = /^\/ui\/tasks\/([A-Za-z0-9_-]{1,64})(\/events)?$/.exec(path);
    if (!m) return sendHtml(res, 404, notFound('No such page.'));
    try {
      if (m[2]) return await this.events(req, res, m[1]!, url, session);
      return this.taskPage(res, m[1]!, session);
    } catch (err) {
      if (err instanceof EngineError && (err.code === 'not_found' || err.code === 'invalid')) {
        return sendHtml(res, 404, notFound(`${err.message}.`));
      }
      throw err;
    }
  }

  // ------------------------------------------------------------ login

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isForm(req)) return sendHtml(res, 415, loginPage('Send the login form.'));
    const body = await readBodyText(req, MAX_FORM_BODY_BYTES);
    const token = body === null ? '' : (new URLSearchParams(body).get('token') ?? '');
    if (!token || !this.opts.tokenMatches(token)) {
      this.opts.logger.warn('dashboard login refused');
      return sendHtml(res, 401, loginPage('That is not the control token.'));
    }
    this.opts.logger.info('dashboard login', { via: 'form' });
    this.startSession(res);
  }

  /** `baton ui` asks for a one-time link with the control token as bearer; the answer is the link's path. */
  private createLink(req: IncomingMessage, res: ServerResponse) {
    const m = /^Bearer (\S+)$/i.exec(String(req.headers.authorization ?? ''));
    if (!m || !this.opts.tokenMatches(m[1]!)) {
      this.opts.logger.warn('dashboard login link refused');
      res.setHeader('www-authenticate', 'Bearer realm="baton"');
      return sendJson(res, 401, { error: 'missing or invalid control token' });
    }
    const now = Date.now();
    for (const [k, exp] of this.links) if (exp < now) this.links.delete(k);
    while (this.links.size >= MAX_LOGIN_LINKS) this.links.delete(this.links.keys().next().value!);
    const code = randomBytes(32).toString('base64url');
    this.links.set(digestHex(code), now + LOGIN_LINK_TTL_MS);
    this.opts.logger.info('dashboard login link issued');
    sendJson(res, 201, { path: `/ui/link/${code}`, expiresInSeconds: LOGIN_LINK_TTL_MS / 1000 });
  }

  /** A login link logs in once: the code is forgotten before the session starts, whatever happens next. */
  private useLink(res: ServerResponse, code: string) {
    const key = digestHex(code);
    const expires = this.links.get(key);
    this.links.delete(key);
    if (expires === undefined || expires < Date.now()) {
      this.opts.logger.warn('dashboard login link refused');
      return sendHtml(
        res,
        401,
        loginPage('That login link was already used or has expired. Run `baton ui` for a new one, or use the form.'),
      );
    }
    this.opts.logger.info('dashboard login', { via: 'link' });
    this.startSession(res);
  }

  private startSession(res: ServerResponse): void {
    const sid = randomBytes(32).toString('base64url');
    const now = Date.now();
    for (const [k, s] of this.sessions) if (s.expires < now) this.sessions.delete(k);
    while (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(digestHex(sid), { expires: now + SESSION_TTL_MS, csrf: randomBytes(24).toString('base64url') });
    // A 303 to /ui drops a link's code from the address bar and from what a Referer could carry.
    res.writeHead(303, {
      location: '/ui',
      'set-cookie': `${COOKIE}=${sid}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=${SESSION_TTL_MS / 1000}`,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    });
    res.end();
  }

  /** The live session of the request's cookie, if any. Looked up by its digest, never compared as a string. */
  private sessionOf(req: IncomingMessage): (Session & { key: string }) | undefined {
    const sid = cookieValue(req.headers.cookie, COOKIE);
    if (!sid) return undefined;
    const key = digestHex(sid);
    const s = this.sessions.get(key);
    if (!s) return undefined;
    if (s.expires < Date.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return { ...s, key };
  }

  // ------------------------------------------------------------ actions (POST)

  /**
   * The form of a state-changing POST, or why it is refused. It must come from a page of this very origin (the hub
   * already refuses foreign origins; here a missing Origin is refused too) and carry the session's CSRF token.
   */
  private async postedForm(req: IncomingMessage, session: Session, path: string): Promise<URLSearchParams | string> {
    if (req.headers.origin !== `http://${req.headers.host}`) return 'This form must be sent from the dashboard itself.';
    if (!isForm(req)) return 'Send the form as application/x-www-form-urlencoded.';
    const limit = path.endsWith('/continue') ? MAX_CONTINUE_BODY_BYTES : MAX_FORM_BODY_BYTES;
    const body = await readBodyText(req, limit);
    if (body === null) return 'The form is too large.';
    const form = new URLSearchParams(body);
    const csrf = Buffer.from(form.get('csrf') ?? '');
    const expected = Buffer.from(session.csrf);
    if (csrf.length !== expected.length || !timingSafeEqual(csrf, expected)) {
      this.opts.logger.warn('dashboard form refused: wrong or missing CSRF token', { path });
      return 'This form is stale or was not sent by the dashboard; reload the page and try again.';
    }
    return form;
  }

  private async action(res: ServerResponse, path: string, session: Session & { key: string }, form: URLSearchParams) {
    if (path === '/ui/logout') {
      this.sessions.delete(session.key);
      res.writeHead(303, {
        location: '/ui',
        'set-cookie': `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0`,
      });
      res.end();
      return;
    }
    const m = /^\/ui\/tasks\/([A-Za-z0-9_-]{1,64})\/(cancel|continue)$/.exec(path);
    if (!m) return sendHtml(res, 404, notFound('No such action.'));
    const id = m[1]!;
    const back = html`<a href="/ui/tasks/${id}">Back to the task</a>`;
    try {
      if (m[2] === 'cancel') {
        this.opts.engine.cancel(OPERATOR, id);
        this.opts.logger.info('dashboard cancel', { taskId: id });
      } else {
        const prompt = form.get('prompt') ?? '';
        const key = form.get('key') ?? '';
        if (!prompt.trim())
          return sendHtml(res, 400, page('Continue', html`<p id="error">Write a prompt. ${back}</p>`));
        if ([...prompt].length > MAX_PROMPT_LENGTH) {
          return sendHtml(
            res,
            400,
            page('Continue', html`<p id="error">The prompt is over ${MAX_PROMPT_LENGTH} characters. ${back}</p>`),
          );
        }
        if (!/^[A-Za-z0-9_-]{16,64}$/.test(key)) {
          return sendHtml(res, 400, page('Continue', html`<p id="error">Reload the page and try again. ${back}</p>`));
        }
        // The round is the task's caller's, as if it had continued it; the form's one-time key makes a resent form a
        // replay instead of a second round.
        const { caller } = this.opts.engine.status(OPERATOR, id, 0, 1);
        await this.opts.engine.continue(String(caller), { taskId: id, prompt, idempotencyKey: `ui-${key}` });
        this.opts.logger.info('dashboard continue', { taskId: id });
      }
    } catch (err) {
      if (err instanceof EngineError) {
        const status = { not_found: 404, invalid: 400, conflict: 409, forbidden: 403 }[err.code];
        return sendHtml(res, status, page('Refused', html`<p id="error">${redactError(err)}. ${back}</p>`));
      }
      throw err;
    }
    res.writeHead(303, { location: `/ui/tasks/${id}`, 'cache-control': 'no-store' });
    res.end();
  }

  // ------------------------------------------------------------ pages

  private overview(q: string, cursor: string | undefined): OverviewView | string {
    try {
      return this.opts.engine.overview(q, cursor, Math.min(LIST_PAGE, MAX_LIST_PAGE));
    } catch (err) {
      return redactError(err);
    }
  }

  private listPage(res: ServerResponse, session: Session, q: string, cursor: string | undefined) {
    const list = this.overview(q, cursor);
    if (typeof list === 'string') {
      return sendHtml(res, 400, page('Tasks', html`<p id="error">${list}. <a href="/ui">Start over</a></p>`));
    }
    const body = html`<h1>Tasks (all callers)</h1>
      <form class="filter" method="get" action="/ui"><label>Filter <input type="search" name="q" value="${q}"
        placeholder="id, caller, agent, state, project or prompt"></label> <button>Filter</button>
        ${q && html`<a href="/ui">clear</a>`}</form>
      <p class="zone">Times are in your time zone (<span class="offset"></span>); the list refreshes by itself.</p>
      <div id="list" data-refresh="${`/ui/rows?${new URLSearchParams({ q, ...(cursor ? { cursor } : {}) })}`}"
        data-every="${LIST_REFRESH_MS}">${listBody(list, q)}</div>`;
    sendHtml(res, 200, page('Tasks', body, { session }));
  }

  /** The list's rows alone, for the page's refresh. */
  private listRows(res: ServerResponse, q: string, cursor: string | undefined) {
    const list = this.overview(q, cursor);
    if (typeof list === 'string') return sendText(res, 400, list);
    sendFragment(res, listBody(list, q));
  }

  private taskPage(res: ServerResponse, id: string, session: Session): void {
    // With the streamed text, like the live stream that follows from the page's cursor (rule: event-pages).
    const t = this.opts.engine.status(OPERATOR, id, 0, MAX_EVENT_PAGE, { messageText: true });
    const parts = this.taskParts(t, session);
    const follow = !(isTerminal(t.state) && !t.hasMore);
    const body = html`<p><a href="/ui">All tasks</a></p><h1>Task ${t.taskId}</h1>
      <p class="zone">Times are in your time zone (<span class="offset"></span>).</p>
      <div id="facts">${parts.facts}</div>
      <div id="controls" data-state="${t.state}">${parts.controls}</div>
      <h2>Answer</h2><div id="answer">${parts.answer}</div>
      <h2>Rounds</h2><div id="rounds">${parts.rounds}</div>
      <h2>Events</h2><p id="stream">${follow ? 'following live events…' : 'the task has ended'}</p>
      <ol id="events" data-after="${t.nextCursor}" data-follow="${follow ? `/ui/tasks/${t.taskId}/events` : ''}">${t.events.map(eventItem)}</ol>`;
    sendHtml(res, 200, page(`Task ${t.taskId}`, body, { session }));
  }

  /** The parts of a task page that change while it runs, rendered the same for the first load and for live updates. */
  private taskParts(t: StatusView, session: Session): Record<'facts' | 'controls' | 'answer' | 'rounds', SafeHtml> {
    const prompts = new Map(this.opts.engine.prompts(t.taskId, PROMPT_SHOWN_CHARS).map((p) => [p.n, p]));
    return {
      facts: factsList(t),
      controls: controls(t, session),
      answer: this.answer(t),
      rounds: html`${t.rounds.map((r) => roundSection(r, prompts.get(r.n)))}`,
    };
  }

  private answer(t: StatusView): SafeHtml {
    const r = this.opts.engine.result(String(t.caller), t.taskId);
    if (!r.available) return html`<p class="none">No answer yet (round ${t.round} is ${t.state}).</p>`;
    const cut = r.done
      ? ''
      : `The first ${r.nextOffset} of ${r.total} characters; agent_result pages through the rest.`;
    return html`<p>Round ${r.round}, ${r.total} characters${r.error ? html`, error: ${r.error}` : ''}.</p>
      <pre class="answer">${r.text}</pre>${cut && html`<p class="cut">${cut}</p>`}`;
  }

  /**
   * Server-sent events: each wait returns at once when events exist, else sleeps on the task's waiter. After a batch
   * that holds anything but streamed text, the page's changing parts are sent again, so the header, answer, rounds and
   * controls follow the task without a reload.
   */
  private async events(
    req: IncomingMessage,
    res: ServerResponse,
    id: string,
    url: URL,
    session: Session,
  ): Promise<void> {
    const resume = req.headers['last-event-id'] ?? url.searchParams.get('after') ?? '0';
    let after = Number(resume);
    if (!Number.isSafeInteger(after) || after < 0) after = 0;
    this.opts.engine.status(OPERATOR, id, after, 1); // 404 before the stream starts
    if (this.streams.size >= MAX_STREAMS) return sendText(res, 503, 'too many open event streams; close a tab');
    const gone = new AbortController();
    this.streams.add(gone);
    res.once('close', () => gone.abort());
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.write(': following\n\n');
    try {
      while (!gone.signal.aborted) {
        const w = await this.opts.engine.wait(OPERATOR, id, after, MAX_WAIT_MS, gone.signal);
        for (const ev of w.events) {
          const data = { seq: ev.seq, kind: ev.kind, state: ev.state ?? null, time: ev.time, head: eventHead(ev) };
          res.write(`id: ${ev.seq}\nevent: task\ndata: ${JSON.stringify({ ...data, text: eventText(ev) })}\n\n`);
        }
        after = w.nextCursor;
        const ended = isTerminal(w.state) && !w.hasMore;
        if (ended || w.events.some((ev) => ev.kind !== 'message')) {
          const t = this.opts.engine.status(OPERATOR, id, after, 1);
          const parts = Object.fromEntries(Object.entries(this.taskParts(t, session)).map(([k, v]) => [k, String(v)]));
          res.write(`event: view\ndata: ${JSON.stringify({ state: t.state, ...parts })}\n\n`);
        }
        if (ended) {
          res.write(`event: end\ndata: ${JSON.stringify({ state: w.state })}\n\n`);
          break;
        }
        if (w.timedOut) res.write(': still here\n\n');
      }
    } finally {
      this.streams.delete(gone);
      res.end();
    }
  }
}

// ------------------------------------------------------------ rendering

/** `<time>` holds UTC; the page's script rewrites it in the viewer's zone with the offset (`age` as time since). */
function time(iso: string | null | undefined, form: 'full' | 'clock' | 'age' = 'full'): SafeHtml {
  if (!iso) return html``;
  return html`<time datetime="${iso}" data-form="${form}">${iso}</time>`;
}

function listBody(list: OverviewView, q: string): SafeHtml {
  if (!list.tasks.length) return html`<p class="none">${q ? 'No task matches the filter.' : 'No tasks yet.'}</p>`;
  const rows = list.tasks.map(
    (t) => html`<tr data-task="${t.taskId}"><td><a href="/ui/tasks/${t.taskId}">${t.taskId}</a></td>
      <td title="${t.cwd}">${basename(t.cwd)}</td><td>${t.agent}</td><td>${String(t.caller ?? '')}</td>
      <td class="state-${t.state}">${t.state}</td><td>${time(t.createdAt, 'age')}</td>
      <td class="prompt">${oneLine(t.promptStart, 120)}</td></tr>`,
  );
  const more =
    list.nextCursor &&
    html`<p><a href="/ui?${String(new URLSearchParams({ q, cursor: list.nextCursor }))}">Older tasks</a></p>`;
  return html`<table id="tasks"><thead><tr><th>task</th><th>project</th><th>agent</th><th>caller</th><th>state</th>
    <th>age</th><th>prompt</th></tr></thead><tbody>${rows}</tbody></table>${more}`;
}

function factsList(t: StatusView): SafeHtml {
  const facts: [string, SafeHtml | string | number | null][] = [
    ['caller', typeof t.caller === 'string' ? t.caller : ''],
    ['agent', t.agent],
    ['state', t.state],
    ['round', t.round],
    ['cwd', t.cwd],
    ['workdir', t.workdir === t.cwd ? null : t.workdir],
    ['isolation', t.isolation],
    ['session', t.sessionId],
    ['created', time(t.createdAt)],
    ['updated', time(t.updatedAt)],
    ['error', t.error],
  ];
  return html`<dl>${facts
    .filter(([, v]) => v !== null && v !== '')
    .map(([k, v]) => html`<dt>${k}</dt><dd id="${`fact-${k}`}">${v}</dd>`)}</dl>`;
}

/** Cancel while a round is queued or running; Continue (with a prompt box) once it has ended. */
function controls(t: StatusView, session: Session): SafeHtml {
  const csrf = html`<input type="hidden" name="csrf" value="${session.csrf}">`;
  if (!isTerminal(t.state)) {
    return html`<form method="post" action="/ui/tasks/${t.taskId}/cancel">${csrf}
      <button id="cancel" type="submit">Cancel round ${t.round}</button></form>`;
  }
  const key = randomBytes(18).toString('base64url');
  return html`<form method="post" action="/ui/tasks/${t.taskId}/continue" class="continue">${csrf}
    <input type="hidden" name="key" value="${key}"><label for="prompt">Continue the session with a new prompt</label>
    <textarea id="prompt" name="prompt" rows="4" required></textarea>
    <button id="continue" type="submit">Continue</button></form>`;
}

function roundSection(r: RoundView, prompt: { text: string; chars: number } | undefined): SafeHtml {
  const facts = [
    html`state <span class="state-${r.state}">${r.state}</span>${r.abandoned ? ' (abandoned)' : ''}`,
    r.startedAt ? html`started ${time(r.startedAt)}` : 'not started',
    r.endedAt && html`ended ${time(r.endedAt)}`,
    r.resultChars && `result ${r.resultChars} characters`,
    r.error && `error: ${r.error}`,
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
function eventHead(ev: TaskEvent): string {
  return `r${ev.round} ${ev.kind}`;
}

/** One event as a list item: its time, round and kind, then its text. Every kind renders, known or not. */
function eventItem(ev: TaskEvent): SafeHtml {
  const state = typeof ev.state === 'string' ? ev.state : null;
  return html`<li data-seq="${ev.seq}" data-kind="${ev.kind}" data-state="${state ?? ''}">${time(
    typeof ev.time === 'string' ? ev.time : null,
    'clock',
  )} <span class="head">${eventHead(ev)}</span> <span class="text">${eventText(ev)}</span></li>`;
}

/**
 * The page's one script. Times become the viewer's zone with the offset; an open list asks for its rows again; an
 * open task follows its event stream, appending events as text (never as HTML) and swapping in the parts the hub
 * re-rendered. Continue's box is replaced only when the state changes, so a prompt being typed survives updates.
 */
const pageScript = `
const pad = (n) => String(n).padStart(2, '0');
const offset = () => {
  const m = -new Date().getTimezoneOffset();
  return 'UTC' + (m < 0 ? '-' : '+') + pad(Math.floor(Math.abs(m) / 60)) + ':' + pad(Math.abs(m) % 60);
};
const age = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return Math.floor(s / 3600) + ' h';
  return Math.floor(s / 86400) + ' d';
};
const localTimes = (root) => {
  for (const el of root.querySelectorAll('time[datetime]')) {
    const d = new Date(el.getAttribute('datetime'));
    if (Number.isNaN(d.getTime())) continue;
    const clock = pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    const day = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
    if (el.dataset.form === 'age') {
      el.textContent = age(Date.now() - d.getTime());
      el.title = day + ' ' + clock + ' ' + offset();
    } else if (el.dataset.form === 'clock') {
      el.textContent = clock;
      el.title = day + ' ' + clock + ' ' + offset();
    } else el.textContent = day + ' ' + clock + ' ' + offset();
  }
};
for (const el of document.querySelectorAll('.offset')) el.textContent = offset();
localTimes(document);

const list = document.getElementById('list');
if (list && list.dataset.refresh) {
  const refresh = async () => {
    try {
      const r = await fetch(list.dataset.refresh, { cache: 'no-store', credentials: 'same-origin' });
      if (r.status === 401) { list.dataset.state = 'logged-out'; return; }
      if (r.ok) { list.innerHTML = await r.text(); localTimes(list); list.dataset.refreshed = String(Date.now()); }
    } catch {}
    setTimeout(refresh, Number(list.dataset.every));
  };
  setTimeout(refresh, Number(list.dataset.every));
}

const events = document.getElementById('events');
if (events && events.dataset.follow) {
  const note = document.getElementById('stream');
  const controls = document.getElementById('controls');
  const source = new EventSource(events.dataset.follow + '?after=' + encodeURIComponent(events.dataset.after));
  source.addEventListener('task', (m) => {
    const ev = JSON.parse(m.data);
    const li = document.createElement('li');
    li.dataset.seq = String(ev.seq);
    li.dataset.kind = ev.kind;
    li.dataset.state = ev.state || '';
    li.dataset.live = '1';
    const t = document.createElement('time');
    t.setAttribute('datetime', ev.time);
    t.dataset.form = 'clock';
    const head = document.createElement('span');
    head.className = 'head';
    head.textContent = ev.head;
    const text = document.createElement('span');
    text.className = 'text';
    text.textContent = ev.text;
    li.append(t, ' ', head, ' ', text);
    localTimes(li);
    events.appendChild(li);
  });
  source.addEventListener('view', (m) => {
    const v = JSON.parse(m.data);
    for (const id of ['facts', 'answer', 'rounds']) {
      const el = document.getElementById(id);
      el.innerHTML = v[id];
      localTimes(el);
    }
    if (controls.dataset.state !== v.state) {
      controls.innerHTML = v.controls;
      controls.dataset.state = v.state;
    }
  });
  source.addEventListener('end', (m) => {
    source.close();
    note.textContent = 'the task has ended (' + JSON.parse(m.data).state + ')';
  });
  source.onerror = () => { note.textContent = 'reconnecting…'; };
  source.onopen = () => { note.textContent = 'following live events…'; };
}
`;

const style = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; } dt { font-weight: bold; }
#events li { font-family: ui-monospace, monospace; white-space: pre-wrap; } .round { border-top: 1px solid #ddd; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: 6px; max-height: 30em; overflow: auto; }
td.prompt { max-width: 40em; color: #444; } .zone, .none, .cut { color: #666; }
.state-failed, .state-interrupted, .state-cancelled { color: #b00; } .state-succeeded { color: #070; }
form.logout { float: right; } form.continue textarea { display: block; width: 100%; max-width: 60em; margin: 4px 0; }
`;

/** A page and the nonce its CSP allows for its one style and script element. */
interface Rendered {
  html: string;
  nonce: string;
}

/** A page; with a session it gets the log-out form and the page script. */
function page(title: string, body: SafeHtml, opts: { session?: Session } = {}): Rendered {
  const nonce = randomBytes(16).toString('base64');
  const logout =
    opts.session &&
    html`<form class="logout" method="post" action="/ui/logout"><input type="hidden" name="csrf"
      value="${opts.session.csrf}"><button>Log out</button></form>`;
  const script = opts.session && html`<script nonce="${nonce}">${trusted(pageScript)}</script>`;
  const doc = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baton — ${title}</title><style
    nonce="${nonce}">${trusted(style)}</style></head><body>${logout}${body}${script}</body></html>`;
  return { html: String(doc), nonce };
}

function loginPage(error?: string): Rendered {
  return page(
    'Log in',
    html`<h1>baton dashboard</h1>${error && html`<p id="error">${error}</p>`}
      <p>Run <code>baton ui</code> for a one-time login link, or paste the control token (from the hub config).</p>
      <form method="post" action="/ui/login"><label>Control token
      <input type="password" name="token" autocomplete="current-password" autofocus></label>
      <button type="submit">Log in</button></form>`,
  );
}

function notFound(message: string): Rendered {
  return page('Not found', html`<p>${message} <a href="/ui">All tasks</a></p>`);
}

function sendHtml(res: ServerResponse, status: number, { html: body, nonce }: Rendered): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(body);
}

/** Rows for a page that is already open: the page's CSP governs them, and they hold no script. */
function sendFragment(res: ServerResponse, fragment: SafeHtml): void {
  const body = String(fragment);
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  });
  res.end(body);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(body);
}

function isForm(req: IncomingMessage): boolean {
  return String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
}

function digestHex(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
