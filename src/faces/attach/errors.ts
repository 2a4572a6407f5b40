// Errors the attach face shows a caller: always redacted (AT-4, SE-1), whatever produced them.
import { redact, redactedError as redactAnyError } from '../../lib/redact.ts';

export class AttachError extends Error {
  constructor(message: string) {
    super(redact(message));
    this.name = 'AttachError';
  }
}

/** A copy of `err` whose message (and nested messages) carry no registered secret; an AttachError already is one. */
export function redactedError(err: unknown): Error {
  return err instanceof AttachError ? err : redactAnyError(err);
}

export async function withRedaction<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw redactedError(err);
  }
}
