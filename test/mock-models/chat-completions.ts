// A scripted OpenAI chat-completions (SSE) mock for running the real `opencode` binary offline.
//
// opencode calls `POST /v1/chat/completions` (always streaming) for each model step of a turn, and also for small
// housekeeping requests (titling a new session with `small_model`). Housekeeping gets a fixed short answer; every other
// request consumes one scripted step.
import { mkdirSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import {
  beginSse,
  type Gate,
  MockModelServer,
  type RecordedRequest,
  Script,
  type Scripted,
  writeSse,
} from './server.ts';

export type ChatStep =
  /** A text answer streamed as one SSE chunk per string. */
  | { type: 'text'; chunks: string[] }
  /** One tool call (arguments as an object); opencode runs it and calls again with the result (script the next step). */
  | { type: 'toolCall'; name: string; args: Record<string, unknown> }
  /** Streams `before` chunks, then holds the stream open until the gate opens (or the client hangs up). */
  | { type: 'stall'; gate: Gate; before?: string[] }
  /** An HTTP error answer. */
  | { type: 'error'; status: number; message: string };

export const MOCK_MODEL = 'mock-model';
/** A second model in the same provider, for tests that choose a model. */
export const MOCK_MODEL_ALT = 'mock-model-alt';
const TITLE_ANSWER = 'Mock title';

export interface ChatMock {
  server: MockModelServer;
  script: Script<ChatStep>;
  /** Base URL for the provider config (ends in /v1). */
  baseUrl: string;
  /** Scripted (non-housekeeping) calls seen so far, in order. */
  mainCalls(): RecordedRequest[];
  close(): Promise<void>;
}

const isCompletion = (r: RecordedRequest) => r.method === 'POST' && r.path === '/v1/chat/completions';

/** opencode's session-title request carries a system prompt that asks for a title and no tools. */
export function isTitleRequest(r: RecordedRequest): boolean {
  const body = r.body as { messages?: { role?: string; content?: unknown }[]; tools?: unknown[] } | undefined;
  const system = (body?.messages ?? []).filter((m) => m.role === 'system').map((m) => JSON.stringify(m.content));
  return !body?.tools?.length && system.some((s) => /\btitle\b/i.test(s));
}

export async function startChatMock(
  fallback: Scripted<ChatStep> = { type: 'text', chunks: ['ok'] },
): Promise<ChatMock> {
  const script = new Script<ChatStep>(fallback);
  const server = await MockModelServer.start(async (req, res) => {
    if (req.method === 'GET' && req.path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: MOCK_MODEL, object: 'model' }] }));
      return;
    }
    if (!isCompletion(req)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `mock: no route for ${req.method} ${req.path}` } }));
      return;
    }
    if (isTitleRequest(req)) return streamStep(res, { type: 'text', chunks: [TITLE_ANSWER] });
    return streamStep(res, script.next(req));
  });
  return {
    server,
    script,
    baseUrl: `${server.origin}/v1`,
    mainCalls: () => server.requests.filter((r) => isCompletion(r) && !isTitleRequest(r)),
    close: () => server.close(),
  };
}

let seq = 0;
function chunk(delta: Record<string, unknown>, finishReason: string | null, usage?: Record<string, number>) {
  return {
    id: `chatcmpl-mock-${++seq}`,
    object: 'chat.completion.chunk',
    created: Math.floor(Date.now() / 1000),
    model: MOCK_MODEL,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  };
}
const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

function finish(res: ServerResponse, reason: string): void {
  writeSse(res, chunk({}, reason, USAGE));
  writeSse(res, '[DONE]');
  res.end();
}

