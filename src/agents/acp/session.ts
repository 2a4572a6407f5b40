// One ACP session on one agent process: turns map session/update to AgentEvents, abort maps to session/cancel (rule:
// cancel-then-stop), permission requests are denied unless the config allows them (rule: deny-and-report), close()
// stops the process group (rule: own-process-group).
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import * as acp from '@agentclientprotocol/sdk';
import type { Logger } from '../../lib/log.ts';
import type { AgentEvent, AgentSession, OpenSessionOptions, Sandbox, TurnOptions } from '../agent.ts';
import { EventQueue } from '../event-queue.ts';
import type { ExecutionTarget } from '../targets/target.ts';
import { checkTestedVersion, testedAgentOf } from '../tested-versions.ts';
import { type AcpConfig, DEFAULT_CANCEL_GRACE_MS } from './config.ts';
import {
  choosePermissionOption,
  mapSessionUpdate,
  offeredDecisions,
  optionFor,
  permissionWhat,
  ToolCallTracker,
  toolFamily,
  usageFromPromptResponse,
} from './events.ts';
import { AcpProcess, AgentStartError } from './process.ts';
import { applySessionChoices } from './session-options.ts';

type EndEvent = Extract<AgentEvent, { kind: 'end' }>;

interface ActiveTurn {
  queue: EventQueue<AgentEvent>;
  tools: ToolCallTracker;
  /** The turn's cancel: a permission request still pending when it fires is answered `cancelled`, as ACP asks. */
  signal: AbortSignal;
}

export class ResumeUnsupportedError extends AgentStartError {
  constructor(agentName: string) {
    super(
      `agent "${agentName}" cannot resume a saved session (it does not advertise session/load); start a new task instead`,
    );
    this.name = 'ResumeUnsupportedError';
  }
}

const STOP_REASON_ERRORS: Partial<Record<acp.StopReason, string>> = {
  max_tokens: 'the agent stopped early: it reached its output token limit',
  max_turn_requests: 'the agent stopped early: it reached its limit of model requests for one turn',
  refusal: 'the agent refused to continue with this prompt',
};

export class AcpAgentSession implements AgentSession {
  private readonly agentName: string;
  private readonly config: AcpConfig;
  private readonly logger: Logger;
  private proc!: AcpProcess;
  private sessionId: string | undefined;
  private active: ActiveTurn | undefined;
  private announced = false;
  /** A prompt the agent never confirmed stopping (unacknowledged cancel): no new turn until it settles. */
  private abandoned: Promise<unknown> | undefined;
  private closing: Promise<void> | undefined;
  private readonly sandbox: Sandbox;
  /** Where permission requests go when the approval policy is `ask` (rule: approvals). */
  private readonly ask: OpenSessionOptions['ask'];

  private constructor(agentName: string, config: AcpConfig, logger: Logger, opts: OpenSessionOptions) {
    this.agentName = agentName;
    this.config = config;
    this.logger = logger;
    this.sandbox = opts.sandbox;
    this.ask = opts.ask;
  }

