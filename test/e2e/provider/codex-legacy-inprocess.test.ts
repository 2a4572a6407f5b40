// The legacy bridge created in-process on injected streams (no `baton` process in between): the official MCP SDK
// client talks to it over a pair of in-memory streams, and the bridge drives the real `codex mcp-server` of Codex
// 0.153.4 (npm alias codex-legacy) against the Responses mock. What the process binding adds (signals, process.exit)
// is covered by codex-legacy.test.ts, which spawns the bridge.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { codexModelProviderSchema } from '../../../src/agents/codex/config.ts';
import { parseCodexVersion } from '../../../src/codex/version.ts';
import { createLegacyBridge } from '../../../src/faces/provider/codex/legacy-bridge.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { MOCK_MODEL, ResponsesMock, reply } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import {
  codexProcessesUnder,
  type Layout,
  makeLayout,
  mockProviderFlag,
  OTHER_MODEL,
  textOf,
} from './codex/harness.ts';

/** An MCP client transport over two streams: the bridge's input (we write) and its output (we read). */
class StreamPairTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly buffer = new ReadBuffer();
  private readonly toBridge: PassThrough;
  private readonly fromBridge: PassThrough;

  constructor(toBridge: PassThrough, fromBridge: PassThrough) {
    this.toBridge = toBridge;
    this.fromBridge = fromBridge;
  }

  async start(): Promise<void> {
    this.fromBridge.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (let msg = this.buffer.readMessage(); msg; msg = this.buffer.readMessage()) this.onmessage?.(msg);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.toBridge.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    this.toBridge.end();
    this.onclose?.();
  }
}

let mock: ResponsesMock;
let layout: Layout;

before(async () => {
  mock = await ResponsesMock.start();
  layout = makeLayout('baton-codex-legacy-inprocess-');
  // Codex inherits HOME from this test process (its own, under node --test); keep it inside the layout.
  process.env.HOME = layout.home;
});
after(async () => {
  await mock?.close();
  layout?.cleanup();
});

test('the legacy bridge runs in-process on injected streams: curated tools, a call, a job, and a clean close', {
  timeout: 120_000,
}, async () => {
  const clientIn = new PassThrough();
  const clientOut = new PassThrough();
  const exited = Promise.withResolvers<number>();
  let onExitRan = false;
  const homeDir = join(layout.launchDir, 'tmp', 'codex-homes', 'legacy-inprocess');
  createLegacyBridge(
    {
      command: [process.execPath, bins.codexLegacy()],
      homeDir,
      settings: {
        model: MOCK_MODEL,
        effort: 'high',
        sandboxMode: 'workspace-write',
        approvalPolicy: 'never',
        workspaceNetwork: true,
        fastMode: false,
        version: parseCodexVersion('0.153.4'),
        modelProvider: codexModelProviderSchema.parse(JSON.parse(mockProviderFlag(mock))),
      },
      userCodexHome: layout.userHome,
      launchDir: layout.launchDir,
      models: [MOCK_MODEL, OTHER_MODEL],
      limits: { idleMs: 600_000, hardMs: 7_200_000, cancelGraceMs: 30_000 },
      statusIntervalMs: 0,
      heartbeatMs: 10_000,
      logger: silentLogger,
      onExit: () => {
        onExitRan = true;
      },
    },
    { clientIn, clientOut, exit: (code) => exited.resolve(code) },
  );
  const client = new Client({ name: 'baton-test', version: '0' });
  await client.connect(new StreamPairTransport(clientIn, clientOut));
  const call = (name: string, args: Record<string, unknown>) =>
    client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }) as Promise<CallToolResult>;

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [
    'codex',
    'codex-cancel',
    'codex-commentary',
    'codex-peek',
    'codex-reply',
    'codex-result',
    'codex-start',
    'codex-status',
  ]);

  mock.push(reply('in-process answer'), reply('in-process job'));
  const res = await call('codex', { prompt: 'hello', cwd: layout.workspace, sandbox: 'read-only' });
  assert.equal(textOf(res), 'in-process answer');
  assert.match((res.structuredContent as { threadId: string }).threadId, /^[0-9a-f-]{36}$/);

  // A background job is a private call on the same Codex, run through the job table.
  const { jobId } = (await call('codex-start', { prompt: 'job', cwd: layout.workspace, sandbox: 'read-only' }))
    .structuredContent as { jobId: string };
  let status = { cursor: 0, done: false, state: 'running' };
  while (!status.done) {
    status = (await call('codex-status', { jobId, cursor: status.cursor, wait_ms: 5_000 })).structuredContent as {
      cursor: number;
      done: boolean;
      state: string;
    };
  }
  assert.equal(status.state, 'completed');
  assert.equal((await call('codex-result', { jobId })).structuredContent?.text, 'in-process job');

  // Closing the client's stream is a clean close: Codex stops, the home hook runs, then exit(0).
  await client.close();
  assert.equal(await exited.promise, 0);
  assert.equal(onExitRan, true);
  assert.deepEqual(codexProcessesUnder(homeDir), [], 'no Codex process is left behind');
});

