// session/update → normalised AgentEvents. Fail-closed: only what the table below names crosses; hidden reasoning,
// tool arguments, outputs, titles and paths never do (rules: commentary-only, fail-closed-status).
import type { PermissionOption, PromptResponse, SessionUpdate, ToolKind } from '@agentclientprotocol/sdk';
import { statusLine } from '../../lib/text.ts';
import type { AgentEvent, PermissionDecision, ToolFamily } from '../agent.ts';

const FAMILY_BY_KIND: Record<ToolKind, ToolFamily> = {
  execute: 'command',
  edit: 'patch',
  delete: 'patch',
  move: 'patch',
  fetch: 'web',
  read: 'other',
  search: 'other',
  think: 'other',
  switch_mode: 'other',
  other: 'other',
};

export function toolFamily(kind: ToolKind | null | undefined): ToolFamily {
  return (kind && FAMILY_BY_KIND[kind]) || 'other';
}

/** What a permission request is about, said generically: a tool title may hold a command line or a path. */
const PERMISSION_WHAT: Record<ToolFamily, string> = {
  command: 'run a command',
  patch: 'change files',
  web: 'fetch from the web',
  mcp: 'call an MCP tool',
  subagent: 'start a sub-agent',
  other: 'use a tool',
};

export function permissionWhat(kind: ToolKind | null | undefined): string {
  return PERMISSION_WHAT[toolFamily(kind)];
}

/** The option baton picks: the first allow (once before always) when allowed, else the first reject. */
export function choosePermissionOption(options: PermissionOption[], allow: boolean): PermissionOption | undefined {
  const order = allow ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of order) {
    const option = options.find((o) => o.kind === kind);
    if (option) return option;
  }
  return undefined;
}

const DECISION_BY_KIND: Record<PermissionOption['kind'], PermissionDecision> = {
  allow_once: 'allow',
  allow_always: 'allow_always',
  reject_once: 'deny',
  reject_always: 'deny_always',
};

/** The decisions a request's options offer (rule: approvals); `deny` always, as a request can be cancelled. */
export function offeredDecisions(options: PermissionOption[]): PermissionDecision[] {
  const offered = new Set<PermissionDecision>(['deny']);
  for (const o of options) offered.add(DECISION_BY_KIND[o.kind]);
  return (['allow', 'allow_always', 'deny', 'deny_always'] as const).filter((d) => offered.has(d));
}

/** The option a decision picks; undefined for a `deny` the agent offers no reject option for (answered cancelled). */
export function optionFor(options: PermissionOption[], decision: PermissionDecision): PermissionOption | undefined {
  const exact = options.find((o) => DECISION_BY_KIND[o.kind] === decision);
  if (exact || decision.startsWith('allow')) return exact;
  return options.find((o) => o.kind === 'reject_once') ?? options.find((o) => o.kind === 'reject_always');
}

/** Per-turn memory needed to turn tool updates into exactly one start and one end per tool call. */
export class ToolCallTracker {
  private readonly calls = new Map<string, { readonly family: ToolFamily; ended: boolean }>();

  start(id: string, kind: ToolKind | null | undefined): AgentEvent[] {
    if (this.calls.has(id)) return [];
    const family = toolFamily(kind);
    this.calls.set(id, { family, ended: false });
    return [{ kind: 'tool', phase: 'start', family }];
  }

  update(id: string, kind: ToolKind | null | undefined, status: string | null | undefined): AgentEvent[] {
    const out = this.calls.has(id) ? [] : this.start(id, kind);
    // The family stays the one the start event named, so a start and its end always pair up.
    const call = this.calls.get(id)!;
    if ((status === 'completed' || status === 'failed') && !call.ended) {
      call.ended = true;
      out.push({ kind: 'tool', phase: 'end', family: call.family, ok: status === 'completed' });
    }
    return out;
  }
}

export function mapSessionUpdate(update: SessionUpdate, tools: ToolCallTracker): AgentEvent[] {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk':
      return update.content.type === 'text' && update.content.text
        ? [{ kind: 'message', text: update.content.text }]
        : [];
    case 'tool_call':
      return [
        ...tools.start(update.toolCallId, update.kind),
        ...tools.update(update.toolCallId, update.kind, update.status),
      ];
    case 'tool_call_update':
      return tools.update(update.toolCallId, update.kind, update.status);
    case 'plan': {
      const active = update.entries.find((e) => e.status === 'in_progress');
      const text = active && statusLine(active.content);
      return text ? [{ kind: 'status', text }] : [];
    }
    // ACP reports the session's cumulative cost: the engine counts a round's rise of it.
    case 'usage_update':
      return update.cost?.currency === 'USD' ? [{ kind: 'usage', sessionCostUsd: update.cost.amount }] : [];
    // Hidden reasoning, replayed user text, editor chrome (commands, modes, config), compaction and notices: not surfaced.
    default:
      return [];
  }
}

/** Token counts some agents put on the prompt response (`usage`, a draft field) or in `_meta.quota` (Gemini CLI). */
export function usageFromPromptResponse(response: PromptResponse): AgentEvent | undefined {
  const raw = response as PromptResponse & { usage?: { inputTokens?: unknown; outputTokens?: unknown } };
  const quota = (response._meta?.quota as { token_count?: { input_tokens?: unknown; output_tokens?: unknown } })
    ?.token_count;
  const input = raw.usage?.inputTokens ?? quota?.input_tokens;
  const output = raw.usage?.outputTokens ?? quota?.output_tokens;
  const event: AgentEvent = { kind: 'usage' };
  if (Number.isSafeInteger(input) && (input as number) >= 0) event.inputTokens = input as number;
  if (Number.isSafeInteger(output) && (output as number) >= 0) event.outputTokens = output as number;
  return event.inputTokens === undefined && event.outputTokens === undefined ? undefined : event;
}
