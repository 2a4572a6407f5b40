// One error for every failure baton reports to a caller, an operator or a client: its code, from one union, says what
// kind of failure it is, and each transport turns the code into its own form in one place (faces/errors.ts: a tool
// result, a JSON-RPC error, an HTTP status). Code raises it anywhere; only a face's edge translates it. A layer may
// narrow the codes it raises with a subclass (EngineError, JobError, ToolFailure, StoreFullError), which stays a
// BatonError to every translator.

export type ErrorCode =
  /** The task, job or page asked for is not there, or is not the reader's. */
  | 'not_found'
  /** The request cannot be done as it stands (a cwd that is not a directory, an agent no longer configured). */
  | 'invalid'
  /** One argument is wrong in a way its schema could not see (a cursor from another reader): a schema violation. */
  | 'invalid_params'
  /** The request contradicts an earlier one (an idempotency key reused for another payload, a round running). */
  | 'conflict'
  /** The caller may not do this (a cwd outside the roots, an agent it cannot reach). */
  | 'forbidden'
  /** A bound was reached (jobs in flight). */
  | 'limit'
  /** A provider job id the table does not know (never issued, or let go after its retention). */
  | 'unknown_job'
  /** A job's result asked for before the job completed. */
  | 'not_finished'
  /** A job's result asked for after the job failed or was cancelled. */
  | 'job_failed'
  /** The disk holding baton's state is full; nothing was changed. */
  | 'disk_full'
  /** A tool failed in a way the caller can read and act on; `structured` says more. */
  | 'tool_failed'
  /** Anything else: unexpected, reported redacted and logged. */
  | 'internal';

export class BatonError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  /** Fields a tool result carries beside the message (its structuredContent). */
  readonly structured?: Record<string, unknown>;
  constructor(code: C, message: string, structured?: Record<string, unknown>) {
    super(message);
    this.name = 'BatonError';
    this.code = code;
    if (structured) this.structured = structured;
  }
}
