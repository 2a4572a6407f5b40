// The MCP Tasks extension, server side, fenced in this one module: `io.modelcontextprotocol/tasks` as specified by
// SEP-2663 ("Tasks Extension", the extension's 2026-07-28 schema and its specification/draft/tasks.md: Capability
// Negotiation, Polymorphic Results, Task Polling, Task Update Requests, Task Cancellation). SDK v2 2.4.0 has no server
// side for it, so this is the smallest layer on the SDK's own hooks: the capability through registerCapabilities, the
// three methods as schema-validated request handlers (the SDK lets `tasks/get` and `tasks/cancel` through its era
// gate once registered so), and task creation as a tools/call interceptor of the shared tool layer. What a task IS
// comes from a TaskBackend, so any face can serve its own durable work as tasks (rule: mcp-tasks-extension).
import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { CallToolResult, ToolCallInterceptor, ToolDef, ToolExtra } from './mcp-tools.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** SEP-2663 task statuses. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';

/** A task as the backend sees it; `result` is set once completed, `error` (a JSON-RPC error) once failed. */
export interface TaskSnapshot {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  result?: CallToolResult;
  error?: { code: number; message: string; data?: unknown };
  /** Set with status `input_required`: the server-to-client requests the task waits on, keyed by the server's ids. */
  inputRequests?: Record<string, unknown>;
}

/** What a task-capable call turned into: a task, or an answer given at once (a refusal, a replayed result). */
export type TaskStart = { task: TaskSnapshot } | { result: CallToolResult };

/** The durable work behind the extension. Task ids are the backend's own and must be unguessable across callers. */
export interface TaskBackend {
  /** Starts `call` as a task; undefined when this tool is not served as a task (it then runs as a plain call). */
  start(call: { tool: ToolDef; args: unknown }, extra: ToolExtra): Promise<TaskStart> | undefined;
  /**
   * The task, returned at once when terminal, else once it changed or `holdMs` passed (a long-poll; `signal` ends it
   * early). undefined: no such task for this caller. `ctx` is the tasks/get request's (what its requester declared).
   */
  get(taskId: string, holdMs: number, signal: AbortSignal, ctx?: ServerContext): Promise<TaskSnapshot | undefined>;
  /**
   * Takes the requester's answers to a task's `inputRequests` (tasks/update); false when there is no such task. A
   * backend without it never asks for input, and every answer is ignored.
   */
  update?(taskId: string, inputResponses: Record<string, unknown>): boolean | Promise<boolean>;
  /** Asks the task to stop; false when there is no such task. Cooperative: the task may still end otherwise. */
  cancel(taskId: string): boolean | Promise<boolean>;
}

export interface TasksOptions {
  /** How long tasks/get holds a working task before answering (default 20 s, under clients' request timeouts). */
  holdMs?: number;
  /** The polling interval suggested to clients (default 1 s: tasks/get already waits for a change). */
  pollIntervalMs?: number;
  /** Task lifetime from creation; null for unlimited (the default: tasks live as long as the backend keeps them). */
  ttlMs?: number | null;
}

/** Whether this request declared the extension in its per-request client capabilities (2026-07-28 envelope). */
export function requestNegotiatedTasks(ctx: ServerContext | undefined): boolean {
  const envelope = ctx?.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return typeof caps?.extensions?.[TASKS_EXTENSION] === 'object';
}

const taskIdParam = z.string().min(1).max(256);
const TaskRef = z.looseObject({ taskId: taskIdParam });
// The SDK lifts `inputResponses` out of the params (ctx.mcpReq.inputResponses) before a handler sees them.
const TaskUpdate = z.looseObject({ taskId: taskIdParam });

/**
 * Serves the extension on `server` (before it connects): declares it, answers tasks/get, tasks/update and tasks/cancel
 * from `backend`, and returns the interceptor to pass to serveTools so a negotiating client's task-capable calls are
 * answered with a task handle (`resultType: "task"`). Clients that do not declare the extension never see a task.
 */
export function serveTasks(server: Server, backend: TaskBackend, opts: TasksOptions = {}): ToolCallInterceptor {
  const holdMs = opts.holdMs ?? 20_000;
  const common = { ttlMs: opts.ttlMs ?? null, pollIntervalMs: opts.pollIntervalMs ?? 1_000 };
  const wire = (t: TaskSnapshot) => ({
    taskId: t.taskId,
    status: t.status,
    ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}),
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ...common,
    ...(t.status === 'completed' && t.result ? { result: t.result } : {}),
    ...(t.status === 'failed' && t.error ? { error: t.error } : {}),
    ...(t.status === 'input_required' ? { inputRequests: t.inputRequests ?? {} } : {}),
  });
  const unknown = (id: string) =>
    new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown task "${id.slice(0, 80)}"`);
  // Capability Negotiation: the methods are only for a request that declares the extension (-32021 otherwise).
  const negotiated = (ctx: ServerContext) => {
    if (requestNegotiatedTasks(ctx)) return;
    throw new ProtocolError(
      ProtocolErrorCode.MissingRequiredClientCapability,
      `Missing required client capability: declare the ${TASKS_EXTENSION} extension to use tasks`,
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
  };

  server.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } } as Parameters<
    Server['registerCapabilities']
  >[0]);
  server.setRequestHandler('tasks/get', { params: TaskRef }, async ({ taskId }, ctx) => {
    negotiated(ctx);
    const task = await backend.get(taskId, holdMs, ctx.mcpReq.signal, ctx);
    if (!task) throw unknown(taskId);
    return { resultType: 'complete', ...wire(task) };
  });
  // Responses go to the backend, which ignores those for requests no longer outstanding (as the spec allows); the
  // acknowledgement tells an unknown task apart and says nothing of how the answers were taken.
  server.setRequestHandler('tasks/update', { params: TaskUpdate }, async ({ taskId }, ctx) => {
    negotiated(ctx);
    const responses = ctx.mcpReq.inputResponses ?? {};
    const known = backend.update
      ? await backend.update(taskId, responses)
      : (await backend.get(taskId, 0, AbortSignal.abort())) !== undefined;
    if (!known) throw unknown(taskId);
    return { resultType: 'complete' };
  });
  server.setRequestHandler('tasks/cancel', { params: TaskRef }, async ({ taskId }, ctx) => {
    negotiated(ctx);
    if (!(await backend.cancel(taskId))) throw unknown(taskId);
    return { resultType: 'complete' };
  });

  return (call, extra) => {
    if (!requestNegotiatedTasks(extra.ctx)) return undefined;
    const started = backend.start(call, extra);
    return started?.then((s) =>
      'result' in s ? (s.result as Record<string, unknown>) : { resultType: 'task', ...wire(s.task) },
    );
  };
}
