// The curated `codex` / `codex-reply` contract (rule: codex-provider): strict schemas (additionalProperties: false), so
// Codex's own escape hatches (config, approval-policy, developer-instructions, base-instructions, compact-prompt, …)
// and any model or effort outside the curated sets are refused with -32602 before Codex starts.
import { isAbsolute } from 'node:path';
import { z } from 'zod';

export const CODEX_EFFORTS = ['medium', 'high', 'xhigh', 'max'] as const;
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const;
export const APPROVAL_POLICIES = ['never', 'on-request', 'untrusted', 'on-failure'] as const;
/** The two models callers may pick by default (operators replace them with `--codex_models a,b`). */
export const DEFAULT_CURATED_MODELS = ['gpt-5.6-sol', 'gpt-5.6-terra'] as const;

export const MAX_PROMPT_CHARS = 1_000_000;
export const MAX_GOAL_CHARS = 4_000;
const MAX_PATH_CHARS = 4_096;
const MAX_ID_CHARS = 128;

const prompt = z.string().min(1).max(MAX_PROMPT_CHARS).describe('the task or question for Codex');
const goal = z
  .string()
  .max(MAX_GOAL_CHARS)
  .describe(
    'a standing goal: on a new session it becomes the thread’s developer instructions; on a reply a short reminder; "" suppresses the server default for this call',
  );
const threadId = z.string().min(1).max(MAX_ID_CHARS).describe('the threadId a codex call returned');

export function newSessionShape(models: readonly [string, ...string[]]) {
  return {
    prompt,
    cwd: z
      .string()
      .min(1)
      .max(MAX_PATH_CHARS)
      .refine(isAbsolute, 'cwd must be an absolute path')
      .optional()
      .describe('absolute working directory (default: the directory the server was started in)'),
    sandbox: z.enum(SANDBOX_MODES).describe('the sandbox of this session; every new session names it'),
    model: z.enum(models).optional().describe('model of the session (default: the server’s)'),
    model_reasoning_effort: z.enum(CODEX_EFFORTS).optional().describe('reasoning effort of the session'),
    goal: goal.optional(),
    allow_subagents: z
      .boolean()
      .optional()
      .describe('let this session use Codex’s own multi-agent tools (still no MCP servers); default false'),
  };
}

export function codexSchema(models: readonly [string, ...string[]]) {
  return z.strictObject(newSessionShape(models));
}

export const codexReplySchema = z.strictObject({ threadId, prompt, goal: goal.optional() });

export const jobIdSchema = z.string().min(1).max(MAX_ID_CHARS);

export const peekSchema = z.strictObject({
  cwd: z.string().min(1).max(MAX_PATH_CHARS).optional().describe('only turns in this directory (or of unknown cwd)'),
  threadId: threadId.optional(),
  requestId: z.string().min(1).max(MAX_ID_CHARS).optional(),
});

/** A background job: a new session (same fields as `codex`) or, with `threadId`, a reply on that thread. */
export function codexStartSchema(models: readonly [string, ...string[]]) {
  const shape = newSessionShape(models);
  return z
    .strictObject({
      ...shape,
      sandbox: shape.sandbox.optional(),
      threadId: threadId.optional().describe('continue this thread in the background instead of starting a session'),
    })
    .superRefine((args, ctx) => {
      if (args.threadId === undefined) {
        if (args.sandbox === undefined)
          ctx.addIssue({ code: 'custom', path: ['sandbox'], message: 'a new session must name its sandbox' });
        return;
      }
      for (const key of ['cwd', 'sandbox', 'model', 'model_reasoning_effort', 'allow_subagents'] as const) {
        if (args[key] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `${key} is chosen when a session starts; a reply inherits it`,
          });
      }
    });
}
