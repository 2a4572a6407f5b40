// A scripted mock of the OpenAI Responses API (`POST /v1/responses`, streamed as SSE), the wire format Codex speaks.
// Each model request consumes one scripted step; tests assert what Codex sent through `requests` / `waitForTurn`.
// Built for every Codex-driving test: the app-server adapter, the mcp-server passthrough (0.153.x) and its bridge.

import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { NODE_CACHE_ENV } from '../support/bins.ts';
import {
  beginSse,
  type Gate,
  MockModelServer,
  type RecordedRequest,
  Script,
  type Scripted,
  writeSse,
} from './server.ts';

export const MOCK_MODEL = 'mock-model';
/** Codex's stream idle timeout in the mock provider tables: a stalled mock model ends Codex's turn after this long. */
export const MOCK_STREAM_IDLE_MS = 20_000;
export const MOCK_PROVIDER_ID = 'mock';

export interface MockUsage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens?: number;
  reasoningTokens?: number;
}

/** One output item of a scripted response. */
export type MockOutputItem =
  /** An assistant message; `phase: 'commentary'` marks it as progress commentary (Codex's MessagePhase). */
  | { type: 'message'; text: string; phase?: 'commentary' | 'final_answer'; chunks?: number }
  /** A function call Codex executes (e.g. `shell_command` with `{command}`), then asks the model again. */
  | { type: 'function_call'; name: string; arguments: unknown; callId?: string; namespace?: string };

export type ResponsesStep =
  | {
      kind: 'respond';
      output: MockOutputItem[];
      usage?: MockUsage;
      /** Hold the stream open after the first delta until the gate opens (a stalled model). */
      stallAt?: Gate;
    }
  | { kind: 'http_error'; status: number; message?: string }
  | { kind: 'failed'; code?: string; message: string }
  /** An SSE stream whose data is not JSON, then closed without response.completed. */
  | { kind: 'malformed' };

const DEFAULT_USAGE: MockUsage = { inputTokens: 11, outputTokens: 7 };

/** A plain text reply, streamed in `chunks` deltas. */
export function reply(text: string, opts: { chunks?: number; usage?: MockUsage } = {}): ResponsesStep {
  return { kind: 'respond', output: [{ type: 'message', text, chunks: opts.chunks }], usage: opts.usage };
}

/** A commentary message followed by the final answer, in one response. */
export function commentaryThenReply(commentary: string, text: string): ResponsesStep {
  return {
    kind: 'respond',
    output: [
      { type: 'message', text: commentary, phase: 'commentary' },
      { type: 'message', text, phase: 'final_answer' },
    ],
  };
}

/**
 * A function call; Codex runs it and sends its output in the next request. Codex offers an MCP server's tools inside a
 * `namespace` tool (e.g. `mcp__baton`); a call to one of them names that namespace.
 */
export function functionCall(
  name: string,
  args: unknown,
  callId = `call_${randomUUID().slice(0, 8)}`,
  namespace?: string,
): ResponsesStep {
  return {
    kind: 'respond',
    output: [{ type: 'function_call', name, arguments: args, callId, ...(namespace ? { namespace } : {}) }],
  };
}

/**
 * A shell command through Codex's unified exec tool (`exec_command {cmd}`, what Codex 0.169 offers a model without
 * metadata); pass `tool` for another shell tool shape (e.g. `shell` with `{command: [argv]}` on older releases).
 */
export function shellCall(
  command: string,
  opts: { callId?: string; tool?: { name: string; args: (command: string) => unknown } } = {},
): ResponsesStep {
  const tool = opts.tool ?? { name: 'exec_command', args: (cmd: string) => ({ cmd }) };
  return functionCall(tool.name, tool.args(command), opts.callId);
}

/** A patch adding `path` (relative to the cwd) with `content`, as Codex runs it: `apply_patch` through the shell tool. */
export function addFilePatch(path: string, content: string, callId?: string): ResponsesStep {
  const body = content
    .split('\n')
    .map((line) => `+${line}`)
    .join('\n');
  return shellCall(`apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: ${path}\n${body}\n*** End Patch\nPATCH\n`, {
    callId,
  });
}

/** A shell command the model asks to run outside the sandbox: under `on-request` Codex asks the client to approve. */
export function escalatedShellCall(command: string, callId?: string): ResponsesStep {
  return functionCall(
    'exec_command',
    { cmd: command, sandbox_permissions: 'require_escalated', justification: 'needs to run outside the sandbox' },
    callId,
  );
}

/** A reply that stalls after its first delta until `gate` opens. */
export function stalledReply(gate: Gate, text = 'stalled reply'): ResponsesStep {
  return { kind: 'respond', output: [{ type: 'message', text, chunks: 2 }], stallAt: gate };
}

