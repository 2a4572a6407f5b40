// The local web dashboard (rule: dashboard) at /ui on the hub: every caller's tasks, newest first and refreshing; a
// task's prompt, answer, rounds with their git snapshots and its live events over server-sent events fed by the
// engine's waiters; Cancel and Continue for the operator. This module routes the requests; who may send them is in
// auth.ts, the markup in pages.ts (with the browser's script and style in client/), the event stream in sse.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TargetStatus } from '../../../agents/targets/target.ts';
import { isDecision } from '../../../core/approvals.ts';
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
import { isTerminal } from '../../../core/task.ts';
import type { UsageTotals } from '../../../core/usage.ts';
import { BatonError } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { redactError } from '../../../lib/redact.ts';
import { httpStatus } from '../../errors.ts';
import { MAX_PROMPT_LENGTH } from '../tools.ts';
import { DashboardAuth, type Session } from './auth.ts';
import { eventText } from './format.ts';
import { html } from './html.ts';
import {
  eventHead,
  listBody,
  listPage,
  loginPage,
  notFound,
  page,
  refusedPage,
  type TaskParts,
  taskPage,
  taskParts,
} from './pages.ts';
import { sendFragment, sendHtml, sendText } from './respond.ts';
import { SseStreams } from './sse.ts';

/** Open event streams at once (each is a held connection); more are refused until one closes. */
const MAX_STREAMS = 64;
/** Each round's prompt is shown up to this many characters. */
const PROMPT_SHOWN_CHARS = 20_000;
/** Tasks on one page of the list. */
const LIST_PAGE = 50;

export interface DashboardOptions {
  engine: Engine;
  /** Constant-time comparison with the control token. */
  tokenMatches: (token: string) => boolean;
  logger: Logger;
  /** The targets in use, with their fence and any warning (as /control/health reports them). */
  targets?: () => readonly TargetStatus[];
}

export class Dashboard {
  private readonly opts: DashboardOptions;
  private readonly auth: DashboardAuth;
  private readonly streams = new SseStreams(MAX_STREAMS);

  constructor(opts: DashboardOptions) {
    this.opts = opts;
    this.auth = new DashboardAuth({ tokenMatches: opts.tokenMatches, logger: opts.logger });
  }

  /** Ends the open event streams (the hub is stopping). */
  close(): void {
    this.streams.closeAll();
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, '') || '/ui';
    if (path === '/ui/login') {
      if (req.method !== 'POST') return sendHtml(res, 405, loginPage('Log in with the form.'));
      return this.auth.login(req, res);
    }
    if (path === '/ui/link') {
      if (req.method !== 'POST') return sendText(res, 405, 'POST with the control token as bearer');
      return this.auth.createLink(req, res);
    }
    const link = /^\/ui\/link\/([A-Za-z0-9_-]{1,128})$/.exec(path);
    if (link && req.method === 'GET') return this.auth.useLink(res, link[1]!);

