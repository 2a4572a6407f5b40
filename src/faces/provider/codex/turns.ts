// Every Codex turn the provider runs, blocking or background, goes through one wrapper: it registers the turn for
// codex-peek, reports every notification about the call's thread as activity (the round's idle deadline, rule
// `two-deadlines`, is refreshed by it; the deadlines themselves are runRound's), spots the typed unauthorized failure,
// and records a cancel Codex did not confirm as abandoned (rule: cancel-then-stop). The turn itself runs on the Codex
// agent (one `codex app-server` per call, threads resumed by id).
import type { Agent, AgentEvent, AgentSession, OpenSessionOptions, Sandbox } from '../../../agents/agent.ts';
import { type CodexAgentExtras, createCodexAgent } from '../../../agents/codex/adapter.ts';
import type { CodexAgentConfig } from '../../../agents/codex/config.ts';
import type { PreparedHome } from '../../../agents/codex/home.ts';
import type { ExecutionTarget } from '../../../agents/targets/target.ts';
import type { Logger } from '../../../lib/log.ts';

export type TurnState = 'running' | 'canceling';

export interface PeekRow {
  /** The client's call as `<type>:<value>` of its JSON-RPC id (not the raw id); absent for background jobs. */
  requestId?: string;
  jobId?: string;
  state: TurnState;
  threadId?: string;
  cwd?: string;
  /** The cwd was restored from the thread's record, not given by the call. */
  cwdInferred: boolean;
  cwdUnknown: boolean;
  sandbox: string;
  elapsedSeconds: number;
  lastActivitySeconds: number;
}

export interface PeekFilter {
  cwd?: string;
  threadId?: string;
  requestId?: string;
}

export interface InFlightEntry {
  /** Read at peek time: a job's id is assigned after its turn was registered. */
  ids: { requestId?: string; jobId?: string };
  state: TurnState;
  threadId?: string;
  cwd?: string;
  cwdInferred: boolean;
  sandbox: string;
  startedAt: number;
  lastActivityAt: number;
}

/** The turns in flight in this process, and how many were abandoned (process-wide, never narrowed by a filter). */
export class InFlightTurns {
  private readonly entries = new Set<InFlightEntry>();
  abandoned = 0;

  add(entry: Omit<InFlightEntry, 'startedAt' | 'lastActivityAt' | 'state'>): InFlightEntry {
    const now = Date.now();
    const full: InFlightEntry = { ...entry, state: 'running', startedAt: now, lastActivityAt: now };
    this.entries.add(full);
    return full;
  }

  remove(entry: InFlightEntry): void {
    this.entries.delete(entry);
  }

  get size(): number {
    return this.entries.size;
  }

  peek(filter: PeekFilter = {}): { turns: PeekRow[]; abandonedTurnsProcessWide: number } {
    const now = Date.now();
    const turns: PeekRow[] = [];
    for (const e of this.entries) {
      // A cwd filter never hides a turn whose cwd is unknown: "cannot tell" is not "nothing runs there".
      if (filter.cwd !== undefined && e.cwd !== undefined && e.cwd !== filter.cwd) continue;
      if (filter.threadId !== undefined && e.threadId !== filter.threadId) continue;
      if (filter.requestId !== undefined && e.ids.requestId !== filter.requestId) continue;
      turns.push({
        ...(e.ids.requestId !== undefined ? { requestId: e.ids.requestId } : {}),
        ...(e.ids.jobId !== undefined ? { jobId: e.ids.jobId } : {}),
        state: e.state,
        ...(e.threadId !== undefined ? { threadId: e.threadId } : {}),
        ...(e.cwd !== undefined ? { cwd: e.cwd } : {}),
        cwdInferred: e.cwdInferred,
        cwdUnknown: e.cwd === undefined,
        sandbox: e.sandbox,
        elapsedSeconds: Math.round((now - e.startedAt) / 1000),
        lastActivitySeconds: Math.round((now - e.lastActivityAt) / 1000),
      });
    }
    return { turns, abandonedTurnsProcessWide: this.abandoned };
  }
}

/** What a call asks for: a new session, or a reply on a known thread (settings inherited from its record). */
export interface CallSpec {
  cwd: string;
  cwdInferred: boolean;
  sandbox: Sandbox;
  model: string;
  effort: string;
  allowSubagents: boolean;
  /** Set for a reply. */
  threadId?: string;
  /** Developer instructions of a new thread. */
  developerInstructions?: string;
}

export interface CallLimits {
  /** Idle and hard deadline of every call and job (0 = none), enforced by runRound. */
  idleMs: number;
  hardMs: number;
  cancelGraceMs: number;
}

export interface CallHooks {
  inflight: InFlightTurns;
  logger: Logger;
  /** Codex reported its typed unauthorized failure for this call. */
  onUnauthorized(): void;
  /** The thread id became known (new sessions). */
  onThread(threadId: string): void;
  /** Any correlated activity (for progress heartbeats). */
  onActivity?(): void;
}

export interface CodexRuntime {
  command: string[];
  modelProvider?: CodexAgentConfig['modelProvider'];
  userCodexHome: string;
  approvalPolicy: string;
  /** `[agents] enabled` exists on this Codex (≥ 0.145.0). */
  agentsTable: boolean;
  prepareHome(cwd?: string): PreparedHome;
  logger: Logger;
  stateDir: string;
  /** Where each call's app-server runs and what is fenced around it (default: unfenced on this machine). */
  target?: ExecutionTarget;
}

/** The extra state a wrapped call exposes once its turn ended. */
export interface CallOutcome {
  unauthorized: boolean;
  threadId?: string;
}

