// The nine attach tools (rule: attach-tools): names, inputs, defaults and bounds of the crossharness contract, on any
// MCP SDK v2 McpServer, or as strict tool definitions for a server baton owns. Schemas are strict (unknown keys
// refused, every string and number bounded, rule `strict-inputs`); handlers only call the registries.
import {
  type CallToolResult,
  type McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type RegisteredTool,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { redact, redactDeep, redactedError } from '../../lib/redact.ts';
import { defineTool, type ToolDef } from '../mcp-tools.ts';
import { MAX_SERVER_URL_LENGTH } from './allowlist.ts';
import { type ConnectionRegistry, HARNESSES, MAX_DIRECTORY_LENGTH } from './connections.ts';
import { DispatchRegistry } from './dispatches.ts';

export const SEND_MESSAGE_DEFAULT_TIMEOUT_SECONDS = 300;
export const SEND_MESSAGE_ASYNC_DEFAULT_TIMEOUT_SECONDS = 900;
export const MIN_TIMEOUT_SECONDS = 1;
export const MAX_TIMEOUT_SECONDS = 3_600;
export const MAX_WAIT_SECONDS = 60;
export const DEFAULT_WAIT_SECONDS = 0;
export const DEFAULT_LIST_CHATS_LIMIT = 20;
export const MAX_LIST_CHATS_LIMIT = 100;
/** Largest message a send accepts, in Unicode code points (how zod and JSON Schema count `maxLength`). */
export const MAX_MESSAGE_LENGTH = 1024 * 1024;
const MAX_ID_LENGTH = 256;

const connectionId = z.string().min(1).max(MAX_ID_LENGTH).describe('The id connect_harness returned');
const chatId = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .describe('A chat id from list_chats (OpenCode session or Codex thread)');
const message = z.string().min(1).max(MAX_MESSAGE_LENGTH).describe('The message to send to the chat');
const timeoutSeconds = (def: number) =>
  z
    .number()
    .int()
    .min(MIN_TIMEOUT_SECONDS)
    .max(MAX_TIMEOUT_SECONDS)
    .optional()
    .describe(
      `Seconds to wait for the reply (${MIN_TIMEOUT_SECONDS}-${MAX_TIMEOUT_SECONDS}, default ${def}); covers validation, queueing and the harness request`,
    );

export const TOOL_SCHEMAS = {
  connect_harness: z
    .object({
      harness: z
        .enum(HARNESSES)
        .describe('opencode (http/https server) or codex (ws/wss app-server); claude-code is refused'),
      serverUrl: z
        .string()
        .min(1)
        .max(MAX_SERVER_URL_LENGTH)
        .describe('Exact approved origin, e.g. http://127.0.0.1:4096/'),
      directory: z.string().min(1).max(MAX_DIRECTORY_LENGTH).describe('Absolute project directory on the server'),
    })
    .strict(),
  list_connections: z.object({}).strict(),
  list_chats: z
    .object({
      connectionId,
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_LIST_CHATS_LIMIT)
        .optional()
        .describe(
          `How many chats, most recently updated first (1-${MAX_LIST_CHATS_LIMIT}, default ${DEFAULT_LIST_CHATS_LIMIT})`,
        ),
    })
    .strict(),
  read_chat: z.object({ connectionId, chatId }).strict(),
  send_message: z
    .object({ connectionId, chatId, message, timeoutSeconds: timeoutSeconds(SEND_MESSAGE_DEFAULT_TIMEOUT_SECONDS) })
    .strict(),
  send_message_async: z
    .object({
      connectionId,
      chatId,
      message,
      timeoutSeconds: timeoutSeconds(SEND_MESSAGE_ASYNC_DEFAULT_TIMEOUT_SECONDS),
    })
    .strict(),
  check_reply: z
    .object({
      connectionId: connectionId.optional().describe('When given, the dispatch must belong to this connection'),
      dispatchId: z.string().min(1).max(MAX_ID_LENGTH).describe('The id send_message_async returned'),
      waitSeconds: z
        .number()
        .int()
        .min(0)
        .max(MAX_WAIT_SECONDS)
        .optional()
        .describe(
          `Seconds to wait for the reply if it is not ready (0-${MAX_WAIT_SECONDS}, default ${DEFAULT_WAIT_SECONDS})`,
        ),
    })
    .strict(),
  connection_status: z.object({ connectionId }).strict(),
  disconnect_harness: z.object({ connectionId }).strict(),
} as const;