export function httpError(status: number, message = 'mock model failure'): ResponsesStep {
  return { kind: 'http_error', status, message };
}

export function responseFailed(message = 'mock model failed', code = 'server_error'): ResponsesStep {
  return { kind: 'failed', message, code };
}

export function malformedStream(): ResponsesStep {
  return { kind: 'malformed' };
}

/** Request body fields the tests inspect (the rest stays in `raw`). */
export interface ResponsesRequestView {
  model: string | undefined;
  instructions: string | undefined;
  input: Array<Record<string, unknown>>;
  toolNames: string[];
  raw: RecordedRequest;
}

export class ResponsesMock {
  readonly script: Script<ResponsesStep>;
  readonly server: MockModelServer;

  private constructor(server: MockModelServer, script: Script<ResponsesStep>) {
    this.server = server;
    this.script = script;
  }

  /** Starts the mock; when the script runs dry every further request gets `fallback` (default: a short reply). */
  static async start(fallback: Scripted<ResponsesStep> = reply('ok')): Promise<ResponsesMock> {
    const script = new Script<ResponsesStep>(fallback);
    let mock: ResponsesMock | undefined;
    const server = await MockModelServer.start((req, res) => mock!.handle(req, res));
    mock = new ResponsesMock(server, script);
    return mock;
  }

  /** e.g. http://127.0.0.1:PORT/v1 — the provider's base_url. */
  get baseUrl(): string {
    return `${this.server.origin}/v1`;
  }

  push(...steps: ResponsesStep[]): this {
    this.script.push(...steps);
    return this;
  }

  /** Every model request received so far, parsed. */
  get turns(): ResponsesRequestView[] {
    return this.server.requests.filter(isResponsesRequest).map(viewOf);
  }

  /** Resolves with the `n`-th model request (0-based), past or future. */
  async waitForTurn(n: number, timeoutMs = 30_000): Promise<ResponsesRequestView> {
    let seen = -1;
    const req = await this.server.waitForRequest((r) => isResponsesRequest(r) && ++seen === n, timeoutMs);
    return viewOf(req);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (!isResponsesRequest(req)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `mock: no route for ${req.method} ${req.path}` } }));
      return;
    }
    const step = this.script.next(req);
    const responseId = `resp_${randomUUID().slice(0, 12)}`;
    switch (step.kind) {
      case 'http_error':
        res.writeHead(step.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: step.message, type: 'server_error', code: null } }));
        return;
      case 'malformed':
        beginSse(res);
        writeSse(res, { type: 'response.created', response: { id: responseId } }, 'response.created');
        res.write('event: response.output_text.delta\ndata: {not json\n\n');
        res.end();
        return;
      case 'failed':
        beginSse(res);
        writeSse(res, { type: 'response.created', response: { id: responseId } }, 'response.created');
        writeSse(
          res,
          { type: 'response.failed', response: { id: responseId, error: { code: step.code, message: step.message } } },
          'response.failed',
        );
        res.end();
        return;
      case 'respond':
        await streamResponse(res, responseId, step);
        return;
    }
  }
}

function isResponsesRequest(r: RecordedRequest): boolean {
  return r.method === 'POST' && r.path.endsWith('/responses');
}

function viewOf(raw: RecordedRequest): ResponsesRequestView {
  const body = (raw.body ?? {}) as Record<string, unknown>;
  const tools = Array.isArray(body.tools) ? (body.tools as Array<Record<string, unknown>>) : [];
  return {
    model: typeof body.model === 'string' ? body.model : undefined,
    instructions: typeof body.instructions === 'string' ? body.instructions : undefined,
    input: Array.isArray(body.input) ? (body.input as Array<Record<string, unknown>>) : [],
    toolNames: tools.map((t) => String(t.name ?? t.type)),
    raw,
  };
}

/** The text of every user message in a request's input, in order (what the model was told so far). */
export function userTexts(view: ResponsesRequestView): string[] {
  return messageTexts(view, 'user');
}

/** The text of every assistant message in a request's input (earlier answers replayed as history). */
export function assistantTexts(view: ResponsesRequestView): string[] {
  return messageTexts(view, 'assistant');
}

/** The outputs Codex returned for function calls, by call id. */
export function functionOutputs(view: ResponsesRequestView): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const item of view.input) {
    if (item.type === 'function_call_output' && typeof item.call_id === 'string') out.set(item.call_id, item.output);
  }
  return out;
}

function messageTexts(view: ResponsesRequestView, role: string): string[] {
  const texts: string[] = [];
  for (const item of view.input) {
    if (item.type !== 'message' || item.role !== role || !Array.isArray(item.content)) continue;
    for (const part of item.content as Array<Record<string, unknown>>) {
      if (typeof part.text === 'string') texts.push(part.text);
    }
  }
  return texts;
}

