// The one redaction module for every output path (SE-1): results, logs, errors, events and the store. Text, error
// messages, nested values and agent-produced error text all go through redact() here; nothing else redacts.
import { cutCodePoints, stripTerminalControls } from './text.ts';

export const REDACTED = '[redacted]';
const MIN_SECRET_LENGTH = 6;

const secrets = new Set<string>();

/** Registers a value that must never leave baton (tokens, passwords, auth file contents). */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= MIN_SECRET_LENGTH) secrets.add(value);
}

// Credentials that look like credentials even when nobody registered them.
const CREDENTIAL_PATTERNS: RegExp[] = [
  /(authorization\s*[:=]\s*(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+/gi,
  /(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{16,}/gi,
  /(\b[A-Za-z0-9_]*(?:TOKEN|PASSWORD|SECRET|API_KEY)\s*=\s*)[^\s'"]+/g,
  /(\/\/[^/\s:@]+:)[^@\s/]+(?=@)/g,
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