export type AttachToolName = keyof typeof TOOL_SCHEMAS;
export const ATTACH_TOOL_NAMES = Object.keys(TOOL_SCHEMAS) as AttachToolName[];

const DESCRIPTIONS: Record<AttachToolName, string> = {
  connect_harness:
    'Connect to a running OpenCode server or Codex app-server at an operator-approved origin for one project directory. Returns a connectionId.',
  list_connections: 'List the connections held by this MCP process.',
  list_chats: "List the chats (sessions/threads) in the connection's directory, most recently updated first.",
  read_chat: 'Read the latest messages of one chat.',
  send_message:
    'Send a message to a chat and wait for the reply. On a timeout the harness may still run the turn; it is never retried.',
  send_message_async: 'Send a message to a chat without waiting; returns a dispatchId for check_reply.',
  check_reply: 'Check (and optionally wait for) the reply of a send_message_async dispatch.',
  connection_status: 'Show one connection and check that its server is healthy.',
  disconnect_harness: 'Close a connection. A failed close keeps the connectionId so calling again retries the cleanup.',
};

type Handler = (args: never, signal: AbortSignal) => Promise<unknown>;

function ok(value: unknown): CallToolResult {
  // Chat text comes from the harness and may quote anything: every string is redacted, in both representations.
  const structured = redactDeep(
    typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { result: value },
  ) as Record<string, unknown>;
  return { content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }], structuredContent: structured };
}

function fail(err: unknown): CallToolResult {
  const e = redactedError(err);
  const parts = e instanceof AggregateError ? [e.message, ...e.errors.map((x) => (x as Error).message)] : [e.message];
  return { content: [{ type: 'text', text: redact(parts.join('\n')) }], isError: true };
}