  /** Starts the agent in `opts.cwd` and creates (or, with `opts.resume`, loads) a session. Never passes MCP servers. */
  static async open(
    agentName: string,
    config: AcpConfig,
    logger: Logger,
    opts: OpenSessionOptions,
    target?: ExecutionTarget,
  ) {
    const session = new AcpAgentSession(agentName, config, logger, opts);
    session.proc = await AcpProcess.start({
      agentName,
      config,
      cwd: opts.cwd,
      logger,
      signal: opts.signal,
      onProcessGroup: opts.onProcessGroup,
      target,
      handlers: {
        onUpdate: (n) => session.onUpdate(n),
        onPermission: (r) => session.onPermission(r),
      },
    });
    try {
      const proc = session.proc;
      // Rule `free-probes`: a known CLI's version, as initialize named it, against the range baton was tested on.
      const tested = testedAgentOf('acp', config.command);
      const verdict = tested && checkTestedVersion(tested, proc.initializeResult?.agentInfo?.version);
      if (verdict && verdict.outcome === 'refused') throw new Error(verdict.message);
      if (verdict && verdict.outcome === 'untested') logger.warn(`${agentName}: ${verdict.message}`);
      if (opts.resume) {
        if (!proc.initializeResult?.agentCapabilities?.loadSession) throw new ResumeUnsupportedError(agentName);
        // session/load replays the history as session/update notifications; no turn is active, so they are dropped.
        const loaded = await proc.startupStep(
          'session/load',
          proc.agent.request(acp.methods.agent.session.load, {
            sessionId: opts.resume,
            cwd: opts.cwd,
            mcpServers: [],
          }),
          opts.signal,
        );
        session.sessionId = opts.resume;
        session.announced = true; // the caller already knows this id
        await applySessionChoices(proc, opts.resume, loaded ?? {}, opts, opts.signal);
      } else {
        // Rule `no-recursion`: children never see baton's endpoints or the user's MCP servers.
        const created = await proc.startupStep(
          'session/new',
          proc.agent.request(acp.methods.agent.session.new, { cwd: opts.cwd, mcpServers: [] }),
          opts.signal,
        );
        session.sessionId = created.sessionId;
        await applySessionChoices(proc, created.sessionId, created, opts, opts.signal);
      }
      return session;
    } catch (err) {
      await session.proc.stop();
      throw err;
    }
  }

  get id(): string | undefined {
    return this.sessionId;
  }

  get agentVersion(): string | undefined {
    return this.proc.initializeResult?.agentInfo?.version;
  }

  get capabilities(): acp.AgentCapabilities | undefined {
    return this.proc.initializeResult?.agentCapabilities;
  }

  private onUpdate(notification: acp.SessionNotification): void {
    const turn = this.active;
    if (!turn || notification.sessionId !== this.sessionId) return;
    for (const event of mapSessionUpdate(notification.update, turn.tools)) turn.queue.push(event);
  }

  private async onPermission(request: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    const turn = this.active;
    const what = permissionWhat(request.toolCall.kind);
    // With the `ask` policy a request of the running turn waits for a person's or the caller's decision (rule:
    // approvals); a read-only task still never grants anything.
    if (this.ask && this.sandbox !== 'read-only' && turn && request.sessionId === this.sessionId) {
      const decision = await this.ask({
        family: toolFamily(request.toolCall.kind),
        what,
        options: offeredDecisions(request.options),
      });
      if (turn.signal.aborted) return { outcome: { outcome: 'cancelled' } };
      const option = optionFor(request.options, decision);
      const granted = option?.kind.startsWith('allow') === true;
      if (this.active === turn) turn.queue.push({ kind: 'permission', decision: granted ? 'allowed' : 'denied', what });
      return { outcome: option ? { outcome: 'selected', optionId: option.optionId } : { outcome: 'cancelled' } };
    }
    return this.decide(request, what);
  }

  /** The config's answer without asking: deny, or grant where the agent entry allows it (rule: deny-and-report). */
  private decide(request: acp.RequestPermissionRequest, what: string): acp.RequestPermissionResponse {
    // A read-only task never grants anything, whatever the agent's config allows.
    const allow = this.config.allowPermissions === true && this.sandbox !== 'read-only';
    const option = choosePermissionOption(request.options, allow);
    const granted = allow && option !== undefined;
    const turn = this.active;
    if (turn && request.sessionId === this.sessionId)
      turn.queue.push({ kind: 'permission', decision: granted ? 'allowed' : 'denied', what });
    else this.logger.info('acp permission request outside a turn denied', { agent: this.agentName, what });
    return { outcome: option ? { outcome: 'selected', optionId: option.optionId } : { outcome: 'cancelled' } };
  }

