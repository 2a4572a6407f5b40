// Bearer tokens on the hub's HTTP endpoints (rule: http-auth): the caller endpoints and the control endpoint compare
// fixed-length digests in constant time, and a refusal says nothing about which part was wrong; only the log does.
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

/** Constant-time bearer check: compares fixed-length digests. Returns null when the token matches. */
export function bearerFailure(req: IncomingMessage, expected: Buffer): AuthFailure | null {
  const header = req.headers.authorization;
  if (!header) return 'missing authorization header';
  const m = /^Bearer ([^\s]+)$/i.exec(header);
  // A bare "Bearer" is what clients send when the env var holding the token was empty.
  if (!m) return 'not a Bearer header';
  if (tokenMatches(m[1]!, expected)) return null;
  // A client that did not expand its config's env reference sends it literally.
  return /^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$/.test(m[1]!) ? 'unexpanded env-var placeholder' : 'wrong token';
}

export function unauthorized(res: ServerResponse): void {
  res.setHeader('www-authenticate', 'Bearer realm="baton"');
  sendJson(res, 401, { error: 'missing or invalid bearer token' });
}