export function attachToolHandlers(
  connections: ConnectionRegistry,
  dispatches: DispatchRegistry,
): Record<AttachToolName, Handler> {
  type Args<N extends AttachToolName> = z.infer<(typeof TOOL_SCHEMAS)[N]>;
  const handlers: { [N in AttachToolName]: (args: Args<N>, signal: AbortSignal) => Promise<unknown> } = {
    connect_harness: (a, signal) => connections.connect(a.harness, a.serverUrl, a.directory, signal),
    list_connections: async () => ({ connections: connections.list() }),
    list_chats: async (a, signal) => {
      const c = connections.get(a.connectionId);
      return { connectionId: a.connectionId, chats: await c.listChats(a.limit ?? DEFAULT_LIST_CHATS_LIMIT, signal) };
    },
    read_chat: async (a, signal) => {
      const c = connections.get(a.connectionId);
      return { connectionId: a.connectionId, chat: await c.readChat(a.chatId, signal) };
    },
    send_message: async (a, signal) => {
      const c = connections.get(a.connectionId);
      const seconds = a.timeoutSeconds ?? SEND_MESSAGE_DEFAULT_TIMEOUT_SECONDS;
      const reply = await c.send(a.chatId, a.message, { timeoutMs: seconds * 1000, signal });
      return { connectionId: a.connectionId, ...reply };
    },
    send_message_async: async (a) => {
      const c = connections.get(a.connectionId);
      const seconds = a.timeoutSeconds ?? SEND_MESSAGE_ASYNC_DEFAULT_TIMEOUT_SECONDS;
      // Admitted before a record exists, so a refused send leaves nothing behind; once the dispatchId is returned the
      // send is independent of this tool call (the caller's cancellation does not reach it).
      const permit = c.prepareSend(a.chatId);
      try {
        const summary = dispatches.start({ connectionId: c.connectionId, harness: c.harness, chatId: a.chatId }, () =>
          permit.run(a.message, { timeoutMs: seconds * 1000 }),
        );
        return summary;
      } catch (err) {
        permit.cancel();
        throw err;
      }
    },
    check_reply: (a, signal) =>
      dispatches.check(a.dispatchId, {
        connectionId: a.connectionId,
        waitMs: (a.waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000,
        signal,
      }),
    connection_status: async (a, signal) => {
      const info = connections.info(a.connectionId);
      if (info.state !== 'open') return { connection: info };
      try {
        return { connection: info, health: await connections.get(a.connectionId).health(signal) };
      } catch (err) {
        // An unreachable server is a status, not a failed tool call.
        return { connection: info, health: { healthy: false, detail: redactedError(err).message } };
      }
    },
    disconnect_harness: async (a) => {
      await connections.disconnect(a.connectionId);
      return { disconnected: a.connectionId };
    },
  };
  return handlers as unknown as Record<AttachToolName, Handler>;
}

/**
 * Registers the nine attach tools on an McpServer the host owns (rule: attach-library). A duplicate tool name throws
 * and removes only the tools this attempt added. close() refuses while the server is connected, then removes the tools,
 * disposes the dispatch registry and closes every owned connection; a failed connection cleanup can be retried by
 * calling it again.
 */
export class CrossHarnessMcpToolRegistrar {
  readonly connections: ConnectionRegistry;
  readonly dispatches: DispatchRegistry;
  private server: McpServer | undefined;
  private registered: RegisteredTool[] = [];
  /** Whether the server given the strict tools still serves them (set by strictTools). */
  private serving: (() => boolean) | undefined;
  private closed = false;

  constructor(connections: ConnectionRegistry, dispatches: DispatchRegistry = new DispatchRegistry()) {
    this.connections = connections;
    this.dispatches = dispatches;
  }

  register(server: McpServer): void {
    this.claim();
    const handlers = attachToolHandlers(this.connections, this.dispatches);
    const added: RegisteredTool[] = [];
    try {
      for (const name of ATTACH_TOOL_NAMES) {
        const handler = handlers[name];
        added.push(
          server.registerTool(
            name,
            { description: DESCRIPTIONS[name], inputSchema: TOOL_SCHEMAS[name] },
            async (args: unknown, ctx: ServerContext) => {
              try {
                return ok(await handler(args as never, ctx.mcpReq.signal));
              } catch (err) {
                return fail(err);
              }
            },
          ),
        );
      }
    } catch (err) {
      for (const tool of added) tool.remove();
      throw err;
    }
    this.server = server;
    this.registered = added;
  }

  /**
   * The nine tools as definitions for a server this package owns outright (the standalone `baton attach`), served by
   * the shared tool layer: a schema violation is a JSON-RPC -32602 error rather than a tool result (rule:
   * strict-inputs). A host's shared McpServer keeps the SDK's own handling (register), which reports violations as
   * tool errors. `serving` says whether that server is still up: close() refuses until it is not.
   */
  strictTools(serving: () => boolean): ToolDef[] {
    this.claim();
    this.serving = serving;
    const handlers = attachToolHandlers(this.connections, this.dispatches);
    return ATTACH_TOOL_NAMES.map((name) =>
      defineTool({
        name,
        description: DESCRIPTIONS[name],
        input: TOOL_SCHEMAS[name],
        handler: async (args, extra) => {
          if (this.closed) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool "${name}"`);
          try {
            return ok(await handlers[name](args as never, extra.signal));
          } catch (err) {
            return fail(err);
          }
        },
      }),
    );
  }

  private claim(): void {
    if (this.closed) throw new Error('this CrossHarnessMcpToolRegistrar is closed; create a new one');
    if (this.server || this.serving)
      throw new Error('this CrossHarnessMcpToolRegistrar has already registered its tools');
  }

  async close(): Promise<void> {
    if (this.server?.isConnected() || this.serving?.())
      throw new Error(
        'the shared McpServer is still connected; close it before closing the CrossHarnessMcpToolRegistrar',
      );
    this.closed = true;
    for (const tool of this.registered) tool.remove();
    this.registered = [];
    this.dispatches.dispose();
    await this.connections.closeAll();
  }
}
