// The local web dashboard (rule: dashboard) at /ui on the hub: every caller's tasks, a task's rounds with their git
// snapshots, and its live events over server-sent events fed by the engine's waiters. The operator logs in with the
// control token in a POSTed form; the browser then holds only a random session id in an HttpOnly, SameSite=Strict
// cookie, so the token never appears in a URL, a page or a log. Every value shown is escaped: agent text is untrusted.
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Engine,
  EngineError,
  type ListView,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  OPERATOR,
  type StatusView,
} from '../../../core/engine.ts';
import { isTerminal, type TaskEvent } from '../../../core/task.ts';
import type { Logger } from '../../../lib/log.ts';
import { readBodyText } from '../../../lib/net.ts';
import { redactError } from '../../../lib/redact.ts';
import { eventLine, type GitSnapshotView, gitChanges, gitLine, gitStatusWord } from './format.ts';

const COOKIE = 'baton_ui';
/** A dashboard session lasts this long; log in again after. */
const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Sessions kept at once; the oldest is dropped beyond this. */
const MAX_SESSIONS = 32;
/** The login form is tiny; anything bigger is refused unread. */
const MAX_LOGIN_BODY_BYTES = 4_096;
/** Open event streams at once (each is a held connection); more are refused until one closes. */
const MAX_STREAMS = 64;

export interface DashboardOptions {
  engine: Engine;
  /** Constant-time comparison with the control token. */
  tokenMatches: (token: string) => boolean;
  logger: Logger;
}

/** One round as the engine's status view reports it. */
type RoundView = StatusView['rounds'][number];

