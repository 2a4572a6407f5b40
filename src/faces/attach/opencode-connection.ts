// OpenCode server connections over http(s) (rules: attach-harnesses, send-admission). Only the official HTTP API:
// health, sessions filtered by the connection directory (and checked again on every selected session), messages. Sends
// go straight to OpenCode, which queues them per session; no permission interception, no session-wide abort, and a send
// that timed out locally is reported as uncertain and never retried.
import {
  type Message,
  OpenCodeClient,
  OpenCodeRequestError,
  type Part,
  type Session,
} from '../../agents/opencode/client.ts';
import { checkTestedVersion, missingRouteMessage } from '../../agents/tested-versions.ts';
import { AttachError } from './errors.ts';
import {
  type ChatMessage,
  type ChatSummary,
  type ChatTranscript,
  type ConnectRequest,
  type HarnessConnection,
  type HarnessConnector,
  type HarnessHealth,
  type SendOptions,
  type SendReply,
  SendTimeoutError,
} from './harness.ts';

/** Bound of the health check made while connecting and by connection_status. */
export const OPENCODE_HEALTH_TIMEOUT_MS = 10_000;
/** read_chat returns at most the latest this many messages. */
export const MAX_READ_MESSAGES = 100;

export const connectOpenCode: HarnessConnector = async (req: ConnectRequest) => {
  const creds = req.credentials.openCode;
  if (!creds) throw new AttachError('OpenCode credentials are missing');
  const client = new OpenCodeClient({ baseUrl: req.origin, username: creds.username, password: creds.password });
  const connection = new OpenCodeConnection(client, req.directory);
  const health = await connection.health(req.signal).catch((err: unknown) => {
    if (err instanceof OpenCodeRequestError && err.status === 404)
      throw new AttachError(missingRouteMessage('opencode', `the OpenCode server at ${req.origin}`, '/global/health'));
    throw err;
  });
  if (!health.healthy) throw new AttachError(`the OpenCode server at ${req.origin} reports it is not healthy`);
  const verdict = checkTestedVersion('opencode', health.version);
  if (verdict.outcome === 'refused') throw new AttachError(verdict.message);
  return connection;
};

class OpenCodeConnection implements HarnessConnection {
  readonly harness = 'opencode' as const;
  private readonly client: OpenCodeClient;
  private readonly directory: string;
  /** Aborts this connection's own requests in flight when it is closed (never the server's turns). */
  private readonly lifetime = new AbortController();

  constructor(client: OpenCodeClient, directory: string) {
    this.client = client;
    this.directory = directory;
  }

  async health(signal?: AbortSignal): Promise<HarnessHealth> {
    const h = await this.client.health({ signal: this.signal(signal), timeoutMs: OPENCODE_HEALTH_TIMEOUT_MS });
    return { healthy: h.healthy === true, version: typeof h.version === 'string' ? h.version : undefined };
  }

  async listChats(limit: number, signal?: AbortSignal): Promise<ChatSummary[]> {
    const sessions = await this.client.listSessions(
      { directory: this.directory, limit },
      { signal: this.signal(signal) },
    );
    if (!Array.isArray(sessions)) throw new AttachError('OpenCode returned a session list that is not an array');
    return sessions
      .filter((s) => s && s.directory === this.directory)
      .sort((a, b) => (b.time?.updated ?? 0) - (a.time?.updated ?? 0))
      .slice(0, limit)
      .map(summarizeSession);
  }

  async readChat(chatId: string, signal?: AbortSignal): Promise<ChatTranscript> {
    const s = this.signal(signal);
    const session = await this.selectSession(chatId, s);
    const messages = await this.client.listMessages(
      chatId,
      { directory: this.directory, limit: MAX_READ_MESSAGES },
      { signal: s },
    );
    if (!Array.isArray(messages)) throw new AttachError('OpenCode returned a message list that is not an array');
    return {
      chatId,
      title: session.title ?? '',
      directory: session.directory,
      messages: messages.map((m) => chatMessage(m.info, m.parts)),
      truncated: messages.length >= MAX_READ_MESSAGES,
    };
  }

