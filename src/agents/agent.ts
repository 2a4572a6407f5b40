// The one seam between the engine and every harness: sessions are explicit, turns stream normalised events,
// cancellation is an AbortSignal, and nothing here knows MCP or any harness's wire format.

import type { z } from 'zod';

/**
 * A final result larger than this fails the task atomically (rule: paged-results); one-shot adapters drop such an
 * answer too.
 */
export const MAX_RESULT_BYTES = 10 * 1024 * 1024;

export type Sandbox = 'read-only' | 'workspace-write' | 'danger-full-access';

export interface AgentProbe {
  name: string;
  kind: string;
  /** True when the binary was found and answered its version probe. */
  available: boolean;
  binary?: string;
  version?: string;
  /** Login state where the agent can report it without spending inference. */
  login?: 'ok' | 'missing' | 'unknown';
  /** Human-readable reason when something is missing. */
  detail?: string;
  /** Models a client may choose, where the agent lists them without spending inference (a `catalog` probe). */
  models?: string[];
  /** Reasoning efforts a client may choose, likewise. */
  efforts?: string[];
}

export interface ProbeRequest {
  /**
   * Also list the models and efforts the agent offers (AgentProbe.models/efforts), where it can say so without
   * spending inference; this may start the agent (an ACP session/new), so only agent_agents asks for it.
   */
  catalog?: boolean;
}

export interface OpenSessionOptions {
  cwd: string;
  sandbox: Sandbox;
  /** The agent's own session/thread id saved from an earlier round, to continue that conversation. */
  resume?: string;
  model?: string;
  effort?: string;
  signal: AbortSignal;
  /**
   * Called for every process group the adapter starts, so the engine can record it for crash recovery (rule:
   * crash-durability).
   */
  onProcessGroup?: (pgid: number) => void;
  /**
   * Called for activity of this session that is correlated to the running turn but yields no event (e.g. a Codex
   * notification about the turn's thread); it refreshes the round's idle deadline like an event does (rule:
   * two-deadlines).
   */
  onActivity?: () => void;
  /**
   * Present when the operator's approval policy for this caller and agent is `ask` (rule: approvals): the adapter hands
   * each permission request of a turn here instead of denying it, and answers the agent with the decision it resolves
   * to. It never rejects; `deny` is its answer when nobody answers in time or the round stops.
   */
  ask?: (request: PermissionAsk) => Promise<PermissionDecision>;
}

/** How a permission request may be answered: once or for the rest of the session, allowed or denied. */
export type PermissionDecision = 'allow' | 'allow_always' | 'deny' | 'deny_always';

/** A permission request as the one who answers it is shown it: lossy, never the request's arguments. */
export interface PermissionAsk {
  /** The family of what is asked for. */
  family: ToolFamily;
  /** What it is about, said generically (the same text the `permission` event carries). */
  what: string;
  /** The decisions the agent offers; `deny` always among them (a request can always be refused). */
  options: PermissionDecision[];
}

export interface TurnOptions {
  signal: AbortSignal;
}

export interface AgentSession {
  /** The agent's own session/thread id; may be known only after the first turn starts (then a `session` event says so). */
  readonly id: string | undefined;
  /** Runs one prompt; the iterable always ends with exactly one `end` event. Aborting `signal` asks the agent to stop. */
  turn(prompt: string, opts: TurnOptions): AsyncIterable<AgentEvent>;
  /** Stops the session's process group; resolves only once it has exited. Safe to call twice. */
  close(): Promise<void>;
}

export interface Agent {
  /** "codex", "claude", "opencode", "gemini", "dsh", or a configured ACP agent's name. */
  readonly name: string;
  readonly kind: string;
  probe(request?: ProbeRequest): Promise<AgentProbe>;
  openSession(opts: OpenSessionOptions): Promise<AgentSession>;
}

export type ToolFamily = 'command' | 'patch' | 'mcp' | 'web' | 'subagent' | 'other';

export type AgentEvent =
  /** The agent's session id became known (or changed). */
  | { kind: 'session'; id: string }
  /** Sanitised status, ≤ 200 code points (rule: fail-closed-status). */
  | { kind: 'status'; text: string }
  /** Only what the agent itself marks as commentary/progress (rule: commentary-only). */
  | { kind: 'commentary'; text: string }
  /** Tool lifecycle without arguments, outputs or paths. */
  | { kind: 'tool'; phase: 'start' | 'end'; family: ToolFamily; ok?: boolean }
  | { kind: 'permission'; decision: 'denied' | 'allowed'; what: string }
  /** Token counts and cost of this report; `sessionCostUsd` is a session's cumulative cost where that is what is reported. */
  | { kind: 'usage'; inputTokens?: number; outputTokens?: number; costUsd?: number; sessionCostUsd?: number }
  /** Text of the turn's final answer; several events are concatenated in order. */
  | { kind: 'message'; text: string }
  /**
   * Answer text as it streams, from an adapter that sends the answer itself as `message` only at the end (rule: live-text):
   * shown live, never part of the result. Once a turn sent one, its `message` text is no longer shown live.
   */
  | { kind: 'preview'; text: string }
  | { kind: 'error'; message: string }
  | { kind: 'end'; outcome: 'succeeded' | 'failed' | 'cancelled'; error?: string; acknowledged?: boolean };

/**
 * An agent kind: its strict config schema (the `agents.<name>` entry of config.json without `kind`) and its factory.
 * A new kind is one folder under src/agents/ and one line in registry.ts. Declared here, not in the registry, so the
 * kinds' own modules never import the registry that imports them.
 */
export interface AgentKind<S extends z.ZodType = z.ZodType> {
  configSchema: S;
  create(name: string, config: z.infer<S>, ctx: AgentContext): Agent;
}

export interface AgentContext {
  /** baton's state dir; adapters put private homes under `<stateDir>/homes/`. */
  stateDir: string;
  logger: import('../lib/log.ts').Logger;
  /** Where the agent's processes run and what is fenced around them (default: unfenced on this machine). */
  target?: import('./targets/target.ts').ExecutionTarget;
}