export class Dashboard {
  private readonly opts: DashboardOptions;
  /** sha256(session id) → expiry; the id itself is kept only by the browser. */
  private readonly sessions = new Map<string, number>();
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
    const authed = this.sessionOf(req) !== undefined;
    if (path === '/ui/logout' && req.method === 'POST') {
      const sid = this.sessionOf(req);
      if (sid) this.sessions.delete(sid);
      res.writeHead(303, {
        location: '/ui',
        'set-cookie': `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0`,
      });
      res.end();
      return;
    }
    if (req.method !== 'GET') return sendHtml(res, 405, page('Not allowed', '<p>Method not allowed.</p>'));
    if (!authed) {
      if (path.endsWith('/events')) return sendText(res, 401, 'log in first');
      return sendHtml(res, path === '/ui' ? 200 : 401, loginPage());
    }
    if (path === '/ui') return this.listPage(res, url.searchParams.get('cursor') ?? undefined);
    const m = /^\/ui\/tasks\/([A-Za-z0-9_-]{1,64})(\/events)?$/.exec(path);
    if (!m) return sendHtml(res, 404, page('Not found', '<p>No such page. <a href="/ui">All tasks</a></p>'));
    try {
      if (m[2]) return await this.events(req, res, m[1]!, url);
      return this.taskPage(res, m[1]!);
    } catch (err) {
      if (err instanceof EngineError && (err.code === 'not_found' || err.code === 'invalid')) {
        return sendHtml(res, 404, page('Not found', `<p>${esc(err.message)}. <a href="/ui">All tasks</a></p>`));
      }
      throw err;
    }
  }

  // ------------------------------------------------------------ login

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const type = String(req.headers['content-type'] ?? '');
    if (!type.startsWith('application/x-www-form-urlencoded')) {
      return sendHtml(res, 415, loginPage('Send the login form.'));
    }
    const body = await readBodyText(req, MAX_LOGIN_BODY_BYTES);
    const token = body === null ? '' : (new URLSearchParams(body).get('token') ?? '');
    if (!token || !this.opts.tokenMatches(token)) {
      this.opts.logger.warn('dashboard login refused');
      return sendHtml(res, 401, loginPage('That is not the control token.'));
    }
    const sid = randomBytes(32).toString('base64url');
    const now = Date.now();
    for (const [k, exp] of this.sessions) if (exp < now) this.sessions.delete(k);
    while (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(sessionKey(sid), now + SESSION_TTL_MS);
    this.opts.logger.info('dashboard login');
    res.writeHead(303, {
      location: '/ui',
      'set-cookie': `${COOKIE}=${sid}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=${SESSION_TTL_MS / 1000}`,
      'cache-control': 'no-store',
    });
    res.end();
  }

  /** The session key of a live session cookie, if any. Looked up by its digest, never compared as a string. */
  private sessionOf(req: IncomingMessage): string | undefined {
    const sid = cookieValue(req.headers.cookie, COOKIE);
    if (!sid) return undefined;
    const key = sessionKey(sid);
    const expires = this.sessions.get(key);
    if (expires === undefined) return undefined;
    if (expires < Date.now()) {
      this.sessions.delete(key);
      return undefined;
    }
    return key;
  }

  // ------------------------------------------------------------ pages

  private listPage(res: ServerResponse, cursor: string | undefined): void {
    let list: ListView;
    try {
      list = this.opts.engine.list(OPERATOR, cursor, MAX_LIST_PAGE);
    } catch (err) {
      sendHtml(res, 400, page('Tasks', `<p>${esc(redactError(err))}. <a href="/ui">Start over</a></p>`));
      return;
    }
    const rows = list.tasks
      .map(
        (t) =>
          `<tr><td><a href="/ui/tasks/${esc(t.taskId)}">${esc(t.taskId)}</a></td><td>${esc(t.caller)}</td>` +
          `<td>${esc(t.agent)}</td><td class="state-${esc(t.state)}">${esc(t.state)}</td><td>${t.round}</td>` +
          `<td>${esc(t.updatedAt)}</td></tr>`,
      )
      .join('');
    const more = list.nextCursor
      ? `<p><a href="/ui?cursor=${encodeURIComponent(list.nextCursor)}">Next page</a></p>`
      : '';
    const body = list.tasks.length
      ? `<table id="tasks"><thead><tr><th>task</th><th>caller</th><th>agent</th><th>state</th><th>round</th><th>updated</th></tr></thead><tbody>${rows}</tbody></table>${more}`
      : '<p>No tasks yet.</p>';
    sendHtml(res, 200, page('Tasks', `<h1>Tasks (all callers)</h1>${body}`, { logout: true }));
  }

  private taskPage(res: ServerResponse, id: string): void {
    const t = this.opts.engine.status(OPERATOR, id, 0, MAX_EVENT_PAGE);
    const rounds = t.rounds;
    // The operator's view names the task's caller (an extra key of the view).
    const facts: [string, string | number | null][] = [
      ['caller', typeof t.caller === 'string' ? t.caller : ''],
      ['agent', t.agent],
      ['state', t.state],
      ['round', t.round],
      ['cwd', t.cwd],
      ['workdir', t.workdir],
      ['isolation', t.isolation],
      ['session', t.sessionId],
      ['created', t.createdAt],
      ['updated', t.updatedAt],
      ['error', t.error],
      ['result', t.result?.chars ? `${t.result.chars} characters: ${t.result.preview}` : null],
    ];
    const dl = facts
      .filter(([, v]) => v !== null && v !== '')
      .map(([k, v]) => `<dt>${k}</dt><dd${k === 'state' ? ' id="state"' : ''}>${esc(v)}</dd>`)
      .join('');
    const events = t.events.map((ev) => eventItem(ev, false)).join('');
    const live = isTerminal(t.state) && !t.hasMore ? '' : liveScript;
    const body =
      `<p><a href="/ui">All tasks</a></p><h1>Task ${esc(t.taskId)}</h1><dl>${dl}</dl>` +
      `<h2>Rounds</h2>${rounds.map(roundSection).join('')}` +
      `<h2>Events</h2><p id="stream">${live ? 'following live events…' : 'the task has ended'}</p>` +
      `<ol id="events" data-after="${t.nextCursor}">${events}</ol>`;
    sendHtml(res, 200, page(`Task ${t.taskId}`, body, { logout: true, script: live }));
  }

  /** Server-sent events: each wait returns at once when events exist, else sleeps on the task's waiter. */
  private async events(req: IncomingMessage, res: ServerResponse, id: string, url: URL): Promise<void> {
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
          const data = { seq: ev.seq, kind: ev.kind, state: ev.state ?? null, line: eventLine(ev) };
          res.write(`id: ${ev.seq}\nevent: task\ndata: ${JSON.stringify(data)}\n\n`);
        }
        after = w.nextCursor;
        if (isTerminal(w.state) && !w.hasMore) {
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

function roundSection(r: RoundView): string {
  const facts = [
    `state ${esc(r.state)}${r.abandoned ? ' (abandoned)' : ''}`,
    r.startedAt ? `started ${esc(r.startedAt)}` : 'not started',
    r.endedAt ? `ended ${esc(r.endedAt)}` : '',
    r.resultChars ? `result ${r.resultChars} characters` : '',
    r.error ? `error: ${esc(r.error)}` : '',
  ].filter(Boolean);
  const before = r.gitBefore as GitSnapshotView | null;
  const after = r.gitAfter as GitSnapshotView | null;
  const changes = gitChanges(before, after);
  const changed = changes.length
    ? `<table class="changes"><thead><tr><th>file</th><th>before</th><th>after</th></tr></thead><tbody>${changes
        .map(
          (c) =>
            `<tr><td>${esc(c.path)}</td><td>${esc(gitStatusWord(c.before))}</td><td>${esc(gitStatusWord(c.after))}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : after
      ? '<p>No file changed status during this round.</p>'
      : '';
  const headMoved =
    before?.git && after?.git && before.head !== after.head
      ? `<p>HEAD moved: ${esc(before.head?.slice(0, 12) ?? 'none')} → ${esc(after.head?.slice(0, 12) ?? 'none')}</p>`
      : '';
  return (
    `<section class="round" id="round-${r.n}"><h3>Round ${r.n}</h3><p>${facts.join(' · ')}</p>` +
    `<p>git before: ${esc(gitLine(before))}<br>git after: ${esc(after ? gitLine(after) : 'not taken yet')}</p>` +
    headMoved +
    changed +
    dirtyList('dirty before', before) +
    dirtyList('dirty after', after) +
    '</section>'
  );
}

function dirtyList(label: string, s: GitSnapshotView | null): string {
  if (!s?.git || !s.dirty?.length) return '';
  const more = (s.dirtyCount ?? 0) > s.dirty.length ? `<li>… ${s.dirtyCount! - s.dirty.length} more</li>` : '';
  return `<details><summary>${label} (${s.dirtyCount})</summary><ul>${s.dirty
    .map((f) => `<li><code>${esc(f.status)}</code> ${esc(f.path)}</li>`)
    .join('')}${more}</ul></details>`;
}

function eventItem(ev: TaskEvent, live: boolean): string {
  const state = typeof ev.state === 'string' ? ` data-state="${esc(ev.state)}"` : '';
  return `<li data-seq="${ev.seq}" data-kind="${esc(ev.kind)}"${state}${live ? ' data-live="1"' : ''}>${esc(eventLine(ev))}</li>`;
}

/** Appends each streamed event with textContent (never as HTML) and stops at the task's end. */
const liveScript = `
const list = document.getElementById('events');
const note = document.getElementById('stream');
const source = new EventSource(location.pathname + '/events?after=' + encodeURIComponent(list.dataset.after));
source.addEventListener('task', (m) => {
  const ev = JSON.parse(m.data);
  const li = document.createElement('li');
  li.dataset.seq = String(ev.seq);
  li.dataset.kind = ev.kind;
  if (ev.state) li.dataset.state = ev.state;
  li.dataset.live = '1';
  li.textContent = ev.line;
  list.appendChild(li);
  if (ev.kind === 'lifecycle' && ev.state) document.getElementById('state').textContent = ev.state;
});
source.addEventListener('end', (m) => {
  source.close();
  note.textContent = 'the task has ended (' + JSON.parse(m.data).state + '); reload for the git snapshot after the round';
});
source.onerror = () => { note.textContent = 'reconnecting…'; };
source.onopen = () => { note.textContent = 'following live events…'; };
`;

const style = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; } dt { font-weight: bold; }
#events li { font-family: ui-monospace, monospace; white-space: pre-wrap; } .round { border-top: 1px solid #ddd; }
.state-failed, .state-interrupted { color: #b00; } .state-succeeded { color: #070; }
form.logout { float: right; }
`;

/** A page and the nonce its CSP allows for its one style and script element. */
interface Rendered {
  html: string;
  nonce: string;
}

function page(title: string, body: string, opts: { logout?: boolean; script?: string } = {}): Rendered {
  const nonce = randomBytes(16).toString('base64');
  const logout = opts.logout
    ? '<form class="logout" method="post" action="/ui/logout"><button>Log out</button></form>'
    : '';
  const script = opts.script ? `<script nonce="${nonce}">${opts.script}</script>` : '';
  return {
    html: `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baton — ${esc(title)}</title><style nonce="${nonce}">${style}</style></head><body>${logout}${body}${script}</body></html>`,
    nonce,
  };
}

function loginPage(error?: string): Rendered {
  return page(
    'Log in',
    `<h1>baton dashboard</h1>${error ? `<p id="error">${esc(error)}</p>` : ''}` +
      '<form method="post" action="/ui/login"><label>Control token (from the hub config) ' +
      '<input type="password" name="token" autocomplete="current-password" autofocus></label> ' +
      '<button type="submit">Log in</button></form>',
  );
}

function sendHtml(res: ServerResponse, status: number, { html, nonce }: Rendered): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(html);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function esc(v: unknown): string {
  return String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function sessionKey(sid: string): string {
  return createHash('sha256').update(sid).digest('hex');
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
