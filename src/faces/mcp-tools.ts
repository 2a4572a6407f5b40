// Tools on the low-level MCP server so that schema violations are real JSON-RPC -32602 errors (SE-4), not tool
// results: McpServer turns invalid params into `isError` results, which clients may mistake for a tool's answer.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
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
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
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
