// Codex app-server connections over ws(s) (rules: attach-harnesses, send-admission). Each connection owns one
// initialized WebSocket (through the shared CodexAppServerClient) and uses only thread/list (cwd = the connection
// directory), thread/read, thread/resume, turn/start with its notifications, and turn/interrupt for a timed-out turn.
// Sends to one thread are sequenced; when a timed-out turn cannot be shown to have stopped, the socket is closed rather
// than risk overlapping turns.

import { checkTestedVersion } from '../../agents/tested-versions.ts';
import { CodexAppServerClient, type CodexServerRequest } from '../../codex/app-server-client.ts';
import { codexDecline } from '../../codex/declines.ts';
import type {
  Thread,
  ThreadItem,
  ThreadListParams,
  ThreadListResponse,
  ThreadReadParams,
  ThreadReadResponse,
  ThreadResumeParams,
  Turn,
  TurnInterruptParams,
  TurnStartParams,
  TurnStartResponse,
} from '../../codex/protocol.ts';
import { BATON_VERSION } from '../../version.ts';
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
  type SendPermit,
  type SendReply,
  SendTimeoutError,
} from './harness.ts';
import { SendAdmission, type ThreadTicket } from './send-admission.ts';

/** After a timed-out turn: how long turn/interrupt may take to be acknowledged, then the turn to report terminal. */
export const INTERRUPT_ACK_TIMEOUT_MS = 3_000;
export const TERMINAL_AFTER_INTERRUPT_TIMEOUT_MS = 3_000;
/** Bound of the requests that do not run a turn. */
export const CODEX_REQUEST_TIMEOUT_MS = 30_000;
export const CODEX_INITIALIZE_TIMEOUT_MS = 10_000;
/** read_chat returns at most the latest this many messages. */
export const MAX_READ_MESSAGES = 100;
/** Another client that supplied the login tokens answers this; any reply from us would race it. */
export const IGNORED_SERVER_REQUESTS = ['account/chatgptAuthTokens/refresh'] as const;
const METHOD_NOT_SUPPORTED = -32601;

export const connectCodex: HarnessConnector = async (req: ConnectRequest) => {
  const connection = new CodexConnection(req);
  await connection.open();
  return connection;
};

interface TurnWatcher {
  turnId: string | undefined;
  items: ThreadItem[];
  buffered: { method: string; params: Record<string, unknown> }[];
  completed?: Turn;
  wake?: () => void;
}

class CodexConnection implements HarnessConnection {
  readonly harness = 'codex' as const;
  private readonly directory: string;
  private readonly client: CodexAppServerClient;
  private readonly admission = new SendAdmission();
  private readonly watchers = new Map<string, TurnWatcher>();
  private closedReason: string | undefined;
  private readonly closedPromise: Promise<void>;
  private markClosed!: () => void;

  constructor(req: ConnectRequest) {
    this.directory = req.directory;
    this.closedPromise = new Promise((r) => {
      this.markClosed = r;
    });
    this.client = new CodexAppServerClient({
      transport: { type: 'websocket', url: req.origin, token: req.credentials.codexToken },
      clientInfo: { name: 'baton-attach', title: 'baton attach', version: BATON_VERSION },
      ignoredServerRequestMethods: IGNORED_SERVER_REQUESTS,
      initializeTimeoutMs: CODEX_INITIALIZE_TIMEOUT_MS,
      onNotification: (n) => this.onNotification(n.method, n.params),
      onServerRequest: (r) => this.onServerRequest(r),
      onClose: (error) => {
        this.closedReason ??= error
          ? `the Codex connection closed: ${error.message}`
          : 'the Codex connection is closed';
        for (const w of this.watchers.values()) w.wake?.();
        this.markClosed();
      },
    });
  }

  async open(): Promise<void> {
    await this.client.connect();
    // Refused before any thread is read when the Codex behind the socket is one baton does not support.
    const verdict = checkTestedVersion('codex', this.client.serverVersion);
    if (verdict.outcome === 'refused') {
      this.client.close();
      throw new AttachError(verdict.message);
    }
  }

