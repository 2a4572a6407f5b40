// A scripted Gemini API (generateContent) mock for running the real `gemini` binary offline.
//
// gemini-cli makes two kinds of calls per prompt: small non-streaming `:generateContent` utility calls (the model router,
// next-speaker checks) that expect a JSON text answer, and the streamed main call `:streamGenerateContent?alt=sse`.
// Utility calls always get the same harmless JSON answer; each streamed call consumes one scripted step.

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

export type GeminiStep =
  /** A text answer streamed as one SSE event per chunk. */
  | { type: 'text'; chunks: string[] }
  /** A function call the CLI executes; it calls the model again with the result (script the next step too). */
  | { type: 'functionCall'; name: string; args: Record<string, unknown> }
  /** Streams `before` chunks, then holds the stream open until the gate opens (or the client hangs up). */
  | { type: 'stall'; gate: Gate; before?: string[] }
  /** An HTTP error answer. */
  | { type: 'error'; status: number; message: string };

/** The JSON every utility call gets: valid for both routers (classifier and numerical) and the next-speaker check. */
const UTILITY_ANSWER = JSON.stringify({
  reasoning: 'mock',
  model_choice: 'flash',
  complexity_reasoning: 'mock',
  complexity_score: 1,
  next_speaker: 'user',
});

const USAGE = { promptTokenCount: 11, candidatesTokenCount: 7, totalTokenCount: 18 };

export interface GeminiMock {
  server: MockModelServer;
  script: Script<GeminiStep>;
  /** Base URL for GOOGLE_GEMINI_BASE_URL. */
  baseUrl: string;
  /** Streamed (main) calls seen so far, in order. */
  mainCalls(): RecordedRequest[];
  close(): Promise<void>;
}

const isStreamCall = (r: RecordedRequest) => r.method === 'POST' && r.path.endsWith(':streamGenerateContent');
const isUtilityCall = (r: RecordedRequest) => r.method === 'POST' && r.path.endsWith(':generateContent');

export async function startGeminiMock(
  fallback: Scripted<GeminiStep> = { type: 'text', chunks: ['ok'] },
): Promise<GeminiMock> {
  const script = new Script<GeminiStep>(fallback);
  const server = await MockModelServer.start(async (req, res) => {
    if (isUtilityCall(req)) return answerJson(res, textCandidate(UTILITY_ANSWER));
    if (isStreamCall(req)) return streamStep(res, script.next(req));
    if (req.method === 'GET' && /\/v1beta\/models\/?$/.test(req.path)) return answerJson(res, { models: [] });
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 404, message: `mock: no route for ${req.method} ${req.path}` } }));
  });
  return {
    server,
    script,
    baseUrl: server.origin,
    mainCalls: () => server.requests.filter(isStreamCall),
    close: () => server.close(),
  };
}

function textCandidate(text: string, finishReason = 'STOP') {
  return {
    candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason, index: 0 }],
    usageMetadata: USAGE,
  };
}

function answerJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function chunkEvent(text: string, last: boolean) {
  const candidate: Record<string, unknown> = { content: { role: 'model', parts: [{ text }] }, index: 0 };
  if (last) candidate.finishReason = 'STOP';
  return last ? { candidates: [candidate], usageMetadata: USAGE } : { candidates: [candidate] };
}

async function streamStep(res: ServerResponse, step: GeminiStep): Promise<void> {
  switch (step.type) {
    case 'error':
      res.writeHead(step.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: step.status, message: step.message, status: 'INTERNAL' } }));
      return;
    case 'text':
      beginSse(res);
      step.chunks.forEach((c, i) => {
        writeSse(res, chunkEvent(c, i === step.chunks.length - 1));
      });
      res.end();
      return;
    case 'functionCall':
      beginSse(res);
      writeSse(res, {
        candidates: [
          {
            content: { role: 'model', parts: [{ functionCall: { name: step.name, args: step.args } }] },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: USAGE,
      });
      res.end();
      return;
    case 'stall': {
      beginSse(res);
      for (const c of step.before ?? []) writeSse(res, chunkEvent(c, false));
      const hungUp = new Promise<void>((r) => res.once('close', () => r()));
      await Promise.race([step.gate.promise, hungUp]);
      if (!res.writableEnded && !res.destroyed) {
        writeSse(res, chunkEvent('', true));
        res.end();
      }
      return;
    }
  }
}

/**
 * An isolated HOME for the real `gemini` binary pointed at the mock: settings.json pins the API-key auth type (without
 * it the CLI refuses a custom base URL), and telemetry, update checks and the relaunch are off.
 * Returns the env to spawn `gemini` with (a clean env: nothing from the user's own HOME leaks in). `extraSettings` are
 * merged into settings.json at the top level (e.g. a user's `mcpServers`).
 */
export function geminiEnv(
  home: string,
  mock: Pick<GeminiMock, 'baseUrl'>,
  extraSettings: Record<string, unknown> = {},
): Record<string, string> {
  const settingsDir = join(home, '.gemini');
  mkdirSync(settingsDir, { recursive: true, mode: 0o700 });
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    telemetry: { enabled: false },
    ...extraSettings,
  };
  writeFileSync(join(settingsDir, 'settings.json'), JSON.stringify(settings, null, 2), { mode: 0o600 });
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...NODE_CACHE_ENV,
    HOME: home,
    GOOGLE_GEMINI_BASE_URL: mock.baseUrl,
    GEMINI_API_KEY: 'dummy-mock-key',
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
    GEMINI_CLI_NO_RELAUNCH: 'true',
    NO_COLOR: '1',
  };
}
