// The OpenCode agent kind (rule: opencode-server): baton drives OpenCode through its HTTP server API. Either baton
// starts a private `opencode serve` (127.0.0.1, a port the OS picks, a random password, an isolated home: rule
// `isolated-homes`) or it uses a server the user runs (`serverUrl`). A round is one message in one session; cancel is
// the session abort; events come from the server's event stream.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { spawnFailure } from '../../lib/agent-path.ts';
import { type AuthMirror, mirrorAuthFile } from '../../lib/auth-mirror.ts';
import { captureCommand } from '../../lib/capture.ts';
import { childEnv } from '../../lib/child-env.ts';
import type { Logger } from '../../lib/log.ts';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';
import { redactError } from '../../lib/redact.ts';
import { statusLine } from '../../lib/text.ts';
import { findVersion } from '../../lib/version.ts';
import type {
  Agent,
  AgentContext,
  AgentEvent,
  AgentProbe,
  AgentSession,
  OpenSessionOptions,
  TurnOptions,
} from '../agent.ts';
import { checkTestedVersion } from '../tested-versions.ts';
import { OpenCodeClient, type OpenCodeEvent, type Part } from './client.ts';
import { MODEL_PATTERN, type OpenCodeAgentConfig } from './config.ts';
import { answerPermission, toolFamily } from './permissions.ts';
import { startOpenCodeServer } from './serve.ts';

/** Wait for the turn to go idle after an abort before the cancel counts as unacknowledged (rule: cancel-then-stop). */
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
const VERSION_PROBE_TIMEOUT_MS = 15_000;

// Rule `no-recursion`: no project opencode.json (it could add MCP servers or plugins), no Claude Code compatibility, no
// downloads.
const QUIET_ENV = {
  OPENCODE_DISABLE_PROJECT_CONFIG: '1',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
  OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
};

/** The environment of a server baton starts: the shared child allowlist, the private dirs, the quiet switches, config env. */
export function openCodeServerEnv(
  dirs: Record<string, string>,
  configEnv: Record<string, string> | undefined,
): Record<string, string> {
  return childEnv('opencode', { set: { ...dirs, ...QUIET_ENV, ...configEnv } });
}

export class OpenCodeAgent implements Agent {
  readonly kind = 'opencode';
  readonly name: string;
  private readonly config: OpenCodeAgentConfig;
  private readonly ctx: AgentContext;

  constructor(name: string, config: OpenCodeAgentConfig, ctx: AgentContext) {
    this.name = name;
    this.config = config;
    this.ctx = ctx;
  }

  /**
   * Rule `free-probes`: binary and version (and server health when a URL is configured); never spends inference. A
   * server the user runs reports its own version, so the binary is only asked (`--version`, a full OpenCode start)
   * when the server does not answer or names no version.
   */
  async probe(): Promise<AgentProbe> {
    const base: AgentProbe = { name: this.name, kind: this.kind, available: false, login: 'unknown' };
    const binary = this.config.binary ?? 'opencode';
    const localVersion = () => binaryVersion(binary).catch(() => undefined);
    if (this.config.serverUrl) {
      try {
        const h = await this.remoteClient().health({ timeoutMs: 10_000 });
        return { ...base, available: h.healthy === true, binary, version: h.version ?? (await localVersion()) };
      } catch (err) {
        const version = await localVersion();
        return { ...base, binary, version, detail: `server ${this.config.serverUrl}: ${redactError(err)}` };
      }
    }
    try {
      return { ...base, available: true, binary, version: await binaryVersion(binary) };
    } catch (err) {
      return { ...base, binary, detail: redactError(err) };
    }
  }

