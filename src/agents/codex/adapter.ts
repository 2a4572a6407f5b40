// The Codex agent (AG-1): `codex app-server` over stdio in an isolated CODEX_HOME, driven through CodexAppServerClient.
// One process per session: thread/start (or thread/resume of a saved thread id), turn/start per round, notifications
// mapped to the normalised events, approvals declined and reported, cancel = turn/interrupt → grace → group stop.

import {
  CodexAppServerClient,
  CodexAppServerRequestError,
  type CodexServerRequest,
} from '../../codex/app-server-client.ts';
import { parseCodexVersion } from '../../codex/version.ts';
import type { ThreadItem } from '../../generated/codex/v2/ThreadItem.ts';
import type { ThreadTokenUsageUpdatedNotification } from '../../generated/codex/v2/ThreadTokenUsageUpdatedNotification.ts';
import type { Turn } from '../../generated/codex/v2/Turn.ts';
import type { TurnPlanUpdatedNotification } from '../../generated/codex/v2/TurnPlanUpdatedNotification.ts';
import { type ChildGroup, spawnGroup } from '../../lib/process-group.ts';
import { redact } from '../../lib/redact.ts';
import { statusLine, stripTerminalControls } from '../../lib/text.ts';
import type {
  Agent,
  AgentContext,
  AgentEvent,
  AgentProbe,
  AgentSession,
  OpenSessionOptions,
  ToolFamily,
  TurnOptions,
} from '../agent.ts';
import { EventQueue } from '../event-queue.ts';
import type { CodexAgentConfig } from './config.ts';
import { type PreparedHome, prepareCodexHome, tomlValue } from './home.ts';

/**
 * Options for callers that embed the Codex agent (the Codex provider face): where the home lives and what its config
 * says, per-session thread options, and a tap on the raw notifications of the session's thread.
 */
export interface CodexAgentExtras {
  /** Prepares the isolated home instead of `<stateDir>/homes/codex-<name>`. */
  prepareHome?: (opts: { cwd?: string }) => PreparedHome;
  /** Developer instructions of a new thread (thread/start only; a resumed thread keeps its own). */
  developerInstructions?: string;
  /** Approval policy of the thread (default "never"); approval requests are declined either way. */
  approvalPolicy?: string;
  /** Config overrides of the thread (thread/start and thread/resume `config`). */
  threadConfig?: Record<string, string | number | boolean>;
  /** Every notification about the session's thread, before it is mapped (correlated activity). */
  onThreadNotification?: (method: string, params: Record<string, unknown>) => void;
}

/** Grace after turn/interrupt before the process group is stopped (TE-8). */
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** A cold app-server can take a while to answer initialize. */
export const DEFAULT_INITIALIZE_TIMEOUT_MS = 30_000;
/** Bound on thread/start, thread/resume and turn/start answers (they are quick; a stuck server must not hang a task). */
const THREAD_REQUEST_TIMEOUT_MS = 60_000;
/** How long close() lets Codex exit on stdin EOF before stopping its group. */
const EXIT_ON_EOF_GRACE_MS = 2_000;
/** Probe deadlines (`--version`, `login status`). */
const PROBE_COMMAND_TIMEOUT_MS = 20_000;

const CLIENT_INFO = { name: 'baton', title: 'baton', version: '0.1.0' };

// Environment a Codex child may see: what it needs to run and reach its provider, nothing else of baton's.
const PASSED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'SHELL',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
];

export function childEnv(config: CodexAgentConfig, codexHome: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of PASSED_ENV) if (process.env[key] !== undefined) env[key] = process.env[key];
  const envKey = config.modelProvider?.envKey;
  if (envKey && process.env[envKey] !== undefined) env[envKey] = process.env[envKey];
  env.CODEX_HOME = codexHome;
  return env;
}

function commandOf(config: CodexAgentConfig): { file: string; args: string[] } {
  const [file, ...args] = config.command ?? ['codex'];
  return { file: file!, args };
}

