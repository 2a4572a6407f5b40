// Errors the attach face shows a caller: always redacted (AT-4, SE-1), whatever produced them.
import { redact } from '../../lib/redact.ts';

export class AttachError extends Error {
  constructor(message: string) {
    super(redact(message));
    this.name = 'AttachError';
  }
}

/** A copy of `err` whose message (and nested messages) carry no registered secret. */
export function redactedError(err: unknown): Error {
  if (err instanceof AttachError) return err;
  if (err instanceof AggregateError) {
    return new AggregateError(err.errors.map(redactedError), redact(err.message));
  }
  const e = new Error(redact(err instanceof Error ? err.message : String(err)));
  if (err instanceof Error) e.name = err.name;
  return e;
}

export async function withRedaction<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw redactedError(err);
  }
}
