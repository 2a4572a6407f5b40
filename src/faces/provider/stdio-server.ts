// The stdio MCP server every provider runs on (rule: provider-shutdown), on MCP SDK v2: the SDK's stdio entry picks the
// era from the client's first message (2026-07-28 after `server/discover`, or the 2025 `initialize` handshake) and
// pins one server instance for it. Tool schemas are validated by the shared helper (bad input is JSON-RPC -32602 and
// changes nothing), progress goes only to callers that sent a progressToken, a keepalive keeps Node alive while stdin
// EOF races a child's handle, and a shutdown cancels work and reaps every tracked process group.
import { type CallToolResult, ProtocolError, Server } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import type { z } from 'zod';
import { BatonError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { DEFAULT_STOP_GRACE_MS, stopGroup } from '../../lib/process-group.ts';
import { redact, redactError } from '../../lib/redact.ts';
import { reportable, toolErrorResult } from '../errors.ts';
import { serveTasks, type TaskBackend } from '../mcp-tasks.ts';
import { defineTool, serveTools, type ToolDef, type ToolExtra } from '../mcp-tools.ts';

/** Largest JSON-RPC frame accepted from the client (rule: bounded-frames). */
export const MAX_CLIENT_FRAME_BYTES = 8 * 1024 * 1024;
/** Progress notifications go out at most this often (the latest status wins). */
export const PROGRESS_INTERVAL_MS = 1_000;
/** Shutdown waits this long for cancelled work before stopping process groups directly. */
const SHUTDOWN_WAIT_MS = 10_000;

/** A failure the caller should see as a tool error (isError), with a message that says what to do. */
export class ToolFailure extends BatonError<'tool_failed'> {
  constructor(message: string, structured?: Record<string, unknown>) {
    super('tool_failed', message, structured);
    this.name = 'ToolFailure';
  }
}

export interface ToolCallContext {
  /** The JSON-RPC id of the client's tools/call request. */
  requestId: string | number;
  /** Aborted when the client cancels the call or the connection closes. */
  signal: AbortSignal;
  /** Sends a progress notification when the caller asked for them; throttled, latest wins. */
  progress(message: string): void;
  /** Records a child process group so shutdown can reap it. */
  trackGroup(pgid: number): void;
}

/** A provider's tool: a ToolDef whose handler gets the provider's call context instead of the SDK's. */
export type ProviderTool = ToolDef<z.ZodType, ToolCallContext>;

export function defineProviderTool<S extends z.ZodType>(tool: ToolDef<S, ToolCallContext>): ProviderTool {
  return defineTool(tool);
}

export interface ProviderServerOptions {
  provider: string;
  version: string;
  instructions?: string;
  tools: ProviderTool[];
  logger: Logger;
  /** Cancels the provider's own work (background jobs) on shutdown, alongside in-flight calls. */
  onShutdown?: () => Promise<void>;
  /** Last step, once all work has stopped and every tracked group is gone (e.g. remove private homes). */
  onExit?: () => void;
  /**
   * The provider's long calls as MCP Tasks for a 2026-07-28 client that declares the extension (rule:
   * mcp-tasks-extension); other clients get the blocking tools unchanged.
   */
  tasks?: TaskBackend;
}

/** Text content plus structuredContent; the text defaults to the JSON of the data. */
export function structuredResult(data: Record<string, unknown>, text = JSON.stringify(data)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: data };
}

