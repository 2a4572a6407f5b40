// The one place each transport turns a failure into its own form (lib/errors.ts has the model): a tool result the
// caller reads (or a JSON-RPC -32602 for a bad argument, rule: strict-inputs), a JSON-RPC error, an HTTP status. Every
// message that leaves here is redacted (rule: no-secrets-out); a full disk always reads the store's one message.
import { type CallToolResult, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { isDiskFull, StoreFullError } from '../core/store/errors.ts';
import { BatonError, type ErrorCode } from '../lib/errors.ts';
import { redactError } from '../lib/redact.ts';
import { toolError } from './mcp-tools.ts';

/**
 * What a face reports for `err`: a BatonError as it is; a full disk, whichever layer ran out of space, as the store's
 * disk_full saying nothing was changed; undefined for anything else (unexpected: the face logs it or answers
 * `internal`).
 */
export function reportable(err: unknown): BatonError | undefined {
  if (err instanceof BatonError && err.code !== 'disk_full') return err;
  if (isDiskFull(err)) return new StoreFullError('nothing was changed');
  return undefined;
}

/** The fields a tool error result carries beside its message: the code, except for a tool's own failure. */
function wireFields(err: BatonError): Record<string, unknown> {
  return err.code === 'tool_failed' ? { ...err.structured } : { code: err.code, ...err.structured };
}

export interface ToolErrorOptions {
  /** Named in the -32602 message of an invalid_params error. */
  tool?: string | undefined;
  /** An unexpected failure carries `code: 'internal'` (the hub's tools) or no code (the providers' contract). */
  internalCode?: boolean;
}

/**
 * `err` as a tool's answer: an isError result with the redacted message and the code, or a thrown JSON-RPC -32602 for
 * a bad argument only the code behind the tool could see (a ProtocolError passes through as it is).
 */
export function toolErrorResult(err: unknown, opts: ToolErrorOptions = {}): CallToolResult {
  if (err instanceof ProtocolError) throw err;
  if (err instanceof BatonError && err.code === 'invalid_params') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid arguments for ${opts.tool}: ${err.message}`);
  }
  const reported = reportable(err);
  if (reported) return toolError(redactError(reported), wireFields(reported));
  return toolError(redactError(err), opts.internalCode ? { code: 'internal' } : {});
}

const HTTP_STATUS: Record<ErrorCode, number> = {
  not_found: 404,
  invalid: 400,
  invalid_params: 400,
  conflict: 409,
  forbidden: 403,
  limit: 429,
  unknown_job: 404,
  not_finished: 409,
  job_failed: 409,
  disk_full: 507,
  tool_failed: 400,
  internal: 500,
};

/** The HTTP status that answers a failure with `code`. */
export function httpStatus(code: ErrorCode): number {
  return HTTP_STATUS[code];
}

/** An HTTP error answer: its status and its JSON body. */
export interface HttpErrorAnswer {
  status: number;
  body: { error: string; code: ErrorCode };
}

/**
 * `err` as an HTTP answer: a reportable failure with its code's status and its redacted message; anything else 500
 * `internal` with no detail, since the request may not be authenticated yet (the face logs the redacted error).
 */
export function httpError(err: unknown): HttpErrorAnswer {
  const reported = reportable(err);
  if (reported)
    return { status: httpStatus(reported.code), body: { error: redactError(reported), code: reported.code } };
  return { status: httpStatus('internal'), body: { error: 'internal error', code: 'internal' } };
}

/** The JSON-RPC error code of a failure answered outside a tool result (-32602 for a bad argument, else -32000). */
export function jsonRpcCode(code: ErrorCode): number {
  return code === 'invalid_params' ? ProtocolErrorCode.InvalidParams : -32000;
}
