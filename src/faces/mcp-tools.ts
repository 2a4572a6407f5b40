// Tools on the low-level MCP server so that schema violations are real JSON-RPC -32602 errors (rule: strict-inputs),
// not tool results: McpServer turns invalid params into `isError` results, which clients may mistake for a tool's
// answer.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type ServerRequest,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface ToolDef<S extends z.ZodType = z.ZodType> {
  name: string;
  title?: string;
  description: string;
  input: S;
  annotations?: ToolAnnotations;
  handler(args: z.infer<S>, extra: ToolExtra): Promise<CallToolResult> | CallToolResult;
}

export function defineTool<S extends z.ZodType>(def: ToolDef<S>): ToolDef {
  return def as unknown as ToolDef;
}

/** Explains every schema issue with its argument path, e.g. `limit: Too big: expected number to be <=500`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.length ? i.path.join('.') : 'arguments';
      if (i.code === 'unrecognized_keys')
        return `${path}: unknown argument(s) ${i.keys.map((k) => `"${k}"`).join(', ')}`;
      return `${path}: ${i.message}`;
    })
    .join('; ');
}

export function toolJsonSchema(schema: z.ZodType): { type: 'object'; [k: string]: unknown } {
  const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  delete json.$schema;
  return json as { type: 'object' };
}

/** Keys no argument object may carry: a client could otherwise reach an object's prototype through them. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * tools/call with its params as received. The SDK's CallToolRequestSchema silently drops an own `__proto__` key from
 * the arguments, so handlers register this schema instead and look at the raw arguments first (checkedCallRequest).
 */
export const RawCallToolRequestSchema = z.object({ method: z.literal('tools/call'), params: z.unknown() });

/**
 * What no tool schema may accept, anywhere in the arguments, as `path: reason`: an own `__proto__`, `constructor` or
 * `prototype` key, and a key or string that is not well-formed Unicode (a lone surrogate: stored as UTF-8 it would turn
 * into U+FFFD, so distinct keys and ids would collapse into one). Iterative, so deep nesting cannot overflow the stack.
 */
export function argumentsIssue(args: unknown): string | undefined {
  const stack: Array<[unknown, string]> = [[args, '']];
  const at = (path: string, key: string | number) => (path ? `${path}.${key}` : String(key));
  while (stack.length) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (!value.isWellFormed()) return `${path || 'arguments'}: contains a lone surrogate (not valid Unicode text)`;
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => {
        stack.push([v, at(path, i)]);
      });
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) {
        if (FORBIDDEN_KEYS.has(key)) return `${path || 'arguments'}: the key "${key}" is not allowed`;
        if (!key.isWellFormed())
          return `${path || 'arguments'}: a key contains a lone surrogate (not valid Unicode text)`;
        stack.push([v, at(path, key)]);
      }
    }
  }
  return undefined;
}

/** The typed request from a raw one, or -32602 naming what no schema may accept (see argumentsIssue). */
export function checkedCallRequest(raw: z.infer<typeof RawCallToolRequestSchema>): CallToolRequest {
  const params = (typeof raw.params === 'object' && raw.params !== null ? raw.params : {}) as Record<string, unknown>;
  const issue = argumentsIssue(params.arguments);
  if (issue) {
    throw new McpError(ErrorCode.InvalidParams, `invalid arguments for ${String(params.name).slice(0, 80)}: ${issue}`);
  }
  const parsed = CallToolRequestSchema.safeParse(raw);
  if (!parsed.success)
    throw new McpError(ErrorCode.InvalidParams, `invalid tools/call request: ${parsed.error.message}`);
  return parsed.data;
}

/** Installs tools/list and tools/call handlers for `tools` on a low-level server (capabilities must include tools). */
export function serveTools(server: Server, tools: readonly ToolDef[]): void {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed = tools.map((t) => ({
    name: t.name,
    ...(t.title ? { title: t.title } : {}),
    description: t.description,
    inputSchema: toolJsonSchema(t.input),
    ...(t.annotations ? { annotations: t.annotations } : {}),
  }));
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
  server.setRequestHandler(RawCallToolRequestSchema, async (raw, extra) => {
    const req = checkedCallRequest(raw);
    const tool = byName.get(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${req.params.name}"`);
    const parsed = tool.input.safeParse(req.params.arguments ?? {});
    if (!parsed.success) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`,
      );
    }
    return tool.handler(parsed.data, extra);
  });
}

/** A successful result carrying the same object as JSON text and as structuredContent. */
export function jsonResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/** A tool-level failure the caller can read and act on (not a protocol error). */
export function toolError(message: string, extra: Record<string, unknown> = {}): CallToolResult {
  const structuredContent = { error: message, ...extra };
  return { content: [{ type: 'text', text: message }], structuredContent, isError: true };
}