export async function serveProviderStdio(opts: ProviderServerOptions): Promise<void> {
  // Node would exit on stdin EOF before a child's pipes are registered; this timer holds it until shutdown is done.
  const keepalive = setInterval(() => {}, 1 << 30);
  const groups = new Set<number>();
  const inflight = new Set<AbortController>();
  const calls = new Set<Promise<unknown>>();

  const runCall = async (tool: ProviderTool, args: unknown, extra: ToolExtra): Promise<CallToolResult> => {
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    extra.signal.addEventListener('abort', onAbort, { once: true });
    inflight.add(controller);
    const progress = progressSender(extra._meta?.progressToken, (params) =>
      extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {}),
    );
    try {
      // A provider's tools answer with a result, never input_required.
      return (await tool.handler(args, {
        requestId: extra.requestId,
        signal: controller.signal,
        progress: progress.send,
        trackGroup: (pgid) => groups.add(pgid),
      })) as CallToolResult;
    } catch (err) {
      if (!(err instanceof ProtocolError) && !reportable(err)) {
        opts.logger.error('tool failed unexpectedly', { tool: tool.name, error: redactError(err) });
      }
      return toolErrorResult(err, { tool: tool.name });
    } finally {
      progress.stop();
      extra.signal.removeEventListener('abort', onAbort);
      inflight.delete(controller);
    }
  };

  const defs: ToolDef[] = opts.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input: tool.input,
    handler: (args, extra) => {
      const call = runCall(tool, args, extra);
      calls.add(call);
      call.finally(() => calls.delete(call)).catch(() => {});
      return call;
    },
  }));
  // One instance per era the entry opens (a 2026-07-28 probe the client abandons for `initialize` is closed again);
  // the tools, their calls and the process groups are shared by all of them.
  const newServer = () => {
    const server = new Server(
      { name: `baton-${opts.provider}`, version: opts.version },
      { capabilities: { tools: {} }, ...(opts.instructions ? { instructions: opts.instructions } : {}) },
    );
    const intercept = opts.tasks ? serveTasks(server, opts.tasks) : undefined;
    serveTools(server, defs, intercept ? { intercept } : {});
    return server;
  };

  const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: MAX_CLIENT_FRAME_BYTES });
  let shuttingDown: Promise<void> | undefined;
  const shutdown = (reason: string) => {
    shuttingDown ??= (async () => {
      opts.logger.debug('provider shutting down', { reason });
      for (const c of inflight) c.abort();
      const bounded = (p: Promise<unknown>) =>
        Promise.race([p.catch(() => {}), new Promise((r) => setTimeout(r, SHUTDOWN_WAIT_MS).unref())]);
      await bounded(Promise.all([opts.onShutdown?.(), Promise.allSettled([...calls])]));
      // Whatever is still alive in a group we started is stopped now: nothing outlives the server.
      await Promise.all([...groups].map((pgid) => stopGroup(pgid, DEFAULT_STOP_GRACE_MS)));
      await entry.close().catch(() => {});
      try {
        opts.onExit?.();
      } catch (err) {
        opts.logger.warn('cleanup at exit failed', { error: err instanceof Error ? err.message : String(err) });
      }
      clearInterval(keepalive);
    })();
    return shuttingDown;
  };
  const exitAfter = (reason: string, code: number) => () => {
    void shutdown(reason).then(() => process.exit(code));
  };
  process.stdin.once('end', exitAfter('stdin closed', 0));
  process.stdin.once('close', exitAfter('stdin closed', 0));
  process.stdout.on('error', exitAfter('stdout broken', 0));
  process.once('SIGTERM', exitAfter('SIGTERM', 143));
  process.once('SIGINT', exitAfter('SIGINT', 130));
  process.once('SIGHUP', exitAfter('SIGHUP', 129));

  // Protocol trouble goes to the log on stderr: stdout carries JSON-RPC only.
  const entry = serveStdio(newServer, {
    transport,
    onerror: (err) => opts.logger.warn('mcp transport', { error: redactError(err) }),
  });
  // The entry owns the transport's callbacks; chained here so that a connection the transport closed itself (an
  // oversized frame, stdout gone) ends the provider like stdin EOF does.
  const entryOnClose = transport.onclose;
  transport.onclose = () => {
    entryOnClose?.();
    exitAfter('connection closed', 0)();
  };
  process.stderr.write(`[baton] ready (provider: ${opts.provider})\n`);
}

type ProgressParams = { progressToken: string | number; progress: number; message: string };

/** Throttles progress to one notification per interval, always delivering the latest message. */
export function progressSender(
  token: string | number | undefined,
  send: (params: ProgressParams) => void,
): { send: (message: string) => void; stop: () => void } {
  if (token === undefined) return { send: () => {}, stop: () => {} };
  let count = 0;
  let lastSentAt = 0;
  let pending: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const flush = () => {
    timer = undefined;
    if (stopped || pending === undefined) return;
    lastSentAt = Date.now();
    // Progress text can quote the agent (a plan step, a status line): it is redacted like every other output.
    send({ progressToken: token, progress: ++count, message: redact(pending) });
    pending = undefined;
  };
  return {
    send(message) {
      if (stopped) return;
      pending = message;
      const wait = lastSentAt + PROGRESS_INTERVAL_MS - Date.now();
      if (wait <= 0) flush();
      else timer ??= setTimeout(flush, wait);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
