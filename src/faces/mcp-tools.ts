// Tools on the low-level MCP server so that schema violations are real JSON-RPC -32602 errors (rule: strict-inputs),
// not tool results: McpServer turns invalid params into `isError` results, which clients may mistake for a tool's
// answer. Served on MCP SDK v2, which answers both protocol eras (2026-07-28 and 2025 clients).
import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
  type ToolAnnotations,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

export type { CallToolResult };

/**
 * What a tool handler may return: its result, or on a 2026-07-28 request the input it needs first (the SDK carries
 * the embedded requests to the client and the client's answers back in a retry, `ctx.mcpReq.inputResponses`).
 */
export type ToolResult = CallToolResult | InputRequiredToolResult;

/** Whether this request declared form-mode elicitation in its per-request client capabilities (2026-07-28). */
export function requestCanElicit(ctx: ServerContext | undefined): boolean {
  const envelope = ctx?.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | undefined;
  const e = caps?.elicitation;
  if (typeof e !== 'object' || e === null) return false;
  // An empty object is form mode (the capability as it was before modes had names).
  return Object.keys(e).length === 0 || typeof (e as { form?: unknown }).form === 'object';
}

/** A multi round-trip `input_required` answer: embedded server-to-client requests keyed by the server's ids. */
export interface InputRequiredToolResult {
  [key: string]: unknown;
  resultType: 'input_required';
  inputRequests: Record<string, { method: string; params: Record<string, unknown> }>;
}

export function inputRequired(inputRequests: InputRequiredToolResult['inputRequests']): InputRequiredToolResult {
  return { resultType: 'input_required', inputRequests };
}

/** The result jsonResult and toolError build: text plus the same object as structuredContent. */
export interface TextToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

/** What a tool handler gets besides its arguments, read from the SDK's request context (kept whole in `ctx`). */
export interface ToolExtra {
  /** Aborted when the client cancels the call or the connection closes. */
  signal: AbortSignal;
  /** The JSON-RPC id of the tools/call request. */
  requestId: string | number;
  /** The request's `_meta` without the protocol's reserved envelope keys (progressToken and the like). */
  _meta?: { progressToken?: string | number; [key: string]: unknown };
  /** Sends a notification related to this request (progress, logging). */
  sendNotification(notification: { method: string; params?: Record<string, unknown> }): Promise<void>;
  /** The SDK's request context; absent only where a face calls a handler itself. */
  ctx?: ServerContext;
}

/**
 * One tool, the one shape every face defines its tools in: name, description, strict input schema, handler. `C` is
 * what the handler gets besides its arguments: the SDK's request context (ToolExtra) where a face serves the tool as it
 * is, or a face's own call context built from it (a provider's ToolCallContext adds progress and process groups).
 */
export interface ToolDef<S extends z.ZodType = z.ZodType, C = ToolExtra> {
  name: string;
  title?: string;
  description: string;
  input: S;
  annotations?: ToolAnnotations;
  handler(args: z.infer<S>, extra: C): Promise<ToolResult> | ToolResult;
}

/** Checks a tool's handler against its own schema, then forgets the schema's type so tools can share one list. */
export function defineTool<S extends z.ZodType, C = ToolExtra>(def: ToolDef<S, C>): ToolDef<z.ZodType, C> {
  return def as unknown as ToolDef<z.ZodType, C>;
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

/** An error the SDK answers as JSON-RPC -32602 (both SDKs read the numeric `code` of what a handler throws). */
function invalidParams(message: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, message);
}

/**
 * The tool a tools/call names and its parsed arguments, or -32602 naming what is wrong: a non-object params, an
 * argument no schema may accept (argumentsIssue), an unknown tool, or a schema violation with the argument's path.
 */
