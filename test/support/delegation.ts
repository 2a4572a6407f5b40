// A scripted model that delegates through baton's tools, for real MCP clients (Claude Code, Codex, Gemini CLI,
// OpenCode) against the suite's mock models: agent_run on the scripted ACP agent, agent_wait until the task is
// terminal, agent_result, then a final answer quoting the delegate. Every step reads the previous tool result from the
// request the client sent (the taskId, the state, the cursor, the answer), so the answer can only reach the client's
// output through baton's tools as that client called them.
import assert from 'node:assert/strict';
import type { AnthropicStep } from '../mock-models/anthropic.ts';
import type { ChatStep } from '../mock-models/chat-completions.ts';
import type { GeminiStep } from '../mock-models/gemini.ts';
import { functionCall, type ResponsesStep, reply } from '../mock-models/responses.ts';
import type { RecordedRequest } from '../mock-models/server.ts';
import { acpScript } from './scripted-agent.ts';

/** The delegate's answer: it appears nowhere in the prompt (the agent joins two chunks), only in its result. */
export const DELEGATE_ANSWER = 'kestrel-42';
export const FINAL_PREFIX = 'the delegate answered: ';
export const NO_TOOLS = 'NO BATON TOOLS OFFERED';
export const FAILED_PREFIX = 'DELEGATION REFUSED: ';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

type Decision = { call: string; args: Record<string, unknown> } | { text: string };
interface ToolExchange {
  name: string;
  output: unknown;
}

export class Delegation {
  readonly cwd: string;
  readonly agent: string;
  /** Tool calls the model asked for, by baton tool name (agent_run, agent_wait, …). */
  readonly asked: string[] = [];
  /** Tool names the client offered on its latest main request. */
  offered: string[] = [];
  private taskId: string | undefined;
  /** The delegate's prompt: by default a script that answers DELEGATE_ANSWER. */
  private readonly prompt: string;

  constructor(cwd: string, agent = 'scripted', prompt = acpScript([{ chunks: ['kestrel', '-42'] }])) {
    this.cwd = cwd;
    this.agent = agent;
    this.prompt = prompt;
  }

  /** Asserts the client delegated through baton: agent_run first, agent_result last, agent_wait in between. */
  assertRunWaitResult(): void {
    assert.equal(this.asked[0], 'agent_run');
    assert.equal(this.asked.at(-1), 'agent_result');
    assert.ok(this.asked.includes('agent_wait'));
  }

  decide(toolNames: string[], last: ToolExchange | undefined): Decision {
    this.offered = toolNames;
    const tool = (suffix: string) => toolNames.find((n) => n === suffix || n.endsWith(`_${suffix}`));
    const run = tool('agent_run');
    const wait = tool('agent_wait');
    const result = tool('agent_result');
    if (!run || !wait || !result) return { text: NO_TOOLS };
    const ask = (name: string, args: Record<string, unknown>): Decision => {
      this.asked.push(name === run ? 'agent_run' : name === wait ? 'agent_wait' : 'agent_result');
      return { call: name, args };
    };
    if (!last) {
      return ask(run, {
        agent: this.agent,
        prompt: this.prompt,
        cwd: this.cwd,
        idempotencyKey: `connect-${Date.now()}`,
      });
    }
    const refused = { text: `${FAILED_PREFIX}${JSON.stringify(last.output).slice(0, 400)}` };
    if (last.name === run) {
      const id = findField(last.output, 'taskId');
      if (typeof id !== 'string') return refused;
      this.taskId = id;
      return ask(wait, { taskId: id, after: 0, timeoutMs: 20_000 });
    }
    if (last.name === wait) {
      const state = findField(last.output, 'state');
      if (typeof state !== 'string' || !this.taskId) return refused;
      if (TERMINAL.has(state) && findField(last.output, 'hasMore') !== true)
        return ask(result, { taskId: this.taskId });
      return ask(wait, {
        taskId: this.taskId,
        after: Number(findField(last.output, 'nextCursor') ?? 0),
        timeoutMs: 20_000,
      });
    }
    if (last.name === result) {
      const text = findField(last.output, 'text');
      return typeof text === 'string' ? { text: `${FINAL_PREFIX}${text}` } : refused;
    }
    return refused;
  }

  /**
   * For the Anthropic Messages mock (Claude Code). Claude Code defers MCP tools: it lists their names in a system
   * message and offers ToolSearch to load them, as a real model would do first.
   */
  anthropic = (req: RecordedRequest): AnthropicStep => {
    const body = req.body as { tools?: { name: string }[]; messages?: { role: string; content: unknown }[] };
    const names = new Map<string, string>();
    let last: ToolExchange | undefined;
    let searched = false;
    for (const m of body.messages ?? []) {
      if (!Array.isArray(m.content)) continue;
      for (const part of m.content as Record<string, unknown>[]) {
        if (part.type === 'tool_use') names.set(String(part.id), String(part.name));
        if (part.type !== 'tool_result') continue;
        const name = names.get(String(part.tool_use_id)) ?? '?';
        if (name === 'ToolSearch') searched = true;
        else last = { name, output: part.content };
      }
    }
    const listed = collectNames(body.tools);
    const deferred = [
      ...new Set(JSON.stringify(body.messages).match(/mcp__[A-Za-z0-9_-]+?__agent_(?:run|wait|result)\b/g) ?? []),
    ];
    if (!listed.some((n) => n.endsWith('agent_run')) && listed.includes('ToolSearch') && deferred.length) {
      if (!searched) return { kind: 'tool_use', name: 'ToolSearch', input: { query: `select:${deferred.join(',')}` } };
      listed.push(...deferred);
    }
    const d = this.decide(listed, last);
    return 'call' in d ? { kind: 'tool_use', name: d.call, input: d.args } : { kind: 'text', text: d.text };
  };