  async health(signal?: AbortSignal): Promise<HarnessHealth> {
    if (this.closedReason || !this.client.connected)
      return { healthy: false, version: this.client.serverVersion, detail: this.closedReason ?? 'not connected' };
    await this.request('thread/list', { cwd: this.directory, limit: 1 } satisfies ThreadListParams, signal);
    return { healthy: true, version: this.client.serverVersion };
  }

  async listChats(limit: number, signal?: AbortSignal): Promise<ChatSummary[]> {
    const params: ThreadListParams = { cwd: this.directory, limit, sortKey: 'updated_at' };
    const res = (await this.request('thread/list', params, signal)) as ThreadListResponse;
    if (!Array.isArray(res?.data)) throw new AttachError('Codex returned a thread list without data');
    return res.data
      .filter((t) => t && t.cwd === this.directory)
      .slice(0, limit)
      .map((t) => ({
        chatId: t.id,
        title: t.name ?? t.preview ?? '',
        directory: t.cwd,
        createdAt: seconds(t.createdAt),
        updatedAt: seconds(t.updatedAt),
      }));
  }

  async readChat(chatId: string, signal?: AbortSignal): Promise<ChatTranscript> {
    const thread = await this.selectThread(chatId, true, signal);
    const messages: ChatMessage[] = [];
    for (const turn of thread.turns ?? []) {
      for (const item of turn.items ?? []) {
        const m = chatMessage(item, turn);
        if (m) messages.push(m);
      }
    }
    return {
      chatId,
      title: thread.name ?? thread.preview ?? '',
      directory: thread.cwd,
      messages: messages.slice(-MAX_READ_MESSAGES),
      truncated: messages.length > MAX_READ_MESSAGES,
    };
  }

  send(chatId: string, message: string, opts: SendOptions): Promise<SendReply> {
    let permit: SendPermit;
    try {
      permit = this.prepareSend(chatId);
    } catch (err) {
      return Promise.reject(err);
    }
    return permit.run(message, opts);
  }

  prepareSend(chatId: string): SendPermit {
    this.assertOpen();
    const ticket = this.admission.admit(chatId);
    return {
      run: (message, opts) => this.deliver(chatId, message, opts, ticket).finally(() => ticket.release()),
      cancel: () => ticket.release(),
    };
  }

  private async deliver(chatId: string, message: string, opts: SendOptions, ticket: ThreadTicket): Promise<SendReply> {
    const seconds = Math.round(opts.timeoutMs / 1000);
    const deadline = AbortSignal.timeout(opts.timeoutMs);
    const stop = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline;
    const why = () => (opts.signal?.aborted ? 'the send was cancelled' : `no reply within ${seconds} s`);
    try {
      await ticket.ready(stop);
    } catch {
      throw new SendTimeoutError(`${why()} while it waited behind earlier sends to this chat; nothing was sent`);
    }
    this.assertOpen();
    try {
      await this.selectThread(chatId, false, stop);
      await this.request('thread/resume', { threadId: chatId, excludeTurns: true } satisfies ThreadResumeParams, stop);
    } catch (err) {
      if (stop.aborted) throw new SendTimeoutError(`${why()} while preparing the chat; nothing was sent`);
      throw err;
    }
    return await this.runTurn(chatId, message, stop, why);
  }

  async close(): Promise<void> {
    this.client.close();
    let timer: NodeJS.Timeout | undefined;
    const confirmed = await Promise.race([
      this.closedPromise.then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), INTERRUPT_ACK_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!confirmed) throw new AttachError('the Codex WebSocket did not confirm that it closed');
  }