async function streamStep(res: ServerResponse, step: ChatStep): Promise<void> {
  switch (step.type) {
    case 'error':
      res.writeHead(step.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: step.message, type: 'server_error', code: null } }));
      return;
    case 'text':
      beginSse(res);
      writeSse(res, chunk({ role: 'assistant', content: '' }, null));
      for (const c of step.chunks) writeSse(res, chunk({ content: c }, null));
      finish(res, 'stop');
      return;
    case 'toolCall':
      beginSse(res);
      writeSse(
        res,
        chunk(
          {
            role: 'assistant',
            tool_calls: [
              {
                index: 0,
                id: `call_mock_${seq}`,
                type: 'function',
                function: { name: step.name, arguments: JSON.stringify(step.args) },
              },
            ],
          },
          null,
        ),
      );
      finish(res, 'tool_calls');
      return;
    case 'stall': {
      beginSse(res);
      writeSse(res, chunk({ role: 'assistant', content: '' }, null));
      for (const c of step.before ?? []) writeSse(res, chunk({ content: c }, null));
      const hungUp = new Promise<void>((r) => res.once('close', () => r()));
      await Promise.race([step.gate.promise, hungUp]);
      if (!res.writableEnded && !res.destroyed) finish(res, 'stop');
      return;
    }
  }
}

/** The inline opencode config (OPENCODE_CONFIG_CONTENT): one provider `mock` backed by the mock, used for everything. */
export function opencodeConfig(mock: Pick<ChatMock, 'baseUrl'>): Record<string, unknown> {
  return {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      mock: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Mock',
        options: { baseURL: mock.baseUrl, apiKey: 'dummy-mock-key' },
        models: {
          [MOCK_MODEL]: { name: 'Mock model', tool_call: true },
          [MOCK_MODEL_ALT]: { name: 'Mock model (alternative)', tool_call: true },
        },
      },
    },
    model: `mock/${MOCK_MODEL}`,
    small_model: `mock/${MOCK_MODEL}`,
    autoupdate: false,
    share: 'disabled',
  };
}

/** The `@opencode-ai/plugin` version opencode wants in each config dir (it matches the binary's own version). */
const OPENCODE_PLUGIN_VERSION = '1.18.33';

/**
 * Env for the real `opencode` binary pointed at the mock: HOME and every XDG dir under `root`, the config inline, and
 * every background download/update/share switched off. A clean env: nothing from the user's own HOME leaks in.
 *
 * Warm-state pitfall: a few seconds after start, opencode installs `@opencode-ai/plugin` from npm (64 MB, tens of
 * seconds, needs the network) into each config dir (`$XDG_CONFIG_HOME/opencode`, project `.opencode/`) unless that
 * dir already has a `node_modules/` and a `package-lock.json` whose root lists the package. The config dir is seeded
 * with exactly that, so opencode sees nothing to install and stays offline (tests assert no install happened).
 * `stateRoot` (XDG data/cache/state) may be shared by several runs in one file.
 *
 * The online model catalog is empty (OPENCODE_MODELS_PATH names a `{}` file): offline, opencode otherwise decodes the
 * models.dev snapshot built into the binary (hundreds of providers) in every process, about a third of the CPU of a
 * start and first message. The mock provider and its models come from the inline config either way.
 */
export function opencodeEnv(root: string, mock: Pick<ChatMock, 'baseUrl'>, stateRoot = root): Record<string, string> {
  const dirs = {
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'config'),
    XDG_DATA_HOME: join(stateRoot, 'data'),
    XDG_CACHE_HOME: join(stateRoot, 'cache'),
    XDG_STATE_HOME: join(stateRoot, 'state'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
  seedOpencodeConfigDir(join(dirs.XDG_CONFIG_HOME, 'opencode'));
  const models = join(root, 'models-catalog.json');
  writeFileSync(models, '{}');
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...dirs,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(opencodeConfig(mock)),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_MODELS_PATH: models,
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
    NO_COLOR: '1',
  };
}

/** Makes opencode's dependency check for a config dir find `@opencode-ai/plugin` already installed. */
export function seedOpencodeConfigDir(configDir: string): void {
  mkdirSync(join(configDir, 'node_modules'), { recursive: true, mode: 0o700 });
  const dependencies = { '@opencode-ai/plugin': OPENCODE_PLUGIN_VERSION };
  writeFileSync(join(configDir, 'package.json'), JSON.stringify({ dependencies }, null, 2));
  writeFileSync(
    join(configDir, 'package-lock.json'),
    JSON.stringify({ lockfileVersion: 3, requires: true, packages: { '': { dependencies } } }, null, 2),
  );
}