    const session = this.auth.sessionOf(req);
    if (req.method === 'POST') {
      if (!session) return sendHtml(res, 401, loginPage());
      const form = await this.auth.postedForm(req, session, path);
      if (typeof form === 'string') return sendHtml(res, 403, refusedPage('Refused', form));
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
      if (path === '/ui/rows') return this.listRows(res, q, cursor);
      const from = url.searchParams.get('from') || undefined;
      const to = url.searchParams.get('to') || undefined;
      return this.listPage(res, session, q, cursor, { from, to });
    }
    const m = /^\/ui\/tasks\/([A-Za-z0-9_-]{1,64})(\/events)?$/.exec(path);
    if (!m) return sendHtml(res, 404, notFound('No such page.'));
    try {
      if (m[2]) return await this.events(req, res, m[1]!, url, session);
      return this.taskPage(res, m[1]!, session);
    } catch (err) {
      // A task id or cursor that is not there (or not valid) is a page that is not there.
      if (err instanceof EngineError && ['not_found', 'invalid', 'invalid_params'].includes(err.code)) {
        return sendHtml(res, 404, notFound(`${err.message}.`));
      }
      throw err;
    }
  }

  // ------------------------------------------------------------ actions (POST)

  private async action(res: ServerResponse, path: string, session: Session, form: URLSearchParams) {
    if (path === '/ui/logout') {
      // The session's open streams end with it: a logged-out browser gets nothing more.
      this.streams.closeOwnedBy(session.key);
      return this.auth.logout(res, session);
    }
    const m = /^\/ui\/tasks\/([A-Za-z0-9_-]{1,64})\/(cancel|continue|respond)$/.exec(path);
    if (!m) return sendHtml(res, 404, notFound('No such action.'));
    const id = m[1]!;
    const back = html`<a href="/ui/tasks/${id}">Back to the task</a>`;
    try {
      if (m[2] === 'cancel') {
        this.opts.engine.cancel(OPERATOR, id);
        this.opts.logger.info('dashboard cancel', { taskId: id });
      } else if (m[2] === 'respond') {
        const request = form.get('request') ?? '';
        const decision = form.get('decision') ?? '';
        if (!isDecision(decision)) return sendHtml(res, 400, refusedPage('Answer', html`Unknown decision. ${back}`));
        this.opts.engine.respond(OPERATOR, id, request, decision);
        this.opts.logger.info('dashboard answer', { taskId: id, requestId: request, decision });
      } else {
        const prompt = form.get('prompt') ?? '';
        const key = form.get('key') ?? '';
        if (!prompt.trim()) return sendHtml(res, 400, refusedPage('Continue', html`Write a prompt. ${back}`));
        if ([...prompt].length > MAX_PROMPT_LENGTH) {
          return sendHtml(
            res,
            400,
            refusedPage('Continue', html`The prompt is over ${MAX_PROMPT_LENGTH} characters. ${back}`),
          );
        }
        if (!/^[A-Za-z0-9_-]{16,64}$/.test(key)) {
          return sendHtml(res, 400, refusedPage('Continue', html`Reload the page and try again. ${back}`));
        }
        // The round is the task's caller's, run as if it had continued it (so refused where the caller may no longer
        // reach the agent), and recorded as the operator's; the form's one-time key makes a resent form a replay
        // instead of a second round.
        const { caller } = this.opts.engine.status(OPERATOR, id, 0, 1);
        await this.opts.engine.continue(String(caller), {
          taskId: id,
          prompt,
          idempotencyKey: `ui-${key}`,
          by: 'operator',
        });
        this.opts.logger.info('dashboard continue', { taskId: id });
      }
    } catch (err) {
      if (err instanceof BatonError) {
        const status = httpStatus(err.code);
        return sendHtml(res, status, refusedPage('Refused', html`${redactError(err)}. ${back}`));
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

  private listPage(
    res: ServerResponse,
    session: Session,
    q: string,
    cursor: string | undefined,
    period: { from?: string; to?: string },
  ) {
    const list = this.overview(q, cursor);
    if (typeof list === 'string') {
      return sendHtml(res, 400, refusedPage('Tasks', html`${list}. <a href="/ui">Start over</a>`));
    }
    let usage: UsageTotals;
    try {
      usage = this.opts.engine.usageTotals(OPERATOR, period.from, period.to);
    } catch (err) {
      return sendHtml(res, 400, refusedPage('Usage', html`${redactError(err)}. <a href="/ui">Start over</a>`));
    }
    sendHtml(res, 200, listPage(list, q, cursor, session, usage, this.opts.targets?.()));
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
    const follow = !(isTerminal(t.state) && !t.hasMore);
    sendHtml(res, 200, taskPage(t, this.taskParts(t, session), follow, session));
  }

  private taskParts(t: StatusView, session: Session): TaskParts {
    const prompts = new Map(this.opts.engine.prompts(t.taskId, PROMPT_SHOWN_CHARS).map((p) => [p.n, p]));
    return taskParts(t, session, prompts, this.opts.engine.result(String(t.caller), t.taskId));
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
    const served = await this.streams.serve(res, session.key, async (out) => {
      while (!out.signal.aborted) {
        const w = await this.opts.engine.wait(OPERATOR, id, after, MAX_WAIT_MS, out.signal);
        // A session that expired or was dropped while the stream waited gets nothing more either.
        if (!this.auth.isLive(session)) break;
        for (const ev of w.events) {
          const data = {
            seq: ev.seq,
            kind: ev.kind,
            state: ev.kind === 'lifecycle' ? ev.state : null,
            time: ev.time,
            head: eventHead(ev),
          };
          out.event('task', { ...data, text: eventText(ev) }, ev.seq);
        }
        after = w.nextCursor;
        const ended = isTerminal(w.state) && !w.hasMore;
        if (ended || w.events.some((ev) => ev.kind !== 'message')) {
          const t = this.opts.engine.status(OPERATOR, id, after, 1);
          const parts = Object.fromEntries(Object.entries(this.taskParts(t, session)).map(([k, v]) => [k, String(v)]));
          out.event('view', { state: t.state, ...parts });
        }
        if (ended) {
          out.event('end', { state: w.state });
          break;
        }
        if (w.timedOut) out.comment('still here');
      }
    });
    if (!served) sendText(res, 503, 'too many open event streams; close a tab');
  }
}