/** Config overrides that turn Codex's own multi-agent tools on for one session (never MCP servers). */
function subagentConfig(agentsTable: boolean): Record<string, boolean> {
  return agentsTable ? { 'features.multi_agent': true, 'agents.enabled': true } : { 'features.multi_agent': true };
}

/**
 * An Agent for one call: opens a new thread or resumes `spec.threadId`, runs one turn, reports the thread's activity to
 * the round running it, and keeps the peek row current. Usable by the job table (background) and by the blocking tool.
 */
export function callAgent(
  runtime: CodexRuntime,
  spec: CallSpec,
  limits: CallLimits,
  ids: { requestId?: string; jobId?: string },
  hooks: CallHooks,
): { agent: Agent; outcome: CallOutcome } {
  const outcome: CallOutcome = { unauthorized: false, threadId: spec.threadId };
  const entry = { current: undefined as InFlightEntry | undefined };
  let roundActivity: (() => void) | undefined;
  const touch = () => {
    if (entry.current) entry.current.lastActivityAt = Date.now();
    roundActivity?.();
    hooks.onActivity?.();
  };
  const extras: CodexAgentExtras = {
    prepareHome: ({ cwd }) => runtime.prepareHome(cwd),
    approvalPolicy: runtime.approvalPolicy,
    ...(spec.developerInstructions ? { developerInstructions: spec.developerInstructions } : {}),
    ...(spec.allowSubagents ? { threadConfig: subagentConfig(runtime.agentsTable) } : {}),
    onThreadNotification: (method, params) => {
      touch();
      if (isUnauthorized(method, params)) {
        outcome.unauthorized = true;
        hooks.onUnauthorized();
      }
    },
  };
  const inner = createCodexAgent(
    'codex-provider',
    {
      command: runtime.command,
      ...(runtime.modelProvider ? { modelProvider: runtime.modelProvider } : {}),
      userCodexHome: runtime.userCodexHome,
      cancelGraceMs: limits.cancelGraceMs,
    },
    { stateDir: runtime.stateDir, logger: runtime.logger, ...(runtime.target ? { target: runtime.target } : {}) },
    extras,
  );
  const agent: Agent = {
    name: 'codex',
    kind: 'codex',
    probe: () => inner.probe(),
    async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
      entry.current = hooks.inflight.add({
        ids,
        threadId: spec.threadId,
        cwd: spec.cwd,
        cwdInferred: spec.cwdInferred,
        sandbox: spec.sandbox,
      });
      const controller = new AbortController();
      const onAbort = () => {
        if (entry.current) entry.current.state = 'canceling';
        controller.abort();
      };
      opts.signal.addEventListener('abort', onAbort, { once: true });
      roundActivity = opts.onActivity;
      let session: AgentSession;
      try {
        session = await inner.openSession({
          ...opts,
          cwd: spec.cwd,
          sandbox: spec.sandbox,
          model: spec.model,
          effort: spec.effort,
          signal: controller.signal,
          ...(spec.threadId ? { resume: spec.threadId } : {}),
        });
      } catch (err) {
        finish();
        throw err;
      }
      if (session.id) {
        outcome.threadId = session.id;
        if (entry.current) entry.current.threadId = session.id;
        hooks.onThread(session.id);
      }
      function finish() {
        roundActivity = undefined;
        opts.signal.removeEventListener('abort', onAbort);
        if (entry.current) hooks.inflight.remove(entry.current);
      }
      return {
        get id() {
          return session.id;
        },
        turn: (prompt) => wrapTurn(session.turn(prompt, { signal: controller.signal })),
        async close() {
          finish();
          await session.close();
        },
      };
      async function* wrapTurn(events: AsyncIterable<AgentEvent>): AsyncIterable<AgentEvent> {
        if (session.id) yield { kind: 'session', id: session.id };
        for await (const ev of events) {
          if (ev.kind !== 'end') {
            yield ev;
            continue;
          }
          if (ev.outcome === 'cancelled' && ev.acknowledged === false) {
            hooks.inflight.abandoned++;
            hooks.logger.warn('codex: cancel not acknowledged within the grace; turn abandoned', {
              threadId: session.id,
              ...ids,
            });
          }
          if (outcome.unauthorized && ev.outcome !== 'cancelled') {
            yield { kind: 'end', outcome: 'failed', error: AUTH_INVALIDATED_MESSAGE };
          } else yield ev;
          return;
        }
      }
    },
  };
  return { agent, outcome };
}

export const AUTH_INVALIDATED_CODE = 'codex_auth_invalidated';
export const AUTH_INVALIDATED_ACTION = 'reauthenticate_and_restart';
export const AUTH_INVALIDATED_MESSAGE =
  'Codex reported that its login is no longer valid. Stop this MCP server, run `codex logout` and `codex login` as ' +
  'the same OS user, check it with `codex exec`, then reconnect.';

/**
 * Codex's typed unauthorized failure, on an `error` notification or a failed turn: codexErrorInfo "unauthorized", or a
 * typed HTTP failure variant carrying status 401 (what Codex 0.169 reports when the model endpoint refuses the login).
 */
export function isUnauthorized(method: string, params: Record<string, unknown>): boolean {
  let error: unknown;
  if (method === 'error') error = params.error;
  else if (method === 'turn/completed') error = (params.turn as { error?: unknown } | undefined)?.error;
  else return false;
  const info = (error as { codexErrorInfo?: unknown } | undefined)?.codexErrorInfo;
  if (info === 'unauthorized') return true;
  if (!info || typeof info !== 'object') return false;
  return Object.values(info).some((v) => (v as { httpStatusCode?: unknown } | null)?.httpStatusCode === 401);
}
