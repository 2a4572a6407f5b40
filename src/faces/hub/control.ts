// The control endpoint (/control/*), for the operator's commands only: behind the control token, it answers `baton
// health`, `baton stop`, `baton tasks usage` and `baton tasks` (every caller's tasks: list, status, long-poll, result
// cancel and answering a permission request).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DECISIONS, isDecision } from '../../core/approvals.ts';
import {
  DEFAULT_EVENT_PAGE,
  type Engine,
  EngineError,
  MAX_EVENT_PAGE,
  MAX_LIST_PAGE,
  MAX_WAIT_MS,
  OPERATOR,
} from '../../core/engine.ts';
import type { Logger } from '../../lib/log.ts';
import { httpError, reportable } from '../errors.ts';
import { bearerFailure, unauthorized } from './http-auth.ts';
import { sendJson } from './mcp-endpoint.ts';

/** `baton tasks list` page size unless `limit` says otherwise. */
const DEFAULT_CONTROL_LIST = 50;

export interface ControlOptions {
  engine: Engine;
  logger: Logger;
  /** Digest of the control token. */
  controlToken: Buffer;
  /** The hub's health report. */
  health: () => unknown;
  /** Stops the hub (after the answer to the stop request is sent). */
  stop: () => void;
}

export class ControlApi {
  readonly #opts: ControlOptions;

  constructor(opts: ControlOptions) {
    this.#opts = opts;
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const failure = bearerFailure(req, this.#opts.controlToken);
    if (failure) {
      this.#opts.logger.warn('unauthorized request', { endpoint: 'control', path: url.pathname, reason: failure });
      return unauthorized(res);
    }
    const path = url.pathname;
    if (path === '/control/tasks' || path.startsWith('/control/tasks/')) return this.#tasks(req, res, url);
    if (path === '/control/health' && req.method === 'GET') return sendJson(res, 200, this.#opts.health());
    if (path === '/control/usage' && req.method === 'GET') return this.#usage(res, url);
    if (path === '/control/stop' && req.method === 'POST') return this.#stop(res, url);
    return sendJson(res, 404, { error: 'not found' });
  }

  /**
   * Stopping interrupts every queued and running round (rule: stop-refuses-work): refused with the list of those tasks
   * unless `force=1`, and the answer to a forced stop names what it interrupted.
   */
  #stop(res: ServerResponse, url: URL): void {
    const force = url.searchParams.get('force');
    if (force !== null && force !== '0' && force !== '1') {
      sendJson(res, 400, { error: 'force must be 0 or 1' });
      return;
    }
    const unfinished = this.#opts.engine.unfinished();
    if (unfinished.length && force !== '1') {
      sendJson(res, 409, {
        error: `${unfinished.length} task(s) still queued or running; a stop would interrupt them`,
        tasks: unfinished,
      });
      return;
    }
    sendJson(res, 202, { stopping: true, interrupted: unfinished });
    setImmediate(this.#opts.stop);
  }

  /** Usage per caller and agent over UTC days `from`..`to` (default today), optionally of one `caller`. */
  #usage(res: ServerResponse, url: URL): void {
    const q = url.searchParams;
    try {
      const caller = q.get('caller') ?? undefined;
      const totals = this.#opts.engine.usageTotals(
        caller ?? OPERATOR,
        q.get('from') ?? undefined,
        q.get('to') ?? undefined,
      );
      sendJson(res, 200, totals);
    } catch (err) {
      if (!reportable(err)) throw err;
      const { status, body } = httpError(err);
      sendJson(res, status, body);
    }
  }

  /** The operator's view of every caller's tasks (rule: tasks-command): list, status, long-poll, result and cancel. */
  async #tasks(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const { engine } = this.#opts;
    const q = url.searchParams;
    const int = (name: string, fallback: number) => {
      const raw = q.get(name);
      if (raw === null || raw === '') return fallback;
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < 0) throw new EngineError('invalid', `${name} must be a whole number ≥ 0`);
      return n;
    };
    try {
      if (url.pathname === '/control/tasks' && req.method === 'GET') {
        const limit = Math.min(Math.max(1, int('limit', DEFAULT_CONTROL_LIST)), MAX_LIST_PAGE);
        const order = q.get('order') ?? 'oldest';
        if (order !== 'oldest' && order !== 'newest')
          throw new EngineError('invalid', 'order must be oldest or newest');
        return sendJson(res, 200, engine.list(OPERATOR, q.get('cursor') ?? undefined, limit, order));
      }
      const m = /^\/control\/tasks\/([A-Za-z0-9_-]{1,64})(\/wait|\/cancel|\/result|\/respond)?$/.exec(url.pathname);
      if (!m && /^\/control\/tasks\/[^/]+(\/wait|\/cancel|\/result|\/respond)?$/.test(url.pathname)) {
        return sendJson(res, 404, { error: 'no task with that id (ids look like t-XXXXXXXXXXXX)' });
      }
      if (!m) return sendJson(res, 404, { error: 'not found' });
      const id = m[1]!;
      if (!m[2] && req.method === 'GET') {
        const limit = Math.min(Math.max(1, int('limit', DEFAULT_EVENT_PAGE)), MAX_EVENT_PAGE);
        return sendJson(res, 200, engine.status(OPERATOR, id, int('after', 0), limit));
      }
      if (m[2] === '/wait' && req.method === 'GET') {
        // The long-poll ends early when the client goes away.
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        const view = await engine.wait(OPERATOR, id, int('after', 0), int('timeoutMs', MAX_WAIT_MS), gone.signal);
        return sendJson(res, 200, view);
      }
      if (m[2] === '/result' && req.method === 'GET') {
        return sendJson(res, 200, engine.result(OPERATOR, id, int('offset', 0)));
      }
      if (m[2] === '/cancel' && req.method === 'POST') return sendJson(res, 200, engine.cancel(OPERATOR, id));
      // The operator's answer to a permission request the task waits for (rule: approvals).
      if (m[2] === '/respond' && req.method === 'POST') {
        const decision = q.get('decision') ?? '';
        if (!isDecision(decision))
          throw new EngineError('invalid_params', `decision must be one of ${DECISIONS.join(', ')}`);
        return sendJson(res, 200, engine.respond(OPERATOR, id, q.get('request') ?? '', decision));
      }
      return sendJson(res, 405, { error: `method ${req.method} not allowed here` });
    } catch (err) {
      if (!reportable(err)) throw err;
      const { status, body } = httpError(err);
      return sendJson(res, status, body);
    }
  }
}