  async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
    const model = opts.model ?? this.config.model;
    if (model !== undefined && !MODEL_PATTERN.test(model))
      throw new Error(
        `OpenCode models are named "provider/model" (for example anthropic/claude-sonnet-4-5), not "${model}"`,
      );
    let client: OpenCodeClient;
    let stop: () => Promise<void> = async () => {};
    if (this.config.serverUrl) {
      client = this.remoteClient();
    } else {
      const home = this.prepareHome();
      const server = await startOpenCodeServer({
        binary: this.config.binary ?? 'opencode',
        env: home.env,
        cwd: opts.cwd,
        signal: opts.signal,
        onProcessGroup: opts.onProcessGroup,
        target: this.ctx.target,
        keep: [home.dir],
      }).catch((err) => {
        home.auth.writeBack();
        throw err;
      });
      client = server.client;
      const verdict = checkTestedVersion('opencode', server.version);
      if (verdict.outcome === 'refused') {
        await server.stop();
        home.auth.writeBack();
        throw new Error(verdict.message);
      }
      if (verdict.outcome === 'untested') this.ctx.logger.warn(`opencode: ${verdict.message}`);
      stop = async () => {
        await server.stop();
        // Only once opencode has exited can its copy of the login no longer change.
        home.auth.writeBack();
      };
    }
    try {
      const directory = opts.cwd;
      let id: string;
      if (opts.resume) {
        const s = await client.getSession(opts.resume, { directory }, { signal: opts.signal });
        if (s.directory !== directory)
          throw new Error(`OpenCode session ${opts.resume} belongs to another directory; it cannot be resumed here`);
        id = s.id;
      } else {
        id = (await client.createSession({ title: 'baton' }, { directory }, { signal: opts.signal })).id;
      }
      return new OpenCodeSession(client, id, directory, model, {
        cancelGraceMs: this.config.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS,
        logger: this.ctx.logger,
        stop,
        // A read-only task never grants anything, whoever would be asked.
        ask: opts.sandbox === 'read-only' ? undefined : opts.ask,
      });
    } catch (err) {
      await stop();
      throw err;
    }
  }

  private remoteClient(): OpenCodeClient {
    return new OpenCodeClient({
      baseUrl: this.config.serverUrl!,
      username: process.env.OPENCODE_SERVER_USERNAME || 'opencode',
      password: process.env.OPENCODE_SERVER_PASSWORD,
    });
  }

  /**
   * Rule `isolated-homes`: a private home per agent name (dirs 0700, files 0600) with XDG dirs, a copy of the user's
   * OpenCode login (written back on close only under rule `isolated-homes`) and a minimal config that turns off updates
   * and sharing. Sessions persist there, so `resume` works across restarts.
   */
  private prepareHome(): { dir: string; env: NodeJS.ProcessEnv; auth: AuthMirror } {
    const safeName = this.name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
    const home = ensurePrivateDir(join(this.ctx.stateDir, 'homes', 'opencode', safeName));
    const dirs = {
      HOME: ensurePrivateDir(join(home, 'home')),
      XDG_CONFIG_HOME: ensurePrivateDir(join(home, 'config')),
      XDG_DATA_HOME: ensurePrivateDir(join(home, 'data')),
      XDG_CACHE_HOME: ensurePrivateDir(join(home, 'cache')),
      XDG_STATE_HOME: ensurePrivateDir(join(home, 'state')),
    };
    const userAuth = join(process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'opencode', 'auth.json');
    const auth = mirrorAuthFile(userAuth, join(ensurePrivateDir(join(dirs.XDG_DATA_HOME, 'opencode')), 'auth.json'));
    const config: Record<string, unknown> = {
      $schema: 'https://opencode.ai/config.json',
      autoupdate: false,
      share: 'disabled',
    };
    if (this.config.model) config.model = this.config.model;
    writePrivateFile(
      join(ensurePrivateDir(join(dirs.XDG_CONFIG_HOME, 'opencode')), 'opencode.json'),
      JSON.stringify(config),
    );
    return { dir: home, env: openCodeServerEnv(dirs, this.config.env), auth };
  }
}

interface SessionOptions {
  cancelGraceMs: number;
  logger: Logger;
  stop: () => Promise<void>;
  /** Where permission requests go with the `ask` policy (rule: approvals); rejected without it. */
  ask: OpenSessionOptions['ask'];
}

class OpenCodeSession implements AgentSession {
  readonly id: string;
  private readonly client: OpenCodeClient;
  private readonly directory: string;
  private readonly model: { providerID: string; modelID: string } | undefined;
  private readonly opts: SessionOptions;
  private closed = false;

  constructor(client: OpenCodeClient, id: string, directory: string, model: string | undefined, opts: SessionOptions) {
    this.client = client;
    this.id = id;
    this.directory = directory;
    this.opts = opts;
    if (model) {
      const slash = model.indexOf('/');
      this.model = { providerID: model.slice(0, slash), modelID: model.slice(slash + 1) };
    }
  }

