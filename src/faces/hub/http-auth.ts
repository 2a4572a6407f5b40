// Who may talk to the hub over HTTP (rule: http-auth): only requests naming the hub's own loopback address and port in
// Host, and no foreign browser Origin (DNS-rebinding defence); bearer tokens on the caller and control endpoints compared
// as fixed-length digests in constant time, a refusal saying nothing about which part was wrong (only the log does).
//
// The MCP SDK has helpers for the same checks (validateHostHeader, validateOriginHeader, verifyBearerToken). The hub
// keeps its own: its Host and Origin checks are stricter (the exact port, `http` only, exact case), and the SDK's bearer
// helper is for OAuth tokens with an expiry and answers with OAuth's error body. test/faces/hub/http-auth-checks.test.ts
// pins the copy: it sends the same inputs to both and lists every input on which they differ, so an SDK upgrade that
// changes its checks fails there instead of drifting.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from './mcp-endpoint.ts';

/** sha256 of a token: what the hub keeps and compares instead of the token. */
export function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Constant-time comparison of a presented token with a kept digest. */
export function tokenMatches(token: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(token), expected);
}

/** Why a request was refused, for the log (never the token itself). */
type AuthFailure =
  | 'missing authorization header'
  | 'not a Bearer header'
  | 'unexpanded env-var placeholder'
  | 'wrong token';

/** The token of an `Authorization: Bearer <token>` header, or why the header holds none. */
export function bearerToken(
  header: string | undefined,
): { token: string } | { failure: 'missing authorization header' | 'not a Bearer header' } {
  if (!header) return { failure: 'missing authorization header' };
  const m = /^Bearer ([^\s]+)$/i.exec(header);
  // A bare "Bearer" is what clients send when the env var holding the token was empty.
  return m ? { token: m[1]! } : { failure: 'not a Bearer header' };
}

/** Constant-time bearer check: compares fixed-length digests. Returns null when the token matches. */
export function bearerFailure(req: IncomingMessage, expected: Buffer): AuthFailure | null {
  const parsed = bearerToken(req.headers.authorization);
  if ('failure' in parsed) return parsed.failure;
  if (tokenMatches(parsed.token, expected)) return null;
  // A client that did not expand its config's env reference sends it literally.
  return /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(parsed.token) ? 'unexpanded env-var placeholder' : 'wrong token';
}

/** The Host and Origin values a hub listening on `listenHost`:`port` accepts. */
export interface LoopbackChecks {
  hostAllowed(host: string | undefined): boolean;
  /** An absent Origin (not a browser) passes; a present one must be the hub's own. */
  originAllowed(origin: string | undefined): boolean;
}

export function loopbackChecks(listenHost: string, port: number): LoopbackChecks {
  const hosts = new Set(['127.0.0.1', 'localhost', '[::1]', listenHost].map((n) => `${n}:${port}`));
  const origins = new Set([...hosts].map((h) => `http://${h}`));
  return {
    hostAllowed: (host) => host !== undefined && hosts.has(host),
    originAllowed: (origin) => origin === undefined || origins.has(origin),
  };
}

export function unauthorized(res: ServerResponse): void {
  res.setHeader('www-authenticate', 'Bearer realm="baton"');
  sendJson(res, 401, { error: 'missing or invalid bearer token' });
}