function overrideArgs(config: CodexAgentConfig): string[] {
  const args: string[] = [];
  for (const [key, value] of Object.entries(config.configOverrides ?? {}))
    args.push('-c', `${key}=${tomlValue(value)}`);
  return args;
}

/** Runs a short Codex command and collects its output; the group is stopped on timeout. */
async function runCodexCommand(
  config: CodexAgentConfig,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; error?: string }> {
  const { file, args: prefix } = commandOf(config);
  const group = spawnGroup(file, [...prefix, ...args], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  let spawnError: string | undefined;
  group.child.on('error', (err) => {
    spawnError = err.message;
  });
  group.child.stdout?.setEncoding('utf8');
  group.child.stdout?.on('data', (d: string) => {
    if (stdout.length < 64 * 1024) stdout += d;
  });
  const timer = setTimeout(() => void group.stop(1_000), PROBE_COMMAND_TIMEOUT_MS);
  const exit = await group.exited;
  clearTimeout(timer);
  return { code: exit.code, stdout, error: spawnError };
}

const TOOL_FAMILIES: Partial<Record<ThreadItem['type'], { family: ToolFamily; status: string }>> = {
  commandExecution: { family: 'command', status: 'Running a command' },
  fileChange: { family: 'patch', status: 'Editing files' },
  mcpToolCall: { family: 'mcp', status: 'Calling an MCP tool' },
  dynamicToolCall: { family: 'other', status: 'Calling a tool' },
  webSearch: { family: 'web', status: 'Searching the web' },
  collabAgentToolCall: { family: 'subagent', status: 'Working with a sub-agent' },
  subAgentActivity: { family: 'subagent', status: 'Working with a sub-agent' },
  imageGeneration: { family: 'other', status: 'Generating an image' },
};

const COMPLETED_OK = new Set(['completed']);

function toolSucceeded(item: ThreadItem): boolean | undefined {
  const status = (item as { status?: unknown }).status;
  if (typeof status !== 'string') return undefined;
  if (item.type === 'commandExecution')
    return status === 'completed' && (item.exitCode === null || item.exitCode === 0);
  return COMPLETED_OK.has(status);
}

/** What an approval request is about, without its arguments, and the answer that declines it. */
const DECLINES: Record<string, { what: string; answer: unknown }> = {
  'item/commandExecution/requestApproval': { what: 'command execution', answer: { decision: 'decline' } },
  'item/fileChange/requestApproval': { what: 'file change', answer: { decision: 'decline' } },
  'item/permissions/requestApproval': { what: 'extra permissions', answer: { permissions: {}, scope: 'turn' } },
  'mcpServer/elicitation/request': {
    what: 'MCP elicitation',
    answer: { action: 'decline', content: null, _meta: null },
  },
  'item/tool/requestUserInput': { what: 'user input', answer: { answers: {} } },
  execCommandApproval: { what: 'command execution', answer: { decision: 'denied' } },
  applyPatchApproval: { what: 'file change', answer: { decision: 'denied' } },
};

interface ActiveTurn {
  queue: EventQueue<AgentEvent>;
  turnId: string | undefined;
  /** Resolves with the turn record when Codex reports turn/completed. */
  completed: PromiseWithResolvers<Turn>;
  inputTokens: number;
  outputTokens: number;
  sawUsage: boolean;
  finalMessages: string[];
}

class CodexSession implements AgentSession {
  id: string | undefined;
  private readonly group: ChildGroup;
  private readonly client: CodexAppServerClient;
  private readonly config: CodexAgentConfig;
  private readonly ctx: AgentContext;
  private readonly writeBackAuth: () => boolean;
  private readonly extras: CodexAgentExtras;
  private active: ActiveTurn | undefined;
  private lost: Error | undefined;
  private closing: Promise<void> | undefined;
  private readonly lostWaiters = new Set<(err: Error) => void>();

  constructor(
    group: ChildGroup,
    config: CodexAgentConfig,
    ctx: AgentContext,
    writeBackAuth: () => boolean,
    initializeTimeoutMs: number,
    extras: CodexAgentExtras = {},
  ) {
    this.extras = extras;
    this.group = group;
    this.config = config;
    this.ctx = ctx;
    this.writeBackAuth = writeBackAuth;
    this.client = new CodexAppServerClient({
      transport: { type: 'stdio', readable: group.child.stdout!, writable: group.child.stdin! },
      clientInfo: CLIENT_INFO,
      initializeTimeoutMs,
      onNotification: (n) => this.onNotification(n.method, n.params),
      onServerRequest: (r) => this.onServerRequest(r),
      onClose: (error) => {
        if (error) this.markLost(new Error(`the Codex app-server connection ended: ${error.message}`));
      },
    });
    group.exited.then((exit) =>
      this.markLost(new Error(`Codex exited (code ${exit.code ?? 'none'}, signal ${exit.signal ?? 'none'})`)),
    );
  }

  async start(opts: OpenSessionOptions): Promise<void> {
    await this.client.connect();
    const common = {
      cwd: opts.cwd,
      sandbox: opts.sandbox,
      approvalPolicy: this.extras.approvalPolicy ?? 'never',
      ...(opts.model ? { model: opts.model } : {}),
      ...(this.extras.threadConfig ? { config: this.extras.threadConfig } : {}),
    };
    const instructions = this.extras.developerInstructions;
    const result = (await this.client.request(
      opts.resume ? 'thread/resume' : 'thread/start',
      opts.resume
        ? { threadId: opts.resume, ...common }
        : { ...common, ...(instructions ? { developerInstructions: instructions } : {}) },
      THREAD_REQUEST_TIMEOUT_MS,
    )) as { thread?: { id?: unknown } };
    const id = result?.thread?.id;
    if (typeof id !== 'string' || !id) throw new Error('Codex did not return a thread id');
    this.id = id;
  }

  turn(prompt: string, opts: TurnOptions & { effort?: string }): AsyncIterable<AgentEvent> {
    const queue = new EventQueue<AgentEvent>();
    if (this.active) {
      queue.push({ kind: 'end', outcome: 'failed', error: 'a turn is already running in this Codex session' });
      queue.end();
      return queue;
    }
    const active: ActiveTurn = {
      queue,
      turnId: undefined,
      completed: Promise.withResolvers<Turn>(),
      inputTokens: 0,
      outputTokens: 0,
      sawUsage: false,
      finalMessages: [],
    };
    this.active = active;
    void this.runTurn(active, prompt, opts).then(
      (end) => this.finishTurn(active, end),
      (err) => this.finishTurn(active, { kind: 'end', outcome: 'failed', error: redact(String(err?.message ?? err)) }),
    );
    return queue;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.client.close();
      // Codex exits on stdin EOF; the group stop then only reaps stragglers (or ends a Codex that did not exit).
      await Promise.race([this.group.exited, new Promise<void>((r) => setTimeout(r, EXIT_ON_EOF_GRACE_MS).unref())]);
      await this.group.stop(EXIT_ON_EOF_GRACE_MS);
      try {
        if (this.writeBackAuth()) this.ctx.logger.info('codex: rotated login written back to the user auth.json');
      } catch (err) {
        this.ctx.logger.warn('codex: could not write the rotated login back', { error: redact(String(err)) });
      }
    })();
    return this.closing;
  }

  private async runTurn(active: ActiveTurn, prompt: string, opts: TurnOptions & { effort?: string }) {
    if (this.lost) return endFailed(this.lost.message);
    if (opts.signal.aborted) return { kind: 'end', outcome: 'cancelled', acknowledged: true } as const;
    let onLost: ((err: Error) => void) | undefined;
    const lost = new Promise<Error>((resolve) => {
      onLost = resolve;
      this.lostWaiters.add(resolve);
    });
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => resolve();
      opts.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await this.driveTurn(active, prompt, opts, lost, aborted);
    } finally {
      this.lostWaiters.delete(onLost!);
      opts.signal.removeEventListener('abort', onAbort!);
    }
  }

  private async driveTurn(
    active: ActiveTurn,
    prompt: string,
    opts: TurnOptions & { effort?: string },
    lost: Promise<Error>,
    aborted: Promise<void>,
  ): Promise<AgentEvent> {
    active.queue.push({ kind: 'status', text: 'Starting the turn' });
    const started = this.client
      .request(
        'turn/start',
        {
          threadId: this.id,
          input: [{ type: 'text', text: prompt, text_elements: [] }],
          ...(opts.effort ? { effort: opts.effort } : {}),
        },
        THREAD_REQUEST_TIMEOUT_MS,
      )
      .then((r) => {
        const turnId = (r as { turn?: { id?: unknown } })?.turn?.id;
        if (typeof turnId === 'string') active.turnId ??= turnId;
        return r;
      });
    const outcome = await Promise.race([
      active.completed.promise.then((turn) => ({ type: 'completed' as const, turn })),
      started.then(
        () => new Promise<never>(() => {}),
        (err: Error) => ({ type: 'start_failed' as const, err }),
      ),
      lost.then((err) => ({ type: 'lost' as const, err })),
      aborted.then(() => ({ type: 'aborted' as const })),
    ]);
    switch (outcome.type) {
      case 'completed':
        return this.endFromTurn(active, outcome.turn);
      case 'start_failed': {
        // An uncertain turn/start (sent, no answer) may still run: never let a later turn overlap it.
        const uncertain =
          outcome.err instanceof CodexAppServerRequestError && outcome.err.dispatched && outcome.err.code === undefined;
        if (uncertain) await this.group.stop(EXIT_ON_EOF_GRACE_MS);
        return endFailed(redact(outcome.err.message));
      }
      case 'lost':
        return endFailed(outcome.err.message);
      case 'aborted':
        return this.cancel(active, started, lost);
    }
  }

  /** TE-8: turn/interrupt, wait the grace for Codex to confirm, else stop the whole process group. */
  private async cancel(active: ActiveTurn, started: Promise<unknown>, lost: Promise<Error>): Promise<AgentEvent> {
    const grace = this.config.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
    active.queue.push({ kind: 'status', text: 'Cancelling' });
    const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), grace).unref());
    const confirmed = (async () => {
      await started.catch(() => {});
      if (!active.turnId) return false;
      await this.client.request('turn/interrupt', { threadId: this.id, turnId: active.turnId }, grace);
      const turn = await active.completed.promise;
      return turn.status !== 'inProgress';
    })().catch(() => false);
    const result = await Promise.race([confirmed, deadline, lost.then(() => false)]);
    if (result === true) {
      const turn = await active.completed.promise;
      if (turn.status === 'completed') return this.endFromTurn(active, turn);
      this.emitUsage(active);
      return { kind: 'end', outcome: 'cancelled', acknowledged: true };
    }
    this.ctx.logger.warn('codex: turn/interrupt not acknowledged within the grace; stopping the process group', {
      threadId: this.id,
      turnId: active.turnId,
    });
    await this.group.stop(grace);
    return { kind: 'end', outcome: 'cancelled', acknowledged: false };
  }

  private endFromTurn(active: ActiveTurn, turn: Turn): AgentEvent {
    this.emitUsage(active);
    const finals = (turn.items ?? [])
      .filter((i): i is Extract<ThreadItem, { type: 'agentMessage' }> => i.type === 'agentMessage')
      .filter((i) => i.phase !== 'commentary')
      .map((i) => i.text);
    const texts = finals.length ? finals : active.finalMessages;
    const text = texts.filter(Boolean).join('\n\n');
    if (turn.status !== 'interrupted' && text) active.queue.push({ kind: 'message', text });
    switch (turn.status) {
      case 'completed':
        return { kind: 'end', outcome: 'succeeded' };
      case 'interrupted':
        return { kind: 'end', outcome: 'cancelled', acknowledged: true };
      default:
        return endFailed(redact(turn.error?.message ?? `the turn ended with status ${turn.status}`));
    }
  }

  private emitUsage(active: ActiveTurn): void {
    if (!active.sawUsage) return;
    active.sawUsage = false;
    active.queue.push({ kind: 'usage', inputTokens: active.inputTokens, outputTokens: active.outputTokens });
  }

  private finishTurn(active: ActiveTurn, end: AgentEvent): void {
    active.queue.push(end);
    active.queue.end();
    if (this.active === active) this.active = undefined;
  }

  private markLost(err: Error): void {
    if (this.lost) return;
    this.lost = err;
    for (const w of this.lostWaiters) w(err);
    this.lostWaiters.clear();
  }

  private onNotification(method: string, params: unknown): void {
    const active = this.active;
    const p = (params ?? {}) as Record<string, unknown>;
    if (p.threadId !== undefined && p.threadId === this.id) this.extras.onThreadNotification?.(method, p);
    if (!active || p.threadId !== this.id) return;
    const push = (e: AgentEvent) => active.queue.push(e);
    switch (method) {
      case 'turn/started': {
        const turnId = (p.turn as { id?: unknown } | undefined)?.id;
        if (typeof turnId === 'string') active.turnId ??= turnId;
        push({ kind: 'status', text: 'Working' });
        return;
      }
      case 'turn/completed': {
        const turn = p.turn as Turn;
        if (active.turnId && turn.id !== active.turnId) return;
        active.completed.resolve(turn);
        return;
      }
      case 'item/started': {
        const item = p.item as ThreadItem;
        const tool = TOOL_FAMILIES[item.type];
        if (tool) {
          push({ kind: 'tool', phase: 'start', family: tool.family });
          push({ kind: 'status', text: tool.status });
        } else if (item.type === 'contextCompaction') push({ kind: 'status', text: 'Compacting the context' });
        return;
      }
      case 'item/completed': {
        const item = p.item as ThreadItem;
        const tool = TOOL_FAMILIES[item.type];
        if (tool) {
          const ok = toolSucceeded(item);
          push(
            ok === undefined
              ? { kind: 'tool', phase: 'end', family: tool.family }
              : { kind: 'tool', phase: 'end', family: tool.family, ok },
          );
          return;
        }
        if (item.type === 'agentMessage') {
          const text = stripTerminalControls(item.text);
          if (item.phase === 'commentary') {
            if (text.trim()) {
              push({ kind: 'commentary', text });
              push({ kind: 'status', text: statusLine(text) });
            }
          } else active.finalMessages.push(item.text);
        }
        return;
      }
      case 'turn/plan/updated': {
        const plan = (p as unknown as TurnPlanUpdatedNotification).plan ?? [];
        const step = plan.find((s) => s.status === 'inProgress');
        if (step) push({ kind: 'status', text: statusLine(`Plan: ${step.step}`) });
        return;
      }
      case 'thread/tokenUsage/updated': {
        const last = (p as unknown as ThreadTokenUsageUpdatedNotification).tokenUsage?.last;
        if (last) {
          active.inputTokens += last.inputTokens;
          active.outputTokens += last.outputTokens;
          active.sawUsage = true;
        }
        return;
      }
      case 'error': {
        const error = p.error as { message?: unknown } | undefined;
        const message = typeof error?.message === 'string' ? error.message : 'Codex reported an error';
        push({ kind: 'error', message: redact(stripTerminalControls(message)) });
        if (p.willRetry === true) push({ kind: 'status', text: 'Retrying after a model error' });
        return;
      }
    }
  }

  private onServerRequest(request: CodexServerRequest): void {
    const decline = DECLINES[request.method];
    if (!decline) {
      this.client.rejectRequest(request.id, -32601, `baton does not support ${request.method}`);
      return;
    }
    this.client.respond(request.id, decline.answer);
    this.active?.queue.push({ kind: 'permission', decision: 'denied', what: decline.what });
  }
}

