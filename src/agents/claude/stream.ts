// Maps Claude Code's `--output-format stream-json` lines to normalised agent events. Only lifecycle crosses: tool
// names become families, never arguments, outputs or paths; interim assistant text is not surfaced as commentary
// (Claude does not mark commentary), the turn's answer comes from the final `result` line. The text deltas of
// `--include-partial-messages` are the live preview of the answer (rule: live-text).
import type { AgentEvent, ToolFamily } from '../agent.ts';

export function claudeToolFamily(name: string): ToolFamily {
  if (name === 'Bash' || name === 'BashOutput' || name === 'KillShell' || name === 'PowerShell') return 'command';
  if (name === 'Edit' || name === 'Write' || name === 'MultiEdit' || name === 'NotebookEdit') return 'patch';
  if (name.startsWith('mcp__')) return 'mcp';
  if (name === 'WebFetch' || name === 'WebSearch') return 'web';
  if (name === 'Task' || name === 'Agent') return 'subagent';
  return 'other';
}

const FAMILY_STATUS: Record<ToolFamily, string> = {
  command: 'Claude: running a command',
  patch: 'Claude: editing files',
  mcp: 'Claude: calling an MCP tool',
  web: 'Claude: working on the web',
  subagent: 'Claude: running a sub-agent',
  other: 'Claude: inspecting the workspace',
};

/** The fields of the final `result` line baton relies on (json and stream-json share it). */
export interface ClaudeResult {
  type: 'result';
  subtype?: string;
  is_error?: boolean;
  result?: string;
  session_id?: string;
  total_cost_usd?: number;
  usage?: { input_tokens?: number; output_tokens?: number };
  permission_denials?: Array<{ tool_name?: string; tool_use_id?: string }>;
  api_error_status?: number | null;
  terminal_reason?: string;
}

export function isClaudeResult(msg: unknown): msg is ClaudeResult {
  return typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'result';
}

/** Why a result counts as failed, in words safe to show (the CLI's own result text is redacted by the caller). */
export function resultFailure(res: ClaudeResult): string | undefined {
  if (!res.is_error) return undefined;
  if (typeof res.result === 'string' && res.result.trim()) return res.result.trim();
  return `Claude Code reported an error (${res.subtype ?? 'unknown'}${res.terminal_reason ? `, ${res.terminal_reason}` : ''})`;
}

interface ContentBlock {
  type?: string;
  id?: string;
  name?: string;
  tool_use_id?: string;
  is_error?: boolean;
}

export class ClaudeStreamMapper {
  private readonly openTools = new Map<string, ToolFamily>();
  /** Whether preview text was shown and whether a new text block started since (it is set off by a blank line). */
  private previewed = false;
  private newBlock = false;
  private readonly deniedToolUses = new Set<string>();
  private sessionId: string | undefined;
  result: ClaudeResult | undefined;

  /** Events for one parsed stream-json line. */
  map(msg: unknown): AgentEvent[] {
    if (typeof msg !== 'object' || msg === null) return [];
    const m = msg as Record<string, unknown>;
    const out: AgentEvent[] = [];
    const sid = typeof m.session_id === 'string' ? m.session_id : undefined;
    if (sid && sid !== this.sessionId) {
      this.sessionId = sid;
      out.push({ kind: 'session', id: sid });
    }
    switch (m.type) {
      case 'system':
        if (m.subtype === 'init') out.push({ kind: 'status', text: 'Claude: session started' });
        else if (m.subtype === 'permission_denied') out.push(...this.denied(m.tool_name, m.tool_use_id));
        break;
      case 'assistant':
        for (const block of contentOf(m.message)) {
          if (block.type === 'tool_use' && block.id && block.name) {
            const family = claudeToolFamily(block.name);
            this.openTools.set(block.id, family);
            out.push({ kind: 'tool', phase: 'start', family }, { kind: 'status', text: FAMILY_STATUS[family] });
          } else if (block.type === 'text') {
            out.push({ kind: 'status', text: 'Claude: writing' });
          }
        }
        break;
      case 'stream_event': {
        const ev = m.event as
          | { type?: string; content_block?: { type?: string }; delta?: { type?: string; text?: unknown } }
          | undefined;
        if (ev?.type === 'content_block_start' && ev.content_block?.type === 'text') this.newBlock = true;
        else if (ev?.type === 'content_block_delta' && ev.delta?.type === 'text_delta') {
          const text = typeof ev.delta.text === 'string' ? ev.delta.text : '';
          if (!text) break;
          out.push({ kind: 'preview', text: this.previewed && this.newBlock ? `\n\n${text}` : text });
          this.previewed = true;
          this.newBlock = false;
        }
        break;
      }
      case 'user':
        for (const block of contentOf(m.message)) {
          if (block.type !== 'tool_result' || !block.tool_use_id) continue;
          const family = this.openTools.get(block.tool_use_id);
          if (!family) continue;
          this.openTools.delete(block.tool_use_id);
          out.push({ kind: 'tool', phase: 'end', family, ok: block.is_error !== true });
        }
        break;
      case 'result': {
        const res = m as unknown as ClaudeResult;
        this.result = res;
        for (const d of res.permission_denials ?? []) out.push(...this.denied(d.tool_name, d.tool_use_id));
        out.push(...this.closeOpenTools());
        if (res.usage || res.total_cost_usd !== undefined) {
          out.push({
            kind: 'usage',
            inputTokens: res.usage?.input_tokens,
            outputTokens: res.usage?.output_tokens,
            costUsd: res.total_cost_usd,
          });
        }
        break;
      }
    }
    return out;
  }

  /** Tool starts that never saw a result (the process died mid-tool) end as failed. */
  closeOpenTools(): AgentEvent[] {
    const out: AgentEvent[] = [];
    for (const family of this.openTools.values()) out.push({ kind: 'tool', phase: 'end', family, ok: false });
    this.openTools.clear();
    return out;
  }

  private denied(toolName: unknown, toolUseId: unknown): AgentEvent[] {
    const id = typeof toolUseId === 'string' ? toolUseId : undefined;
    if (id && this.deniedToolUses.has(id)) return [];
    if (id) this.deniedToolUses.add(id);
    const name = typeof toolName === 'string' ? toolName : 'a tool';
    // The tool name only: its input (a command line, a path) never leaves the adapter.
    return [{ kind: 'permission', decision: 'denied', what: `${claudeToolFamily(name)} tool ${safeToolName(name)}` }];
  }
}

function contentOf(message: unknown): ContentBlock[] {
  const content = (message as { content?: unknown } | undefined)?.content;
  return Array.isArray(content) ? (content as ContentBlock[]) : [];
}

function safeToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 64) || 'tool';
}
