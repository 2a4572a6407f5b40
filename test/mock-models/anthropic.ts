// Scripted Anthropic Messages API mock for the real Claude Code binary: answers `HEAD /` and
// `POST /v1/messages?beta=true` with a streamed (SSE) message built from the next scripted step.

import type { ServerResponse } from 'node:http';
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

export const MOCK_CLAUDE_MODEL = 'claude-mock-model';

export type AnthropicStep =
  /** A plain text answer that ends the turn. */
  | { kind: 'text'; text: string }
  /** One tool_use block (Claude runs the tool and calls again with its result; script the next step for that). */
  | { kind: 'tool_use'; name: string; input: Record<string, unknown>; text?: string }
  /** Starts a text block, writes `text`, then waits for the gate before finishing with `after`. */
  | { kind: 'stall'; gate: Gate; text?: string; after?: string }
  /** An HTTP error with an Anthropic-shaped error body. */
  | { kind: 'error'; status: number; message?: string };

export interface MessagesRequest {
  model?: string;
  system?: unknown;
  messages?: Array<{ role: string; content: unknown }>;
  tools?: Array<{ name: string }>;
  stream?: boolean;
}

export class AnthropicMock {
  readonly server: MockModelServer;
  readonly script: Script<AnthropicStep>;
  private toolCounter = 0;

  private constructor(server: MockModelServer, script: Script<AnthropicStep>) {
    this.server = server;
    this.script = script;
  }

  static async start(fallback: Scripted<AnthropicStep> = { kind: 'text', text: 'ok' }): Promise<AnthropicMock> {
    const script = new Script<AnthropicStep>(fallback);
    let self: AnthropicMock | undefined;
    const server = await MockModelServer.start((req, res) => self!.handle(req, res));
    self = new AnthropicMock(server, script);
    return self;
  }

  get origin(): string {
    return this.server.origin;
  }

  push(...steps: AnthropicStep[]): this {
    this.script.push(...steps);
    return this;
  }

  /** Every POST /v1/messages body received so far, in order. */
  get messageRequests(): MessagesRequest[] {
    return this.server.requests.filter(isMessagesCall).map((r) => r.body as MessagesRequest);
  }

  waitForMessages(
    match: (body: MessagesRequest) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<MessagesRequest> {
    return this.server
      .waitForRequest((r) => isMessagesCall(r) && match(r.body as MessagesRequest), timeoutMs)
      .then((r) => r.body as MessagesRequest);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private async handle(req: RecordedRequest, res: ServerResponse): Promise<void> {
    if (req.method === 'HEAD' || (req.method === 'GET' && req.path === '/')) {
      res.writeHead(200).end();
      return;
    }
    if (!isMessagesCall(req)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `no route ${req.path}` } }));
      return;
    }
    const body = req.body as MessagesRequest;
    const step = this.script.next(req);
    if (step.kind === 'error') {
      res.writeHead(step.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          type: 'error',
          error: {
            type: step.status === 401 ? 'authentication_error' : 'invalid_request_error',
            message: step.message ?? 'scripted error',
          },
        }),
      );
      return;
    }
    beginSse(res);
    const model = body.model ?? MOCK_CLAUDE_MODEL;
    const event = (name: string, data: Record<string, unknown>) => writeSse(res, { type: name, ...data }, name);
    event('message_start', {
      message: {
        id: `msg_mock_${Date.now()}`,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 12, output_tokens: 1 },
      },
    });
    let index = 0;
    const textBlock = (text: string) => {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text } });
      event('content_block_stop', { index });
      index++;
    };
    let stopReason = 'end_turn';
    if (step.kind === 'text') textBlock(step.text);
    else if (step.kind === 'tool_use') {
      if (step.text) textBlock(step.text);
      const id = `toolu_mock_${++this.toolCounter}`;
      event('content_block_start', { index, content_block: { type: 'tool_use', id, name: step.name, input: {} } });
      const json = JSON.stringify(step.input);
      // Split the arguments across two deltas, as the real API streams them.
      const cut = Math.floor(json.length / 2);
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(0, cut) } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: json.slice(cut) } });
      event('content_block_stop', { index });
      index++;
      stopReason = 'tool_use';
    } else {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      if (step.text) event('content_block_delta', { index, delta: { type: 'text_delta', text: step.text } });
      await step.gate.promise;
      if (res.destroyed) return;
      if (step.after) event('content_block_delta', { index, delta: { type: 'text_delta', text: step.after } });
      event('content_block_stop', { index });
      index++;
    }
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 7 } });
    event('message_stop', {});
    res.end();
  }
}

function isMessagesCall(r: RecordedRequest): boolean {
  return r.method === 'POST' && r.path === '/v1/messages';
}

/**
 * Environment for running the real `claude` binary against `origin` in isolation: private HOME and config dir under
 * `root`, a dummy API key (no login step), no retries, no update checks or telemetry. Nothing from the developer's own
 * environment but PATH is inherited.
 */
export function isolatedClaudeEnv(origin: string, root: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    ...NODE_CACHE_ENV,
    LANG: 'C.UTF-8',
    HOME: `${root}/home`,
    CLAUDE_CONFIG_DIR: `${root}/claude-config`,
    ANTHROPIC_BASE_URL: origin,
    ANTHROPIC_API_KEY: 'dummy',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
  };
}