export function checkToolCall(
  byName: ReadonlyMap<string, ToolDef>,
  params: unknown,
): { tool: ToolDef; args: unknown; meta?: Record<string, unknown> } {
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  const issue = argumentsIssue(p.arguments);
  if (issue) throw invalidParams(`invalid arguments for ${String(p.name).slice(0, 80)}: ${issue}`);
  if (typeof p.name !== 'string') throw invalidParams('invalid tools/call request: params.name must be a string');
  if (
    p.arguments !== undefined &&
    (typeof p.arguments !== 'object' || p.arguments === null || Array.isArray(p.arguments))
  )
    throw invalidParams(`invalid arguments for ${p.name.slice(0, 80)}: arguments must be an object`);
  const tool = byName.get(p.name);
  if (!tool) throw invalidParams(`unknown tool "${p.name.slice(0, 80)}"`);
  const parsed = tool.input.safeParse(p.arguments ?? {});
  if (!parsed.success) throw invalidParams(`invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`);
  const meta = typeof p._meta === 'object' && p._meta !== null ? (p._meta as Record<string, unknown>) : undefined;
  return { tool, args: parsed.data, meta };
}

/** tools/list answers by tool set: a server built per request reuses its set's listing and name index. */
const listings = new WeakMap<
  readonly ToolDef[],
  { listed: ReturnType<typeof listedTools>; byName: Map<string, ToolDef> }
>();

function listingOf(tools: readonly ToolDef[]) {
  let l = listings.get(tools);
  if (!l) {
    l = { listed: listedTools(tools), byName: new Map(tools.map((t) => [t.name, t])) };
    listings.set(tools, l);
  }
  return l;
}

/** The tools/list entries for `tools`. */
export function listedTools(tools: readonly ToolDef[]) {
  return tools.map((t) => ({
    name: t.name,
    ...(t.title ? { title: t.title } : {}),
    description: t.description,
    inputSchema: toolJsonSchema(t.input),
    ...(t.annotations ? { annotations: t.annotations } : {}),
  }));
}

/** The era-neutral handler extra for an SDK v2 request context. */
export function toolExtraOf(ctx: ServerContext): ToolExtra {
  return {
    signal: ctx.mcpReq.signal,
    requestId: ctx.mcpReq.id,
    _meta: ctx.mcpReq._meta as ToolExtra['_meta'],
    sendNotification: (n) => ctx.mcpReq.notify(n),
    ctx,
  };
}

/**
 * A tools/call the shared layer has checked, for a caller that wants to answer some calls itself (the Tasks
 * extension answers a negotiated call with a task handle instead of running the tool in the request).
 */
export type ToolCallInterceptor = (
  call: { tool: ToolDef; args: unknown },
  extra: ToolExtra,
) => Promise<Record<string, unknown>> | undefined;

export interface ServeToolsOptions {
  /** Consulted after the arguments passed their schema; a returned promise answers the call instead of the tool. */
  intercept?: ToolCallInterceptor;
}

/** Installs tools/list and tools/call handlers for `tools` on a low-level server (capabilities must include tools). */
export function serveTools(server: Server, tools: readonly ToolDef[], opts: ServeToolsOptions = {}): void {
  const { listed, byName } = listingOf(tools);
  server.setRequestHandler('tools/list', () => ({ tools: listed }));
  // The schemas form hands the params over as received: the spec schema would drop an own `__proto__` key from the
  // arguments before argumentsIssue could see it.
  server.setRequestHandler('tools/call', { params: rawParams }, async (params, ctx) => {
    const call = checkToolCall(byName, params);
    const extra = toolExtraOf(ctx);
    const intercepted = opts.intercept?.(call, extra);
    if (intercepted) return (await intercepted) as CallToolResult;
    const result = await call.tool.handler(call.args, extra);
    // The SDK checks an input_required answer against the request's capabilities and era itself.
    if (result.resultType === 'input_required') return result as never;
    return server.projectCallToolResult(result as CallToolResult, undefined);
  });
}

/** Params exactly as the client sent them (validated by checkToolCall, not here). */
const rawParams = z.custom<Record<string, unknown>>(() => true);

// ------------------------------------------------------------ results

/** A successful result carrying the same object as JSON text and as structuredContent. */
export function jsonResult(value: Record<string, unknown>): TextToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/** A tool-level failure the caller can read and act on (not a protocol error). */
export function toolError(message: string, extra: Record<string, unknown> = {}): TextToolResult {
  const structuredContent = { error: message, ...extra };
  return { content: [{ type: 'text', text: message }], structuredContent, isError: true };
}
