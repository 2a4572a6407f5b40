// Who may use the dashboard (rule: dashboard). Login: the control token in a POSTed form, or a one-time link `baton ui`
// asks for with the control token as bearer (single use, short-lived, only its digest kept). Either way the browser
// then holds only a random session id in an HttpOnly, SameSite=Strict cookie, so the token never appears in a URL, a
// page or a log. Actions that change state are POSTs that must come from this origin and carry the session's own CSRF
// token.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../../lib/log.ts';
import { readBodyText } from '../../../lib/net.ts';
import { MAX_PROMPT_LENGTH } from '../tools.ts';
import { loginPage } from './pages.ts';
import { isForm, sendHtml, sendJson } from './respond.ts';

const COOKIE = 'baton_ui';
/** A dashboard session lasts this long; log in again after. */
const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Sessions kept at once; the oldest is dropped beyond this. */
const MAX_SESSIONS = 32;
/** A one-time login link works once, within this time. */
const LOGIN_LINK_TTL_MS = 5 * 60_000;
/** Unused login links kept at once; the oldest is dropped beyond this. */
const MAX_LOGIN_LINKS = 16;
/** The login and cancel forms are tiny; anything bigger is refused unread. */
const MAX_FORM_BODY_BYTES = 4_096;
/** A continue form holds a prompt of at most MAX_PROMPT_LENGTH code points, form-encoded (up to 12 bytes each). */
const MAX_CONTINUE_BODY_BYTES = MAX_PROMPT_LENGTH * 12 + MAX_FORM_BODY_BYTES;

export interface Session {
  /** sha256 of the session id: the session's name in the hub (the id itself is kept only by the browser). */
  key: string;
  expires: number;
  /** Sent back by every form of this session; a page of another origin cannot read it. */
  csrf: string;
}

export interface AuthOptions {
  /** Constant-time comparison with the control token. */
  tokenMatches: (token: string) => boolean;
  logger: Logger;
}

export class DashboardAuth {
  readonly #opts: AuthOptions;
  /** sha256(session id) → session. */
  readonly #sessions = new Map<string, Session>();
  /** sha256(login link code) → expiry; the code itself is only in the link `baton ui` printed or opened. */
  readonly #links = new Map<string, number>();

  constructor(opts: AuthOptions) {
    this.#opts = opts;
  }

  /** The login form, POSTed: the control token starts a session. */
  async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!isForm(req)) return sendHtml(res, 415, loginPage('Send the login form.'));
    const body = await readBodyText(req, MAX_FORM_BODY_BYTES);
    const token = body === null ? '' : (new URLSearchParams(body).get('token') ?? '');
    if (!token || !this.#opts.tokenMatches(token)) {
      this.#opts.logger.warn('dashboard login refused');
      return sendHtml(res, 401, loginPage('That is not the control token.'));
    }
    this.#opts.logger.info('dashboard login', { via: 'form' });
    this.#startSession(res);
  }

  /** `baton ui` asks for a one-time link with the control token as bearer; the answer is the link's path. */
  createLink(req: IncomingMessage, res: ServerResponse) {
    const m = /^Bearer (\S+)$/i.exec(String(req.headers.authorization ?? ''));
    if (!m || !this.#opts.tokenMatches(m[1]!)) {
      this.#opts.logger.warn('dashboard login link refused');
      res.setHeader('www-authenticate', 'Bearer realm="baton"');
      return sendJson(res, 401, { error: 'missing or invalid control token' });
    }
    const now = Date.now();
    for (const [k, exp] of this.#links) if (exp < now) this.#links.delete(k);
    while (this.#links.size >= MAX_LOGIN_LINKS) this.#links.delete(this.#links.keys().next().value!);
    const code = randomBytes(32).toString('base64url');
    this.#links.set(digestHex(code), now + LOGIN_LINK_TTL_MS);
    this.#opts.logger.info('dashboard login link issued');
    sendJson(res, 201, { path: `/ui/link/${code}`, expiresInSeconds: LOGIN_LINK_TTL_MS / 1000 });
  }

  /** A login link logs in once: the code is forgotten before the session starts, whatever happens next. */
  useLink(res: ServerResponse, code: string) {
    const key = digestHex(code);
    const expires = this.#links.get(key);
    this.#links.delete(key);
    if (expires === undefined || expires < Date.now()) {
      this.#opts.logger.warn('dashboard login link refused');
      return sendHtml(
        res,
        401,
        loginPage('That login link was already used or has expired. Run `baton ui` for a new one, or use the form.'),
      );
    }
    this.#opts.logger.info('dashboard login', { via: 'link' });
    this.#startSession(res);
  }

  #startSession(res: ServerResponse): void {
    const sid = randomBytes(32).toString('base64url');
    const now = Date.now();
    for (const [k, s] of this.#sessions) if (s.expires < now) this.#sessions.delete(k);
    while (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    const key = digestHex(sid);
    this.#sessions.set(key, { key, expires: now + SESSION_TTL_MS, csrf: randomBytes(24).toString('base64url') });
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
  sessionOf(req: IncomingMessage): Session | undefined {
    const sid = cookieValue(req.headers.cookie, COOKIE);
    if (!sid) return undefined;
    const key = digestHex(sid);
    const s = this.#sessions.get(key);
    if (!s) return undefined;
    if (s.expires < Date.now()) {
      this.#sessions.delete(key);
      return undefined;
    }
    return s;
  }

  /** Whether `session` is still one the hub holds and has not expired. */
  isLive(session: Session): boolean {
    return this.#sessions.get(session.key) === session && session.expires >= Date.now();
  }

  /** Ends the session and clears its cookie. */
  logout(res: ServerResponse, session: Session): void {
    this.#sessions.delete(session.key);
    res.writeHead(303, {
      location: '/ui',
      'set-cookie': `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0`,
    });
    res.end();
  }

  /**
   * The form of a state-changing POST, or why it is refused. It must come from a page of this very origin (the hub
   * already refuses foreign origins; here a missing Origin is refused too) and carry the session's CSRF token.
   */
  async postedForm(req: IncomingMessage, session: Session, path: string): Promise<URLSearchParams | string> {
    if (req.headers.origin !== `http://${req.headers.host}`) return 'This form must be sent from the dashboard itself.';
    if (!isForm(req)) return 'Send the form as application/x-www-form-urlencoded.';
    const limit = path.endsWith('/continue') ? MAX_CONTINUE_BODY_BYTES : MAX_FORM_BODY_BYTES;
    const body = await readBodyText(req, limit);
    if (body === null) return 'The form is too large.';
    const form = new URLSearchParams(body);
    const csrf = Buffer.from(form.get('csrf') ?? '');
    const expected = Buffer.from(session.csrf);
    if (csrf.length !== expected.length || !timingSafeEqual(csrf, expected)) {
      this.#opts.logger.warn('dashboard form refused: wrong or missing CSRF token', { path });
      return 'This form is stale or was not sent by the dashboard; reload the page and try again.';
    }
    return form;
  }
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
