// The one redaction module for every output path (SE-1): results, logs, errors, events and the store. Text, error
// messages, nested values and agent-produced error text all go through redact() here; nothing else redacts, and the
// credential shapes below are the only list of them (table-tested in test/unit/redact.test.ts).
import { cutCodePoints, stripTerminalControls } from './chars.ts';

export const REDACTED = '[redacted]';
const MIN_SECRET_LENGTH = 6;

const secrets = new Set<string>();

/** Registers a value that must never leave baton (tokens, passwords, auth file contents). */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= MIN_SECRET_LENGTH) secrets.add(value);
}

/** Credentials baton may hold from its environment whatever face runs: the attach face's server credentials. */
export const SECRET_ENV_NAMES = ['OPENCODE_SERVER_PASSWORD', 'CODEX_REMOTE_TOKEN'] as const;
for (const name of SECRET_ENV_NAMES) registerSecret(process.env[name]);

/**
 * Credentials that look like credentials even when nobody registered them. Group 1, when present, is kept (the label
 * before the value); the rest of the match becomes REDACTED. Minimum lengths keep ordinary words out: a provider key
 * needs 20+ characters after its prefix, at least one of them a digit.
 */
export const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  // Authorization headers, whatever the scheme, in header, JSON or assignment form.
  /(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest)\s+)[A-Za-z0-9._~+/=-]+/gi,
  // A bearer/basic credential on its own (a curl line, a log line); the digit keeps "basic internationalization" out.
  /(\b(?:bearer|basic)\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}/gi,
  // API key headers.
  /(\bx-(?:api|goog-api)-key["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=-]{8,}/gi,
  // Environment-style assignments of anything named like a secret.
  /(\b[A-Za-z0-9_]*(?:TOKEN|PASSWORD|SECRET|API_KEY)\s*=\s*)[^\s'"]+/g,
  // Userinfo in a URL (the password part).
  /(\/\/[^/\s:@]+:)[^@\s/]+(?=@)/g,
  // OpenAI-style and Anthropic keys: sk-…, sk-proj-…, sk-ant-api03-….
  /()\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}/g,
  // Google API keys.
  /()\bAIza[0-9A-Za-z_-]{30,}/g,
];

export function redact(text: string, extra: readonly string[] = []): string {
  let out = text;
  for (const s of [...secrets, ...extra]) {
    if (s && s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  for (const re of CREDENTIAL_PATTERNS) out = out.replace(re, `$1${REDACTED}`);
  return out;
}

/** Error message safe to show a caller. */
export function redactError(err: unknown, extra: readonly string[] = []): string {
  const msg = err instanceof Error ? err.message : String(err);
  return redact(msg, extra);
}

/** A copy of `err` whose message (and nested messages of an AggregateError) carry no secret; keeps the name. */
export function redactedError(err: unknown): Error {
  if (err instanceof AggregateError) {
    return new AggregateError(err.errors.map(redactedError), redact(err.message));
  }
  const e = new Error(redact(err instanceof Error ? err.message : String(err)));
  if (err instanceof Error) e.name = err.name;
  return e;
}

/** Every string inside a JSON-like value redacted (objects and arrays copied). */
export function redactDeep(value: unknown): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(redactDeep);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v)]));
  return value;
}

/**
 * Agent-produced text safe to show a caller: terminal controls stripped, redacted, cut to `maxCodePoints`; with
 * `oneLine`, whitespace runs become one space first (a stderr line in an error message).
 */
export function safeText(text: string, maxCodePoints: number, opts: { oneLine?: boolean } = {}): string {
  const clean = redact(stripTerminalControls(text));
  return cutCodePoints(opts.oneLine ? clean.replace(/\s+/g, ' ').trim() : clean, maxCodePoints);
}
