// One redaction helper for every output path (SE-1): results, logs, errors, events and the store.

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
