// Approvals through MCP's own input channel (rule: approvals): a permission request a caller's task waits for is put to
// that caller as a form-mode elicitation, embedded where the 2026-07-28 protocol carries server-to-client requests —
// an `input_required` answer to agent_wait (multi round-trip requests) and the Tasks extension's `input_required`
// status. Only a request that declared form elicitation in its per-request capabilities is asked; the form shows the
// same lossy description as the task view (never the request's arguments) and offers the request's own decisions.
// An accepted form answers as agent_respond would, a declined one denies, a dismissed one (cancel) leaves the request
// for anyone else. 2025-era sessions are not asked: the hub answers them with plain JSON bodies and has no stream to
// carry a server-to-client request on, so they answer with agent_respond.
import { isDecision, type WaitingView } from '../../core/approvals.ts';
import { type Engine, EngineError } from '../../core/engine.ts';
import { BatonError } from '../../lib/errors.ts';

/** An embedded `elicitation/create` request, as an `inputRequests` entry carries it. */
export interface ApprovalElicitation {
  method: 'elicitation/create';
  params: {
    mode: 'form';
    message: string;
    requestedSchema: {
      type: 'object';
      properties: { decision: { type: 'string'; title: string; description: string; enum: string[] } };
      required: ['decision'];
    };
  };
}

/** The form that puts `waiting` to the caller; the key it goes under is the request id. */
export function approvalElicitation(taskId: string, waiting: WaitingView): ApprovalElicitation {
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message:
        `The agent of baton task ${taskId} asks to ${waiting.what} (${waiting.kind}). Allow it? ` +
        `Unanswered by ${waiting.expiresAt}, it is denied.`,
      requestedSchema: {
        type: 'object',
        properties: {
          decision: {
            type: 'string',
            title: 'Decision',
            description:
              'allow: this once; allow_always: this and the same kind for the rest of the session; deny: refuse it; deny_always: refuse it and the same kind.',
            enum: [...waiting.options],
          },
        },
        required: ['decision'],
      },
    },
  };
}

/**
 * Applies the caller's answers to the requests of `taskIds`: each key is a request id. An accepted form with an
 * offered decision answers with it, a declined one denies; a dismissed form, an answer to a request no longer pending
 * and content that names no offered decision change nothing (the request keeps waiting, or was answered already).
 */
export function applyApprovalAnswers(
  engine: Engine,
  caller: string,
  taskIds: readonly string[],
  responses: Record<string, unknown> | undefined,
): void {
  if (!responses) return;
  for (const taskId of taskIds) {
    const waiting = waitingOf(engine, caller, taskId);
    if (!waiting || !Object.hasOwn(responses, waiting.requestId)) continue;
    const decision = decisionOf(responses[waiting.requestId]);
    if (!decision) continue;
    try {
      engine.respond(caller, taskId, waiting.requestId, decision);
    } catch (err) {
      // Answered meanwhile by someone else, or a decision not offered: the request is as it was.
      if (!(err instanceof BatonError)) throw err;
    }
  }
}

/** The request `taskId` waits on, if any; a task the caller may not see (or that is gone) waits on nothing. */
function waitingOf(engine: Engine, caller: string, taskId: string): WaitingView | undefined {
  try {
    return engine.waitingFor(caller, taskId);
  } catch (err) {
    if (err instanceof EngineError) return undefined;
    throw err;
  }
}

/** The decision an elicitation result carries: the chosen one when accepted, deny when declined. */
function decisionOf(result: unknown) {
  if (typeof result !== 'object' || result === null) return undefined;
  const { action, content } = result as { action?: unknown; content?: unknown };
  if (action === 'decline') return 'deny' as const;
  if (action !== 'accept' || typeof content !== 'object' || content === null) return undefined;
  const decision = (content as { decision?: unknown }).decision;
  return typeof decision === 'string' && isDecision(decision) ? decision : undefined;
}

/**
 * The requests of `taskIds` to put to the caller now: those waiting whose id is not among `answered` (a request the
 * caller just answered or dismissed in this exchange is not asked again in it). Keys are request ids.
 */
export function approvalInputRequests(
  engine: Engine,
  caller: string,
  taskIds: readonly string[],
  answered: Record<string, unknown> | undefined,
): Record<string, ApprovalElicitation> | undefined {
  const out: Record<string, ApprovalElicitation> = {};
  for (const taskId of taskIds) {
    const waiting = waitingOf(engine, caller, taskId);
    if (waiting && !(answered && Object.hasOwn(answered, waiting.requestId)))
      out[waiting.requestId] = approvalElicitation(taskId, waiting);
  }
  return Object.keys(out).length ? out : undefined;
}
