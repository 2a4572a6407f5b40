// One Codex app-server process driving one thread (rule: codex-app-server): thread/start or thread/resume, turn/start
// per round with the thread's notifications mapped to events (events.ts), server requests declined from the shared
// table (rule: deny-and-report), cancel = turn/interrupt → grace → group stop (rule: cancel-then-stop), and a lost
// process ending the turn rather than hanging it.
import { CodexAppServerClient, type CodexServerRequest } from '../../codex/app-server-client.ts';
import { codexDecline } from '../../codex/declines.ts';
import { JsonRpcRequestError } from '../../codex/json-rpc-peer.ts';
import { type ThreadCommands, threadCommandsOf } from '../../codex/thread-commands.ts';
import type { Turn } from '../../generated/codex/v2/Turn.ts';
import type { ChildGroup } from '../../lib/process-group.ts';
import { redact } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import type { AgentContext, AgentEvent, AgentSession, OpenSessionOptions, ToolFamily, TurnOptions } from '../agent.ts';
import { EventQueue } from '../event-queue.ts';
import { checkTestedVersion } from '../tested-versions.ts';
import type { CodexAgentConfig } from './config.ts';
import { type ActiveTurn, applyTurnNotification, finalText } from './events.ts';
import type { PreparedHome } from './home.ts';

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

interface Askable {
  family: ToolFamily;
  what: string;
}

/** The v2 approval requests that `ask` puts to someone; their decisions are accept, acceptForSession and decline. */
const ASKABLE: Readonly<Record<string, Askable>> = {
  'item/commandExecution/requestApproval': { family: 'command', what: 'command execution' },
  'item/fileChange/requestApproval': { family: 'patch', what: 'file change' },
};

/** Grace after turn/interrupt before the process group is stopped (rule: cancel-then-stop). */
const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** Bound on thread/start, thread/resume and turn/start answers (they are quick; a stuck server must not hang a task). */
const THREAD_REQUEST_TIMEOUT_MS = 60_000;
/** How long close() lets Codex exit on stdin EOF before stopping its group. */
export const EXIT_ON_EOF_GRACE_MS = 2_000;

export const CODEX_CLIENT_INFO = { name: 'baton', title: 'baton', version: BATON_VERSION };

export class CodexSession implements AgentSession {
  id: string | undefined;
  private readonly group: ChildGroup;
  private readonly client: CodexAppServerClient;
  private readonly config: CodexAgentConfig;
  private readonly ctx: AgentContext;
  private readonly writeBackAuth: () => boolean;
  /** The shell commands Codex runs for the thread, found by their environment (they leave Codex's process group). */
  private readonly commands: ThreadCommands;
  private readonly extras: CodexAgentExtras;
  private active: ActiveTurn | undefined;
  private lost: Error | undefined;
  /** Where approval requests go when the approval policy is `ask` (rule: approvals); declined otherwise. */
  private ask: OpenSessionOptions['ask'];
  private closing: Promise<void> | undefined;
  private readonly lostWaiters = new Set<(err: Error) => void>();

  constructor(
    group: ChildGroup,
    config: CodexAgentConfig,
    ctx: AgentContext,
    home: PreparedHome,
    initializeTimeoutMs: number,
    extras: CodexAgentExtras = {},
  ) {
    this.extras = extras;
    this.group = group;
    this.config = config;
    this.ctx = ctx;
    this.writeBackAuth = home.writeBackAuth;
    this.commands = threadCommandsOf(home.dir, group.pgid, ctx.logger);
    this.client = new CodexAppServerClient({
      transport: { type: 'stdio', readable: group.child.stdout!, writable: group.child.stdin! },
      clientInfo: CODEX_CLIENT_INFO,
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
    // The version the app-server names (rule: free-probes): refused outside what baton supports, warned when newer.
    const verdict = checkTestedVersion('codex', this.client.serverVersion);
    if (verdict.outcome === 'refused') throw new Error(verdict.message);
    if (verdict.outcome === 'untested') this.ctx.logger.warn(`codex: ${verdict.message}`);
    this.ask = opts.ask;
    const common = {
      cwd: opts.cwd,
      sandbox: opts.sandbox,
      // With `ask`, Codex may ask to go beyond its sandbox, and someone decides; otherwise it never asks.
      approvalPolicy: opts.ask ? 'on-request' : (this.extras.approvalPolicy ?? 'never'),
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
      previewItems: new Set(),
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
    // Commands an earlier turn left running are not this turn's: a cancel spares them.
    const earlier = this.id ? this.commands.threadCommands(this.id) : new Set<number>();
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
          outcome.err instanceof JsonRpcRequestError && outcome.err.dispatched && outcome.err.code === undefined;
        if (uncertain) await this.group.stop(EXIT_ON_EOF_GRACE_MS);
        return endFailed(redact(outcome.err.message));
      }
      case 'lost':
        return endFailed(outcome.err.message);
      case 'aborted':
        return this.cancel(active, started, lost, earlier);
    }
  }

  /**
   * Rule `cancel-then-stop`: turn/interrupt, wait the grace for Codex to confirm, else stop the whole process group.
   * Either way the commands the turn started and left running stop too: Codex keeps a command it moved to the
   * background running after the interrupt, in a session of its own that the group stop does not reach.
   */
  private async cancel(
    active: ActiveTurn,
    started: Promise<unknown>,
    lost: Promise<Error>,
    earlier: ReadonlySet<number>,
  ): Promise<AgentEvent> {
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
    await this.commands.stopCommands(this.id, earlier);
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
    const text = finalText(active, turn);
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

  /** Puts an approval request of the running turn to someone and answers Codex with the decision (rule: approvals). */
  private async askFor(request: CodexServerRequest, askable: Askable, turn: ActiveTurn): Promise<void> {
    const decision = await this.ask!({
      family: askable.family,
      what: askable.what,
      options: ['allow', 'allow_always', 'deny'],
    });
    const answer = decision === 'allow' ? 'accept' : decision === 'allow_always' ? 'acceptForSession' : 'decline';
    // Codex may have withdrawn the request meanwhile (the turn ended); then there is nothing to answer.
    if (!request.signal.aborted) this.client.respond(request.id, { decision: answer });
    if (this.active === turn)
      turn.queue.push({
        kind: 'permission',
        decision: answer === 'decline' ? 'denied' : 'allowed',
        what: askable.what,
      });
  }

  private markLost(err: Error): void {
    if (this.lost) return;
    this.lost = err;
    for (const w of this.lostWaiters) w(err);
    this.lostWaiters.clear();
  }

  private onNotification(method: string, params: unknown): void {
    const p = (params ?? {}) as Record<string, unknown>;
    if (p.threadId !== undefined && p.threadId === this.id) this.extras.onThreadNotification?.(method, p);
    if (this.active && p.threadId === this.id) applyTurnNotification(this.active, method, p);
  }

  private onServerRequest(request: CodexServerRequest): void {
    const askable = ASKABLE[request.method];
    if (this.ask && askable && this.active) {
      void this.askFor(request, askable, this.active);
      return;
    }
    const decline = codexDecline(request.method);
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