  /** For the Responses mock (Codex), which offers an MCP server's tools inside a `namespace` tool (`mcp__baton`). */
  responses = (req: RecordedRequest): ResponsesStep => {
    const body = req.body as { tools?: Record<string, unknown>[]; input?: Record<string, unknown>[] };
    const qualified = (namespace: unknown, name: unknown) => (namespace ? `${namespace}__${name}` : String(name));
    const offered = new Map<string, { name: string; namespace?: string }>();
    for (const tool of body.tools ?? []) {
      if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
        for (const sub of tool.tools as { name: string }[])
          offered.set(qualified(tool.name, sub.name), { name: sub.name, namespace: String(tool.name) });
      } else if (typeof tool.name === 'string') offered.set(tool.name, { name: tool.name });
    }
    const names = new Map<string, string>();
    let last: ToolExchange | undefined;
    for (const item of body.input ?? []) {
      if (item.type === 'function_call') names.set(String(item.call_id), qualified(item.namespace, item.name));
      if (item.type === 'function_call_output')
        last = { name: names.get(String(item.call_id)) ?? '?', output: item.output };
    }
    const d = this.decide([...offered.keys()], last);
    if (!('call' in d)) return reply(d.text);
    const tool = offered.get(d.call)!;
    return functionCall(tool.name, d.args, undefined, tool.namespace);
  };

  /** For the Gemini mock (Gemini CLI). */
  gemini = (req: RecordedRequest): GeminiStep => {
    const body = req.body as { tools?: unknown; contents?: { parts?: Record<string, unknown>[] }[] };
    let last: ToolExchange | undefined;
    for (const c of body.contents ?? []) {
      for (const part of c.parts ?? []) {
        const fr = part.functionResponse as { name?: string; response?: unknown } | undefined;
        if (fr) last = { name: String(fr.name), output: fr.response };
      }
    }
    const d = this.decide(collectNames(body.tools), last);
    return 'call' in d ? { type: 'functionCall', name: d.call, args: d.args } : { type: 'text', chunks: [d.text] };
  };

  /** For the chat-completions mock (OpenCode). */
  chat = (req: RecordedRequest): ChatStep => {
    const body = req.body as { tools?: unknown; messages?: Record<string, unknown>[] };
    const names = new Map<string, string>();
    let last: ToolExchange | undefined;
    for (const m of body.messages ?? []) {
      for (const tc of (m.tool_calls as { id: string; function: { name: string } }[] | undefined) ?? [])
        names.set(tc.id, tc.function.name);
      if (m.role === 'tool') last = { name: names.get(String(m.tool_call_id)) ?? '?', output: m.content };
    }
    const d = this.decide(collectNames(body.tools), last);
    return 'call' in d ? { type: 'toolCall', name: d.call, args: d.args } : { type: 'text', chunks: [d.text] };
  };
}

/** Every `name` string anywhere under a request's tool list (each wire format nests them differently). */
function collectNames(tools: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'name' && typeof x === 'string') out.push(x);
        else walk(x);
      }
    }
  };
  walk(tools);
  return out;
}

/** Finds `key` in a tool output however the client wrapped it (content blocks, JSON inside strings, nested objects). */
export function findField(value: unknown, key: string): unknown {
  if (typeof value === 'string') {
    // Some clients wrap the tool's JSON in text (Codex: "Wall time: …\nOutput:\n{…}", Gemini CLI:
    // "<untrusted_context>{…}</untrusted_context>").
    const t = value.trim();
    const json = t.startsWith('"') || t.startsWith('[') ? t : t.slice(t.indexOf('{'), t.lastIndexOf('}') + 1);
    if (!json) return undefined;
    try {
      return findField(JSON.parse(json), key);
    } catch {
      return undefined;
    }
  }
  if (Array.isArray(value)) {
    for (const v of value) {
      const hit = findField(v, key);
      if (hit !== undefined) return hit;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const own = obj[key];
    if (own !== undefined && typeof own !== 'object') {
      // A content block's `text` may itself be the JSON that holds the field.
      const inner = typeof own === 'string' ? findField(own, key) : undefined;
      return inner ?? own;
    }
    for (const v of Object.values(obj)) {
      const hit = findField(v, key);
      if (hit !== undefined) return hit;
    }
  }
  return undefined;
}