  async *turn(prompt: string, opts: TurnOptions): AsyncIterable<AgentEvent> {
    const refusal = this.refuseTurn();
    if (refusal) {
      yield { kind: 'end', outcome: 'failed', error: refusal };
      return;
    }
    const turn: ActiveTurn = { queue: new EventQueue(), tools: new ToolCallTracker(), signal: opts.signal };
    this.active = turn;
    let ended = false;
    try {
      if (!this.announced && this.sessionId) {
        this.announced = true;
        yield { kind: 'session', id: this.sessionId };
      }
      if (opts.signal.aborted) {
        yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
        ended = true;
        return;
      }
      this.runPrompt(prompt, opts.signal, turn);
      for await (const event of turn.queue) {
        if (event.kind === 'end') ended = true;
        yield event;
      }
    } finally {
      if (this.active === turn) this.active = undefined;
      // A consumer that stopped reading mid-turn: ask the agent to stop rather than leave it working unobserved.
      if (!ended && this.sessionId)
        void this.proc.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.sessionId }).catch(() => {});
    }
  }

  private refuseTurn(): string | undefined {
    if (this.closing) return `the session with agent "${this.agentName}" is closed`;
    if (this.active) return `a turn is already running in this session of agent "${this.agentName}"`;
    if (this.abandoned)
      return `agent "${this.agentName}" never stopped its previous turn after a cancel; close this session and resume it`;
    if (this.proc.frameError || this.proc.connection.signal.aborted || this.proc.exited)
      return `agent "${this.agentName}" is no longer running; close this session and resume it`;
    return undefined;
  }

  /** Sends session/prompt and feeds the turn's queue until exactly one `end` is pushed. */
  private runPrompt(prompt: string, signal: AbortSignal, turn: ActiveTurn): void {
    const sessionId = this.sessionId!;
    const graceMs = this.config.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
    let cancelRequested = false;
    let finished = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const finish = (end: EndEvent) => {
      if (finished) return;
      finished = true;
      clearTimeout(graceTimer);
      signal.removeEventListener('abort', onAbort);
      turn.queue.push(end);
      turn.queue.end();
      if (this.active === turn) this.active = undefined;
    };
    const onAbort = () => {
      cancelRequested = true;
      void this.proc.agent.notify(acp.methods.agent.session.cancel, { sessionId }).catch(() => {});
      graceTimer = setTimeout(() => {
        this.abandoned = response;
        this.logger.warn('acp agent did not acknowledge cancel within the grace; turn abandoned', {
          agent: this.agentName,
          sessionId,
          graceMs,
        });
        finish({ kind: 'end', outcome: 'cancelled', acknowledged: false });
      }, graceMs);
    };

    const response = this.proc.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: prompt }],
    });
    signal.addEventListener('abort', onAbort, { once: true });

    response.then(
      async (result) => {
        // Updates sent before the response may still be in the SDK's async dispatch: let them land first.
        await nextMacrotask();
        if (finished) return this.lateFinish(sessionId, result.stopReason, response);
        const usage = usageFromPromptResponse(result);
        if (usage) turn.queue.push(usage);
        finish(this.endFor(result.stopReason, cancelRequested));
      },
      async (err: unknown) => {
        if (finished) return this.lateFinish(sessionId, 'error', response);
        const why = this.closing
          ? 'the session was closed during the turn'
          : `agent "${this.agentName}" failed the turn: ${await this.proc.describeFailure(err)}`;
        // Dying while asked to stop is still a cancelled turn, though not one the agent acknowledged.
        if (cancelRequested) finish({ kind: 'end', outcome: 'cancelled', acknowledged: false, error: why });
        else finish({ kind: 'end', outcome: 'failed', error: why });
      },
    );
  }

  private endFor(stopReason: acp.StopReason, cancelRequested: boolean): EndEvent {
    // Any stop inside the grace after a cancel means the agent is idle again: the cancel took effect.
    if (stopReason === 'cancelled' || cancelRequested) return { kind: 'end', outcome: 'cancelled', acknowledged: true };
    const error = STOP_REASON_ERRORS[stopReason];
    return error ? { kind: 'end', outcome: 'failed', error } : { kind: 'end', outcome: 'succeeded' };
  }

  /**
   * Rule `cancel-then-stop`: a turn abandoned after an unacknowledged cancel is logged again when it finally finishes.
   */
  private lateFinish(sessionId: string, how: string, response: Promise<unknown>): void {
    if (this.abandoned === response) this.abandoned = undefined;
    this.logger.warn('abandoned acp turn finished after its cancel', { agent: this.agentName, sessionId, how });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.proc.stop();
    })();
    return this.closing;
  }
}
