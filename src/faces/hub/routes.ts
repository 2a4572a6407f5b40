// The hub's HTTP router (rules: caller-endpoints, http-auth): every request passes the DNS-rebinding checks (only our
// own loopback host names, no foreign browser origin), then goes to /healthz, the control endpoint, the dashboard or a
// caller's MCP endpoint, which is authenticated by that caller's own token and reads a bounded body.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import { readBodyText } from '../../lib/net.ts';
import { redactError } from '../../lib/redact.ts';
import { httpError } from '../errors.ts';
import type { ControlApi } from './control.ts';
import { bearerFailure, type LoopbackChecks, loopbackChecks, unauthorized } from './http-auth.ts';
import { jsonRpcError, type McpEndpoint, sendJson } from './mcp-endpoint.ts';
import type { Dashboard } from './ui/dashboard.ts';

/** Largest JSON-RPC request body the hub reads (rule: bounded-frames). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface RouterOptions {
  logger: Logger;
  /** The configured listen host, accepted in Host and Origin beside the loopback names. */
  listenHost: string;
  /** The port the hub listens on; fixed once it listens. */
  port: () => number;
  /** sha256 of each caller's token, by caller name. */
  callerTokens: Map<string, Buffer>;
  control: ControlApi;
  dashboard: Dashboard;
  endpoint: McpEndpoint;
}

export class HubRouter {
  readonly #opts: RouterOptions;
  #checks: LoopbackChecks | undefined;

  constructor(opts: RouterOptions) {
    this.#opts = opts;
  }

  /**
   * Answers one request. A failure no handler answered is logged redacted and answered through the one error model
   * (faces/errors.ts): a reportable one with its status, anything else 500 `internal`; once the headers are out, the
   * response is ended as it stands.
   */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.#route(req, res);
    } catch (err) {
      this.#opts.logger.error('request failed', { error: redactError(err) });
      if (res.headersSent) {
        res.end();
        return;
      }
      const { status, body } = httpError(err);
      sendJson(res, status, body);
    }
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const checks = this.#loopback();
    if (!checks.hostAllowed(req.headers.host)) return sendJson(res, 403, { error: 'host not allowed' });
    if (!checks.originAllowed(req.headers.origin)) return sendJson(res, 403, { error: 'origin not allowed' });

    if (url.pathname === '/healthz') return sendJson(res, 200, { ok: true });
    if (url.pathname.startsWith('/control/')) return this.#opts.control.handle(req, res, url);
    if (url.pathname === '/ui' || url.pathname.startsWith('/ui/')) return this.#opts.dashboard.handle(req, res, url);
    const m = /^\/mcp\/([a-z][a-z0-9-]{0,39})\/?$/.exec(url.pathname);
    if (m) return this.#mcp(req, res, m[1]!);
    return sendJson(res, 404, { error: 'not found' });
  }

  async #mcp(req: IncomingMessage, res: ServerResponse, caller: string): Promise<void> {
    const expected = this.#opts.callerTokens.get(caller);
    // Unknown callers get the same answer as a wrong token: the endpoint list is not probeable. The log, which only
    // the operator reads, says which it was so a misconfigured client can be fixed.
    const failure = expected ? bearerFailure(req, expected) : 'unknown caller';
    if (failure) {
      this.#opts.logger.warn('unauthorized request', { endpoint: 'mcp', caller, reason: failure });
      return unauthorized(res);
    }

    let body: unknown;
    if (req.method === 'POST') {
      const text = await readBodyText(req, MAX_BODY_BYTES);
      if (text === null)
        return sendJson(res, 413, jsonRpcError(-32600, `request body exceeds ${MAX_BODY_BYTES} bytes`));
      try {
        body = JSON.parse(text);
      } catch {
        return sendJson(res, 400, jsonRpcError(-32700, 'parse error: the body is not JSON'));
      }
    }
    await this.#opts.endpoint.handle(req, res, caller, body);
  }

  /** The Host and Origin checks, made once the hub listens (its port is fixed from then on). */
  #loopback(): LoopbackChecks {
    this.#checks ??= loopbackChecks(this.#opts.listenHost, this.#opts.port());
    return this.#checks;
  }
}