test('lines of JSON that are not objects on Codex stdout are dropped and logged redacted; the bridge goes on', {
  timeout: 120_000,
}, async () => {
  const clientIn = new PassThrough();
  const clientOut = new PassThrough();
  const exited = Promise.withResolvers<number>();
  const homeDir = join(layout.launchDir, 'tmp', 'codex-homes', 'legacy-not-objects');
  const secret = 'sk-proj-NotAnObjectLine0123456789abcdef';
  const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
  const logger = {
    ...silentLogger,
    warn: (msg: string, fields?: Record<string, unknown>) => warnings.push({ msg, fields }),
  };
  // The real Codex, behind a shell that first writes five such lines to the stdout the bridge reads.
  const lines = ['null', '42', JSON.stringify(`key ${secret}`), '[1,2]', 'true'];
  const linesFile = join(layout.launchDir, 'not-objects.jsonl');
  writeFileSync(linesFile, `${lines.join('\n')}\n`);
  createLegacyBridge(
    {
      command: [
        '/bin/sh',
        '-c',
        'while IFS= read -r l; do printf "%s\\n" "$l"; done <"$0"; exec "$@"',
        linesFile,
        process.execPath,
        bins.codexLegacy(),
      ],
      homeDir,
      settings: {
        model: MOCK_MODEL,
        effort: 'high',
        sandboxMode: 'workspace-write',
        approvalPolicy: 'never',
        workspaceNetwork: true,
        fastMode: false,
        version: parseCodexVersion('0.153.4'),
        modelProvider: codexModelProviderSchema.parse(JSON.parse(mockProviderFlag(mock))),
      },
      userCodexHome: layout.userHome,
      launchDir: layout.launchDir,
      models: [MOCK_MODEL, OTHER_MODEL],
      limits: { idleMs: 600_000, hardMs: 7_200_000, cancelGraceMs: 30_000 },
      statusIntervalMs: 0,
      heartbeatMs: 10_000,
      logger,
      onExit: () => {},
    },
    { clientIn, clientOut, exit: (code) => exited.resolve(code) },
  );
  const client = new Client({ name: 'baton-test', version: '0' });
  await client.connect(new StreamPairTransport(clientIn, clientOut));
  mock.push(reply('still answering'));
  const res = (await client.callTool(
    { name: 'codex', arguments: { prompt: 'hello', cwd: layout.workspace, sandbox: 'read-only' } },
    undefined,
    { timeout: 120_000 },
  )) as CallToolResult;
  assert.equal(textOf(res), 'still answering');

  const dropped = warnings.filter((w) => /not a JSON object/.test(w.msg));
  assert.equal(dropped.length, lines.length, JSON.stringify(warnings));
  const logged = JSON.stringify(dropped);
  assert.ok(!logged.includes(secret), 'the dropped line is logged redacted');
  assert.match(logged, /null/);
  await client.close();
  assert.equal(await exited.promise, 0);
  assert.deepEqual(codexProcessesUnder(homeDir), [], 'no Codex process is left behind');
});
