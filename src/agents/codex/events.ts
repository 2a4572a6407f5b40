// Codex thread notifications → the normalised agent events of one turn: tools by family, commentary and plan steps as
// status, token usage summed, errors redacted, the final answer kept for the end of the turn.
import type { AgentMessageDeltaNotification } from '../../generated/codex/v2/AgentMessageDeltaNotification.ts';
import type { ThreadItem } from '../../generated/codex/v2/ThreadItem.ts';
import type { ThreadTokenUsageUpdatedNotification } from '../../generated/codex/v2/ThreadTokenUsageUpdatedNotification.ts';
import type { Turn } from '../../generated/codex/v2/Turn.ts';
import type { TurnPlanUpdatedNotification } from '../../generated/codex/v2/TurnPlanUpdatedNotification.ts';
import { redact } from '../../lib/redact.ts';
import { statusLine, stripTerminalControls } from '../../lib/text.ts';
import type { AgentEvent, ToolFamily } from '../agent.ts';
import type { EventQueue } from '../event-queue.ts';

/** What one running turn has seen so far. */
export interface ActiveTurn {
  queue: EventQueue<AgentEvent>;
  turnId: string | undefined;
  /** Resolves with the turn record when Codex reports turn/completed. */
  completed: PromiseWithResolvers<Turn>;
  inputTokens: number;
  outputTokens: number;
  sawUsage: boolean;
  finalMessages: string[];
  /** Answer (non-commentary) message items, whose deltas are streamed as `preview` text; the last one previewed. */
  previewItems: Set<string>;
  previewedItem?: string;
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

/** Maps one notification about the turn's thread onto `active` (events pushed, turn id and usage recorded). */
export function applyTurnNotification(active: ActiveTurn, method: string, p: Record<string, unknown>): void {
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
      else if (item.type === 'agentMessage' && item.phase !== 'commentary') active.previewItems.add(item.id);
      return;
    }
    case 'item/agentMessage/delta': {
      // The answer as it streams (rule: live-text); the result is still the completed items' text (finalText).
      const { itemId, delta } = p as unknown as AgentMessageDeltaNotification;
      if (!active.previewItems.has(itemId) || !delta) return;
      // Answer items are joined by a blank line in the result; the preview separates them the same way.
      const separator = active.previewedItem !== undefined && active.previewedItem !== itemId ? '\n\n' : '';
      active.previewedItem = itemId;
      push({ kind: 'preview', text: separator + delta });
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
      const n = p as unknown as ThreadTokenUsageUpdatedNotification;
      // Only this turn's model calls count: a resumed thread reports the usage it had restored, under an earlier turn.
      if (!active.turnId || n.turnId !== active.turnId) return;
      const last = n.tokenUsage?.last;
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

/** The turn's final answer: its non-commentary agent messages (or those seen as items), joined. */
export function finalText(active: ActiveTurn, turn: Turn): string {
  const finals = (turn.items ?? [])
    .filter((i): i is Extract<ThreadItem, { type: 'agentMessage' }> => i.type === 'agentMessage')
    .filter((i) => i.phase !== 'commentary')
    .map((i) => i.text);
  const texts = finals.length ? finals : active.finalMessages;
  return texts.filter(Boolean).join('\n\n');
}
