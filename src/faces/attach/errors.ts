// Errors the attach face shows a caller: always redacted (rules: env-only-credentials, no-secrets-out), whatever
// produced them.
import { RedactedError, redactedError } from '../../lib/redact.ts';

export class AttachError extends RedactedError {
  constructor(message: string) {
    super(message);
    this.name = 'AttachError';
  }
}

export async function withRedaction<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw redactedError(err);
  }
}