function endFailed(error: string): AgentEvent {
  return { kind: 'end', outcome: 'failed', error };
}

export function createCodexAgent(
  name: string,
  config: CodexAgentConfig,
  ctx: AgentContext,
  extras: CodexAgentExtras = {},
): Agent {
  const initializeTimeoutMs = config.initializeTimeoutMs ?? DEFAULT_INITIALIZE_TIMEOUT_MS;
  const spawnAppServer = (codexHome: string, cwd: string) => {
    const { file, args } = commandOf(config);
    return spawnGroup(file, [...args, ...overrideArgs(config), 'app-server'], {
      cwd,
      env: childEnv(config, codexHome),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
  };
  return {
    name,
    kind: 'codex',
    async probe(): Promise<AgentProbe> {
      const binary = commandOf(config).file;
      const base = { name, kind: 'codex', binary };
      const home = prepareCodexHome(ctx.stateDir, name, config);
      const env = childEnv(config, home.dir);
      const version = await runCodexCommand(config, ['--version'], env);
      if (version.error || version.code !== 0) {
        return {
          ...base,
          available: false,
          detail: `could not run ${binary} --version: ${version.error ?? `exit code ${version.code}`}`,
        };
      }
      const versionText = version.stdout.trim().replace(/^codex-cli\s+/, '');
      const parsed = parseCodexVersion(versionText);
      const login = await runCodexCommand(config, ['login', 'status'], env);
      const loginState = login.code === 0 ? 'ok' : login.code === 1 ? 'missing' : 'unknown';
      const details: string[] = [];
      if (!parsed) details.push(`unreadable version output`);
      if (loginState === 'missing') {
        details.push(
          config.modelProvider && config.modelProvider.requiresOpenaiAuth === false
            ? 'no Codex login (not needed by the configured model provider)'
            : 'not logged in: run `codex login`',
        );
      }
      // An app-server initialize, no thread and no inference.
      const group = spawnAppServer(home.dir, ctx.stateDir);
      const client = new CodexAppServerClient({
        transport: { type: 'stdio', readable: group.child.stdout!, writable: group.child.stdin! },
        clientInfo: CLIENT_INFO,
        initializeTimeoutMs,
      });
      let available = true;
      try {
        await client.connect();
      } catch (err) {
        available = false;
        details.push(`app-server did not initialize: ${redact((err as Error).message)}`);
      } finally {
        client.close();
        await group.stop(EXIT_ON_EOF_GRACE_MS);
      }
      return {
        ...base,
        available,
        version: parsed?.text ?? (versionText.slice(0, 64) || undefined),
        login: loginState,
        ...(details.length ? { detail: details.join('; ') } : {}),
      };
    },
    async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
      const home = extras.prepareHome
        ? extras.prepareHome({ cwd: opts.cwd })
        : prepareCodexHome(ctx.stateDir, name, config, { cwd: opts.cwd });
      const group = spawnAppServer(home.dir, opts.cwd);
      if (group.pgid > 0) opts.onProcessGroup?.(group.pgid);
      const spawnFailed = new Promise<never>((_, reject) =>
        group.child.once('error', (err) => reject(new Error(`could not start Codex: ${err.message}`))),
      );
      spawnFailed.catch(() => {});
      const session = new CodexSession(group, config, ctx, home.writeBackAuth, initializeTimeoutMs, extras);
      const onAbort = () => void session.close();
      opts.signal.addEventListener('abort', onAbort, { once: true });
      try {
        await Promise.race([session.start(opts), spawnFailed]);
      } catch (err) {
        await session.close();
        throw new Error(`Codex session could not start: ${redact((err as Error).message)}`);
      } finally {
        opts.signal.removeEventListener('abort', onAbort);
      }
      const effort = opts.effort;
      return {
        get id() {
          return session.id;
        },
        turn: (prompt, turnOpts) => session.turn(prompt, { ...turnOpts, effort }),
        close: () => session.close(),
      };
    },
  };
}
