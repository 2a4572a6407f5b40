// The one redaction module for every output path (rule: no-secrets-out): results, logs, errors, events and the store.
// Text, error messages, nested values and agent-produced error text all go through redact() here; nothing else redacts,
// and the credential shapes below are the only list of them (table-tested in test/lib/redact.test.ts).
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
 * before the value); the value after it becomes REDACTED when it has at least `min` characters and, with `digit`, a
 * digit in it: minimum lengths keep ordinary words out, the digit keeps "basic internationalization" and "sk-learn-…"
 * out. Both are checked on the match rather than in the pattern, because an agent chooses the text: a `{20,}`
 * quantifier overflows V8's regexp stack on a run of millions of characters, and a digit lookahead from each `sk-` of
 * "sk-sk-sk-…" would be quadratic. Every pattern below is linear in the text.
 */
export const CREDENTIAL_PATTERNS: ReadonlyArray<{ re: RegExp; min?: number; digit?: boolean }> = [
  // Authorization headers, whatever the scheme, in header, JSON or assignment form.
  { re: /(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest)\s+)[A-Za-z0-9._~+/=-]+/gi },
  // A bearer/basic credential on its own (a curl line, a log line).
  { re: /(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+/gi, min: 16, digit: true },
  // API key headers.
  { re: /(\bx-(?:api|goog-api)-key["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=-]+/gi, min: 8 },
  // Environment-style assignments of anything named like a secret.
  { re: /(\b[A-Za-z0-9_]*(?:TOKEN|PASSWORD|SECRET|API_KEY)\s*=\s*)[^\s'"]+/g },
  // Userinfo in a URL (the password part).
  { re: /(\/\/[^/\s:@]+:)[^@\s/]+(?=@)/g },
  // OpenAI-style and Anthropic keys: sk-…, sk-proj-…, sk-ant-api03-… (20+ characters after `sk-`).
  { re: /()\bsk-[A-Za-z0-9_-]+/g, min: 23, digit: true },
  // Google API keys (30+ characters after `AIza`).
  { re: /()\bAIza[0-9A-Za-z_-]+/g, min: 34 },
];

const DIGIT = /\d/;

export function redact(text: string, extra: readonly string[] = []): string {
  let out = text;
  for (const s of [...secrets, ...extra]) {
    if (s && s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  for (const { re, min = 1, digit = false } of CREDENTIAL_PATTERNS) {
    out = out.replace(re, (match: string, label: string) => {
      const value = match.slice(label.length);
      return value.length < min || (digit && !DIGIT.test(value)) ? match : `${label}${REDACTED}`;
    });
  }
  return out;
}

/** Error message safe to show a caller. */
export function redactError(err: unknown, extra: readonly string[] = []): string {
  const msg = err instanceof Error ? err.message : String(err);
  return redact(msg, extra);
}

/** An error whose message is redacted when it is made, so redactedError() passes it on as it is. */
export class RedactedError extends Error {
  constructor(message: string) {
    super(redact(message));
  }
}

/**
 * `err` with no secret in its message (or the nested messages of an AggregateError): a RedactedError as it is, any
 * other error as a redacted copy that keeps the name.
 */
export function redactedError(err: unknown): Error {
  if (err instanceof RedactedError) return err;
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
