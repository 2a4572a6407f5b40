// Trusted origins (rule: exact-origins): agents must never be able to send a harness credential to a URL the operator
// did not approve. Only exact origins are accepted; anything that could smuggle a path, credentials or parameters is
// refused.

export type HarnessName = 'opencode' | 'codex';

/** Environment variables read for the allowlist, in order; the first one set wins. */
export const ALLOWLIST_ENV_VARS = ['BATON_ALLOWED_SERVER_URLS', 'CROSSHARNESS_ALLOWED_SERVER_URLS'] as const;

export const MAX_SERVER_URL_LENGTH = 2_048;

const HARNESS_PROTOCOLS: Record<HarnessName, readonly string[]> = {
  opencode: ['http:', 'https:'],
  codex: ['ws:', 'wss:'],
};

export class ServerUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerUrlError';
  }
}

/**
 * Parses one server URL and returns its canonical origin with a trailing slash (`http://127.0.0.1:4096/`).
 * User info, a query, a fragment or a path other than `/` are refused, even when empty (`http://h/?`).
 */
export function canonicalOrigin(raw: string): string {
  if (typeof raw !== 'string' || raw.length === 0) throw new ServerUrlError('server URL is empty');
  if (raw.length > MAX_SERVER_URL_LENGTH)
    throw new ServerUrlError(`server URL is longer than ${MAX_SERVER_URL_LENGTH}`);
  if (raw.trim() !== raw) throw new ServerUrlError('server URL has surrounding whitespace');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ServerUrlError('server URL is not a valid absolute URL');
  }
  const known = ['http:', 'https:', 'ws:', 'wss:'];
  if (!known.includes(url.protocol))
    throw new ServerUrlError(`server URL scheme ${url.protocol} is not supported (use http, https, ws or wss)`);
  if (url.username || url.password || /^[a-z]+:\/\/[^/]*@/i.test(raw))
    throw new ServerUrlError('server URL must not contain user info; credentials come from the environment');
  if (url.search || raw.includes('?')) throw new ServerUrlError('server URL must not contain a query');
  if (url.hash || raw.includes('#')) throw new ServerUrlError('server URL must not contain a fragment');
  if (url.pathname !== '/')
    throw new ServerUrlError('server URL must be an origin with no path (for example http://127.0.0.1:4096/)');
  return `${url.protocol}//${url.host}/`;
}

/** Parses the operator's comma-separated allowlist; every entry must itself be a clean origin. */
export function parseAllowedServerUrls(text: string | undefined): string[] {
  if (!text) return [];
  const out: string[] = [];
  for (const part of text.split(',')) {
    const entry = part.trim();
    if (!entry) continue;
    try {
      out.push(canonicalOrigin(entry));
    } catch (err) {
      throw new ServerUrlError(`allowed server URL "${entry}" is invalid: ${(err as Error).message}`);
    }
  }
  return [...new Set(out)];
}

export function allowlistFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  for (const name of ALLOWLIST_ENV_VARS) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') return parseAllowedServerUrls(value);
  }
  return [];
}

/** True for hosts whose traffic never leaves the machine, where plain http/ws cannot expose a credential. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export function isPlainText(origin: string): boolean {
  const { protocol } = new URL(origin);
  return protocol === 'http:' || protocol === 'ws:';
}

/**
 * Checks a connect request's URL for a harness against the allowlist; returns the canonical origin.
 * The messages say what to change, never echo anything but the origin.
 */
export function approveServerUrl(harness: HarnessName, raw: string, allowed: ReadonlySet<string>): string {
  const origin = canonicalOrigin(raw);
  const { protocol } = new URL(origin);
  if (!HARNESS_PROTOCOLS[harness].includes(protocol)) {
    throw new ServerUrlError(
      `${harness} servers are reached over ${HARNESS_PROTOCOLS[harness].map((p) => p.slice(0, -1)).join(' or ')}, not ${protocol.slice(0, -1)}`,
    );
  }
  if (!allowed.has(origin)) {
    throw new ServerUrlError(
      `server origin ${origin} is not in the allowlist; add it to BATON_ALLOWED_SERVER_URLS (comma-separated exact origins) before starting baton attach`,
    );
  }
  return origin;
}