function splitChunks(text: string, chunks: number): string[] {
  const cps = Array.from(text);
  const n = Math.max(1, Math.min(chunks, cps.length || 1));
  const size = Math.ceil(cps.length / n) || 1;
  const parts: string[] = [];
  for (let i = 0; i < cps.length; i += size) parts.push(cps.slice(i, i + size).join(''));
  return parts.length ? parts : [''];
}

async function streamResponse(
  res: ServerResponse,
  responseId: string,
  step: Extract<ResponsesStep, { kind: 'respond' }>,
): Promise<void> {
  beginSse(res);
  const event = (data: Record<string, unknown>) => writeSse(res, data, String(data.type));
  event({ type: 'response.created', response: { id: responseId } });
  let stalled = false;
  for (const [outputIndex, item] of step.output.entries()) {
    if (item.type === 'message') {
      const itemId = `msg_${randomUUID().slice(0, 12)}`;
      const phase = item.phase ? { phase: item.phase } : {};
      event({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { type: 'message', id: itemId, role: 'assistant', status: 'in_progress', content: [], ...phase },
      });
      for (const delta of splitChunks(item.text, item.chunks ?? 3)) {
        event({
          type: 'response.output_text.delta',
          item_id: itemId,
          output_index: outputIndex,
          content_index: 0,
          delta,
        });
        if (step.stallAt && !stalled) {
          stalled = true;
          // Stall mid-stream; a client that gives up closes the socket, which ends the wait too.
          await Promise.race([step.stallAt.promise, new Promise((r) => res.once('close', r))]);
          if (res.destroyed || res.writableEnded) return;
        }
      }
      event({
        type: 'response.output_item.done',
        output_index: outputIndex,
        item: {
          type: 'message',
          id: itemId,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: item.text, annotations: [] }],
          ...phase,
        },
      });
    } else {
      const itemId = `fc_${randomUUID().slice(0, 12)}`;
      const done = {
        type: 'function_call',
        id: itemId,
        call_id: item.callId ?? `call_${randomUUID().slice(0, 8)}`,
        name: item.name,
        ...(item.namespace ? { namespace: item.namespace } : {}),
        arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments),
        status: 'completed',
      };
      event({ type: 'response.output_item.added', output_index: outputIndex, item: { ...done, arguments: '' } });
      event({ type: 'response.output_item.done', output_index: outputIndex, item: done });
    }
  }
  const usage = step.usage ?? DEFAULT_USAGE;
  event({
    type: 'response.completed',
    response: {
      id: responseId,
      usage: {
        input_tokens: usage.inputTokens,
        input_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
        output_tokens: usage.outputTokens,
        output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    },
  });
  res.end();
}

/** The `[model_providers.mock]` table pointing Codex at this mock, as TOML lines (no header). */
export function mockProviderToml(mock: ResponsesMock): string {
  return [
    'name = "Mock Responses"',
    `base_url = "${mock.baseUrl}"`,
    'wire_api = "responses"',
    'requires_openai_auth = false',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    `stream_idle_timeout_ms = ${MOCK_STREAM_IDLE_MS}`,
  ].join('\n');
}

/**
 * Writes an isolated CODEX_HOME (0700) whose config.toml points Codex at the mock, with plugins, apps, update checks,
 * analytics and feedback off (RECIPES.md). `extraToml` is appended verbatim (e.g. a `[features]` override).
 */
export function writeMockCodexHome(
  codexHome: string,
  mock: ResponsesMock,
  opts: { approvalPolicy?: string; sandboxMode?: string; extraToml?: string } = {},
): string {
  mkdirSync(codexHome, { recursive: true, mode: 0o700 });
  const toml = [
    `model = "${MOCK_MODEL}"`,
    `model_provider = "${MOCK_PROVIDER_ID}"`,
    `approval_policy = "${opts.approvalPolicy ?? 'never'}"`,
    `sandbox_mode = "${opts.sandboxMode ?? 'workspace-write'}"`,
    'check_for_update_on_startup = false',
    '[history]',
    'persistence = "none"',
    '[analytics]',
    'enabled = false',
    '[feedback]',
    'enabled = false',
    '[features]',
    'plugins = false',
    'apps = false',
    'shell_snapshot = false',
    `[model_providers.${MOCK_PROVIDER_ID}]`,
    mockProviderToml(mock),
    opts.extraToml ?? '',
  ].join('\n');
  writeFileSync(join(codexHome, 'config.toml'), `${toml}\n`, { mode: 0o600 });
  return codexHome;
}

/** Environment for a Codex child: its own CODEX_HOME and HOME, nothing inherited that could reach the network. */
export function mockCodexEnv(codexHome: string, home = codexHome): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    ...NODE_CACHE_ENV,
    HOME: home,
    CODEX_HOME: codexHome,
    LANG: 'C.UTF-8',
    RUST_LOG: 'error',
  };
}