  /**
   * Starts the turn, follows its notifications and, on timeout or cancel, interrupts it safely (rule: send-admission).
   */
  private async runTurn(chatId: string, message: string, stop: AbortSignal, why: () => string): Promise<SendReply> {
    const watcher: TurnWatcher = { turnId: undefined, items: [], buffered: [] };
    this.watchers.set(chatId, watcher);
    try {
      if (stop.aborted) throw new SendTimeoutError(`${why()} before the turn started; nothing was sent`);
      const params: TurnStartParams = { threadId: chatId, input: [{ type: 'text', text: message, text_elements: [] }] };
      // turn/start is never abandoned half-way: even after a timeout or cancel its answer is awaited (3 s more at
      // most) so the turn can be correlated and interrupted; without an answer the socket is closed instead.
      const request = this.client.request('turn/start', params, CODEX_REQUEST_TIMEOUT_MS);
      request.catch(() => {});
      let started: TurnStartResponse | typeof UNCORRELATED;
      try {
        started = (await Promise.race([request, afterAbort(stop, INTERRUPT_ACK_TIMEOUT_MS)])) as
          | TurnStartResponse
          | typeof UNCORRELATED;
      } catch (err) {
        const e = err as { dispatched?: boolean; code?: number };
        if (e.dispatched === true && e.code === undefined) {
          this.abandon('a turn/start could not be correlated');
          throw new SendTimeoutError(
            'Codex did not confirm the turn; the connection was closed so no turn can overlap, and the turn may still run (it was not retried)',
          );
        }
        throw err;
      }
      if (started === UNCORRELATED) {
        this.abandon('a turn/start could not be correlated');
        throw new SendTimeoutError(
          `${why()} before Codex confirmed the turn; the connection was closed so no turn can overlap, and the turn may still run (it was not retried)`,
        );
      }
      const turnId = started?.turn?.id;
      if (typeof turnId !== 'string') {
        this.abandon('turn/start returned no turn id');
        throw new AttachError('Codex started a turn without an id; the connection was closed to keep turns apart');
      }
      watcher.turnId = turnId;
      for (const n of watcher.buffered.splice(0)) this.route(watcher, n.method, n.params);
      if (started.turn.status !== 'inProgress') watcher.completed ??= started.turn;
      const finished = await this.waitTerminal(watcher, stop);
      if (!finished) {
        if (!(await this.interrupt(chatId, turnId, watcher)))
          throw new SendTimeoutError(
            `${why()}; Codex did not confirm that the interrupted turn stopped, so the connection was closed (the turn may still run; it was not retried)`,
          );
        throw new SendTimeoutError(
          `${why()}; the turn was interrupted (it was not retried; read_chat shows what happened)`,
        );
      }
      return turnReply(chatId, finished, watcher.items);
    } finally {
      if (this.watchers.get(chatId) === watcher) this.watchers.delete(chatId);
    }
  }