  async *turn(prompt: string, opts: TurnOptions): AsyncIterable<AgentEvent> {
    yield { kind: 'session', id: this.id };
    const stream = new AbortController();
    const { opened, events } = this.client.events({ directory: this.directory }, stream.signal);
    const iterator = events[Symbol.asyncIterator]();
    const first = iterator.next();
    const st: TurnState = { outcome: 'succeeded', busySeen: false, tools: new Map(), preview: new AnswerPreview() };
    try {
      await opened;
      await this.client.promptAsync(
        this.id,
        { parts: [{ type: 'text', text: prompt }], ...(this.model ? { model: this.model } : {}) },
        { directory: this.directory },
        { signal: opts.signal },
      );
      yield { kind: 'status', text: 'OpenCode: working' };
      let abortedAt: number | undefined;
      let pending = first;
      const abortTurn = async () => {
        abortedAt = Date.now();
        await this.client.abort(this.id, { directory: this.directory }).catch(() => false);
      };
      // The abort wakes the wait below at once, so an OpenCode that never answers it still ends the turn after the grace.
      const aborted = new Promise<'abort'>((resolve) => {
        const onAbort = () => {
          void abortTurn();
          resolve('abort');
        };
        if (opts.signal.aborted) onAbort();
        else opts.signal.addEventListener('abort', onAbort, { once: true });
        stream.signal.addEventListener('abort', () => opts.signal.removeEventListener('abort', onAbort), {
          once: true,
        });
      });
      for (;;) {
        const graceLeft = abortedAt === undefined ? undefined : abortedAt + this.opts.cancelGraceMs - Date.now();
        const next = await raceTimeout(abortedAt === undefined ? Promise.race([pending, aborted]) : pending, graceLeft);
        if (next === 'abort') continue;
        if (next === 'timeout') {
          st.outcome = 'cancelled';
          st.acknowledged = false;
          break;
        }
        if (next.done) {
          if (abortedAt !== undefined) {
            st.outcome = 'cancelled';
            st.acknowledged = false;
          } else {
            st.outcome = 'failed';
            st.error = 'the OpenCode event stream ended before the turn finished';
          }
          break;
        }
        pending = iterator.next();
        const ev = next.value as OpenCodeEvent;
        const props = (ev as { properties?: { sessionID?: string } }).properties;
        if (props?.sessionID !== this.id) continue;
        if ((yield* this.onEvent(ev, st)) === 'idle') break;
      }
      if (abortedAt !== undefined && st.acknowledged === undefined) {
        st.outcome = 'cancelled';
        st.acknowledged = true;
      }
      if (st.outcome !== 'cancelled') {
        const final = await this.finalAnswer();
        if (final.usage) yield final.usage;
        if (final.text) yield { kind: 'message', text: final.text };
        if (final.error && st.outcome === 'succeeded') {
          st.outcome = final.error === 'MessageAbortedError' ? 'cancelled' : 'failed';
          st.error = final.error;
        }
      }
    } catch (err) {
      st.outcome = opts.signal.aborted ? 'cancelled' : 'failed';
      st.error = redactError(err);
    } finally {
      stream.abort();
    }
    const { outcome, error, acknowledged } = st;
    yield {
      kind: 'end',
      outcome,
      ...(error ? { error } : {}),
      ...(acknowledged !== undefined ? { acknowledged } : {}),
    };
  }