  async send(chatId: string, message: string, opts: SendOptions): Promise<SendReply> {
    const deadline = Date.now() + opts.timeoutMs;
    const seconds = Math.round(opts.timeoutMs / 1000);
    const signal = this.signal(opts.signal);
    try {
      await this.selectSession(chatId, signal, opts.timeoutMs);
    } catch (err) {
      if (err instanceof OpenCodeRequestError && err.kind === 'timeout')
        throw new SendTimeoutError(
          `no answer from OpenCode within ${seconds} s while checking the chat; nothing was sent`,
        );
      throw err;
    }
    let result: Awaited<ReturnType<OpenCodeClient['sendMessage']>>;
    try {
      result = await this.client.sendMessage(
        chatId,
        { parts: [{ type: 'text', text: message }] },
        { directory: this.directory },
        { signal, timeoutMs: Math.max(1, deadline - Date.now()) },
      );
    } catch (err) {
      if (err instanceof OpenCodeRequestError && (err.kind === 'timeout' || err.kind === 'aborted')) {
        const why = err.kind === 'timeout' ? `no reply within ${seconds} s` : 'the send was cancelled';
        throw new SendTimeoutError(
          `${why}; the OpenCode server may still have queued or started the turn (it was not retried; read_chat shows what happened)`,
        );
      }
      throw err;
    }
    const info = result?.info;
    if (info?.role !== 'assistant') throw new AttachError('OpenCode answered the message without a reply');
    const reply = visibleText(result.parts ?? []);
    if (info.error) {
      const detail = (info.error.data as { message?: unknown } | undefined)?.message;
      throw new AttachError(
        `OpenCode reported ${info.error.name}${typeof detail === 'string' && detail ? `: ${detail}` : ''}${reply ? ` (partial reply: ${reply.slice(0, 2_000)})` : ''}`,
      );
    }
    return { chatId, replyId: info.id, reply };
  }

  async close(): Promise<void> {
    this.lifetime.abort();
  }

  /** The session, after checking it belongs to the connection's directory (rule: attach-harnesses). */
  private async selectSession(chatId: string, signal: AbortSignal, timeoutMs?: number): Promise<Session> {
    let session: Session;
    try {
      session = await this.client.getSession(chatId, { directory: this.directory }, { signal, timeoutMs });
    } catch (err) {
      if (err instanceof OpenCodeRequestError && err.status === 404)
        throw new AttachError(
          `chat ${chatId} was not found on the OpenCode server; list_chats shows the chats of this connection`,
        );
      throw err;
    }
    if (!session || session.directory !== this.directory)
      throw new AttachError(
        `chat ${chatId} does not belong to this connection's directory ${this.directory}; list_chats shows the chats it may use`,
      );
    return session;
  }

  private signal(signal: AbortSignal | undefined): AbortSignal {
    return signal ? AbortSignal.any([signal, this.lifetime.signal]) : this.lifetime.signal;
  }
}

function iso(ms: number | undefined): string | undefined {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

function summarizeSession(s: Session): ChatSummary {
  return {
    chatId: s.id,
    title: s.title ?? '',
    directory: s.directory,
    createdAt: iso(s.time?.created),
    updatedAt: iso(s.time?.updated),
  };
}

/** Text the user sees: text parts that are not synthetic or ignored. Reasoning is never included. */
function visibleText(parts: Part[]): string {
  return parts
    .filter((p) => p.type === 'text' && !p.synthetic && !p.ignored)
    .map((p) => (p as { text: string }).text)
    .join('');
}

function chatMessage(info: Message, parts: Part[]): ChatMessage {
  const m: ChatMessage = {
    id: info.id,
    role: info.role,
    createdAt: iso(info.time?.created),
    text: visibleText(parts ?? []),
  };
  const tools = (parts ?? []).flatMap((p) => (p.type === 'tool' ? [{ name: p.tool, status: p.state.status }] : []));
  if (tools.length) m.tools = tools;
  if (info.role === 'assistant' && info.error) m.error = info.error.name;
  return m;
}