  /** Resolves with the terminal turn, or undefined when `stop` fired first; rejects when the socket closed. */
  private waitTerminal(watcher: TurnWatcher, stop: AbortSignal, extraStop?: AbortSignal): Promise<Turn | undefined> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (watcher.completed) return finish(() => resolve(watcher.completed));
        if (this.closedReason) return finish(() => reject(new AttachError(this.closedReason!)));
        if (stop.aborted || extraStop?.aborted) return finish(() => resolve(undefined));
      };
      const finish = (fn: () => void) => {
        watcher.wake = undefined;
        stop.removeEventListener('abort', check);
        extraStop?.removeEventListener('abort', check);
        fn();
      };
      watcher.wake = check;
      stop.addEventListener('abort', check, { once: true });
      extraStop?.addEventListener('abort', check, { once: true });
      check();
    });
  }

  /** turn/interrupt acknowledged within 3 s, then turn/completed within 3 s; otherwise the socket is closed (false). */
  private async interrupt(threadId: string, turnId: string, watcher: TurnWatcher): Promise<boolean> {
    try {
      await this.client.request(
        'turn/interrupt',
        { threadId, turnId } satisfies TurnInterruptParams,
        INTERRUPT_ACK_TIMEOUT_MS,
      );
    } catch {
      this.abandon('turn/interrupt was not acknowledged');
      return false;
    }
    const terminal = await this.waitTerminal(
      watcher,
      new AbortController().signal,
      AbortSignal.timeout(TERMINAL_AFTER_INTERRUPT_TIMEOUT_MS),
    ).catch(() => undefined);
    if (!terminal) this.abandon('the interrupted turn did not report completion');
    return terminal !== undefined;
  }

  /** Closes the socket: the connection then fails every call until it is disconnected (and may be reconnected). */
  private abandon(reason: string): void {
    this.closedReason ??= `the Codex connection was closed because ${reason}; disconnect it and connect again`;
    this.client.close();
  }

  private onNotification(method: string, params: unknown): void {
    const p = params as Record<string, unknown> | null;
    const threadId = typeof p?.threadId === 'string' ? p.threadId : undefined;
    if (!threadId || !p) return;
    const watcher = this.watchers.get(threadId);
    if (!watcher) return;
    if (watcher.turnId === undefined) watcher.buffered.push({ method, params: p });
    else this.route(watcher, method, p);
  }

  private route(watcher: TurnWatcher, method: string, p: Record<string, unknown>): void {
    if (method === 'item/completed' && p.turnId === watcher.turnId) {
      watcher.items.push(p.item as ThreadItem);
    } else if (method === 'turn/completed') {
      const turn = p.turn as Turn | undefined;
      if (turn?.id === watcher.turnId) {
        watcher.completed = turn;
        watcher.wake?.();
      }
    }
  }

  /** What the shared table declines is declined; everything else gets method-not-supported, never silence. */
  private onServerRequest(request: CodexServerRequest): void {
    const decline = codexDecline(request.method);
    if (decline) this.client.respond(request.id, decline.answer);
    else this.client.rejectRequest(request.id, METHOD_NOT_SUPPORTED, `baton attach does not support ${request.method}`);
  }

  private async selectThread(threadId: string, includeTurns: boolean, signal?: AbortSignal): Promise<Thread> {
    const res = (await this.request(
      'thread/read',
      { threadId, includeTurns } satisfies ThreadReadParams,
      signal,
    )) as ThreadReadResponse;
    const thread = res?.thread;
    if (!thread || thread.cwd !== this.directory)
      throw new AttachError(
        `chat ${threadId} does not belong to this connection's directory ${this.directory}; list_chats shows the chats it may use`,
      );
    return thread;
  }

  private async request(method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    this.assertOpen();
    return this.client.request(method, params, CODEX_REQUEST_TIMEOUT_MS, signal);
  }

  private assertOpen(): void {
    if (this.closedReason) throw new AttachError(this.closedReason);
  }
}

const UNCORRELATED = Symbol('uncorrelated');

/** Resolves UNCORRELATED `graceMs` after `signal` aborts (never, if it does not). */
function afterAbort(signal: AbortSignal, graceMs: number): Promise<typeof UNCORRELATED> {
  return new Promise((resolve) => {
    const arm = () => setTimeout(() => resolve(UNCORRELATED), graceMs).unref();
    if (signal.aborted) arm();
    else signal.addEventListener('abort', arm, { once: true });
  });
}

function seconds(s: number | null | undefined): string | undefined {
  return typeof s === 'number' && Number.isFinite(s) ? new Date(s * 1000).toISOString() : undefined;
}

function chatMessage(item: ThreadItem, turn: Turn): ChatMessage | undefined {
  if (item.type === 'userMessage') {
    const text = item.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
    return { id: item.id, role: 'user', createdAt: seconds(turn.startedAt), text };
  }
  if (item.type === 'agentMessage')
    return { id: item.id, role: 'assistant', createdAt: seconds(turn.completedAt), text: item.text };
  return undefined;
}

/** The reply of a finished turn: its final answer (the last agent message), or the turn's error. */
function turnReply(chatId: string, turn: Turn, items: ThreadItem[]): SendReply {
  const messages = [...items, ...(turn.items ?? [])].filter(
    (i): i is Extract<ThreadItem, { type: 'agentMessage' }> => i?.type === 'agentMessage',
  );
  const final = messages.filter((m) => m.phase !== 'commentary').at(-1) ?? messages.at(-1);
  if (turn.status === 'failed')
    throw new AttachError(`the Codex turn failed${turn.error?.message ? `: ${turn.error.message}` : ''}`);
  if (turn.status === 'interrupted') throw new AttachError('the Codex turn was interrupted by another client');
  return { chatId, replyId: turn.id, reply: final?.text ?? '' };
}