  /** One event of this session during a turn: a named handler per type; 'idle' when the turn is over. */
  private async *onEvent(ev: OpenCodeEvent, st: TurnState): AsyncGenerator<AgentEvent, 'idle' | undefined> {
    switch (ev.type) {
      case 'session.status': {
        const status = ev.properties.status.type;
        if (status === 'busy') st.busySeen = true;
        else if (status === 'retry') yield { kind: 'status', text: 'OpenCode: retrying the model' };
        else if (status === 'idle' && st.busySeen) return 'idle';
        return undefined;
      }
      case 'session.idle':
        // An idle before the session went busy is the previous turn's.
        return st.busySeen ? 'idle' : undefined;
      case 'session.error':
        yield* sessionError(ev.properties.error, st);
        return undefined;
      case 'message.updated':
        if (ev.properties.info.role === 'assistant') st.preview.assistant(ev.properties.info.id);
        return undefined;
      case 'message.part.updated': {
        const part = ev.properties.part;
        if (part.type === 'text' && !part.synthetic && !part.ignored) {
          const text = st.preview.text(part.messageID, part.id, part.text, false);
          if (text) yield { kind: 'preview', text };
        }
        yield* partEvents(part, st.tools);
        return undefined;
      }
      case 'message.part.delta': {
        const { messageID, partID, field, delta } = ev.properties;
        const text = field === 'text' ? st.preview.text(messageID, partID, delta, true) : undefined;
        if (text) yield { kind: 'preview', text };
        return undefined;
      }
      case 'permission.asked':
        // With `ask` the turn's events wait here for the decision; OpenCode itself waits for the reply meanwhile.
        yield await answerPermission(this.client, this.directory, ev.properties, this.opts.ask);
        return undefined;
      case 'question.asked':
        await this.client.rejectQuestion(ev.properties.id, { directory: this.directory }).catch(() => false);
        yield { kind: 'permission', decision: 'denied', what: 'question to the user' };
        return undefined;
      default:
        return undefined;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.opts.stop();
  }

  /** The last assistant message of the session: its visible text, usage and error, read back from the server. */
  private async finalAnswer(): Promise<{ text: string; usage?: AgentEvent; error?: string }> {
    const messages = await this.client.listMessages(this.id, { directory: this.directory, limit: 10 });
    const last = [...messages].reverse().find((m) => m.info.role === 'assistant');
    if (last?.info.role !== 'assistant') return { text: '' };
    const text = last.parts
      .filter((p) => p.type === 'text' && !p.synthetic && !p.ignored)
      .map((p) => (p as { text: string }).text)
      .join('');
    const t = last.info.tokens;
    return {
      text,
      usage: { kind: 'usage', inputTokens: t?.input, outputTokens: t?.output, costUsd: last.info.cost },
      error: last.info.error?.name,
    };
  }
}

/** What one turn has learnt so far from OpenCode's events, and how it ends. */
interface TurnState {
  outcome: 'succeeded' | 'failed' | 'cancelled';
  error?: string;
  /** Set when the turn was cancelled: whether OpenCode confirmed the abort within the grace. */
  acknowledged?: boolean;
  /** The session went busy: a later idle ends the turn. */
  busySeen: boolean;
  tools: Map<string, 'started' | 'ended'>;
  preview: AnswerPreview;
}

/** A session error: an abort makes the turn cancelled, anything else fails it and is reported (sanitised). */
function* sessionError(err: { name?: string; data?: unknown } | undefined, st: TurnState): Generator<AgentEvent> {
  const name = err?.name;
  if (name === 'MessageAbortedError') {
    st.outcome = 'cancelled';
    return;
  }
  st.outcome = 'failed';
  const detail = (err?.data as { message?: string } | undefined)?.message;
  st.error = statusLine(`${name ?? 'error'}${detail ? `: ${detail}` : ''}`);
  yield { kind: 'error', message: st.error };
}

/**
 * The answer as OpenCode streams it (rule: live-text): the text parts of the turn's assistant messages, from their
 * deltas or from a part's whole text (whichever carries more), messages separated by a blank line. Only a preview: the
 * result is still the last assistant message, read back at the end.
 */
class AnswerPreview {
  private readonly assistants = new Set<string>();
  /** UTF-16 length of each text part shown so far. */
  private readonly shown = new Map<string, number>();
  private lastMessage: string | undefined;

  assistant(messageId: string): void {
    this.assistants.add(messageId);
  }

  /** What of a text part is new, given a delta or the part's whole text; undefined when nothing is. */
  text(messageId: string, partId: string, text: string, isDelta: boolean): string | undefined {
    if (!this.assistants.has(messageId) || !text) return undefined;
    const before = this.shown.get(partId) ?? 0;
    const fresh = isDelta ? text : text.slice(before);
    if (!fresh) return undefined;
    this.shown.set(partId, before + fresh.length);
    const separator = this.lastMessage !== undefined && this.lastMessage !== messageId ? '\n\n' : '';
    this.lastMessage = messageId;
    return separator + fresh;
  }
}

/** Tool lifecycle without arguments, outputs or paths; text and reasoning parts are not events here. */
function* partEvents(part: Part, tools: Map<string, 'started' | 'ended'>): Generator<AgentEvent> {
  if (part.type !== 'tool') return;
  const family = toolFamily(part.tool);
  const seen = tools.get(part.callID);
  const status = part.state.status;
  if ((status === 'pending' || status === 'running') && !seen) {
    tools.set(part.callID, 'started');
    yield { kind: 'tool', phase: 'start', family };
  } else if ((status === 'completed' || status === 'error') && seen !== 'ended') {
    if (!seen) yield { kind: 'tool', phase: 'start', family };
    tools.set(part.callID, 'ended');
    yield { kind: 'tool', phase: 'end', family, ok: status === 'completed' };
  }
}

async function raceTimeout<T>(p: Promise<T>, ms: number | undefined): Promise<T | 'timeout'> {
  if (ms === undefined) return p;
  if (ms <= 0) return 'timeout';
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

async function binaryVersion(binary: string): Promise<string> {
  const out = await captureCommand([binary, '--version'], {
    env: childEnv('opencode'),
    timeoutMs: VERSION_PROBE_TIMEOUT_MS,
  });
  if (out.error) throw new Error(spawnFailure(binary, out.error, 'OpenCode'));
  const version = findVersion(out.stdout);
  if (out.code !== 0 || !version) throw new Error(`"${binary} --version" did not report a version`);
  return version;
}
