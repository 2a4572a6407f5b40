// Everything that uses an `opencode serve` the user runs, sharing ONE warm server (and one chat-completions mock) for
// the file: an OpenCode start costs seconds of CPU (its first message more), so the three parts that each started their
// own now share it, and work in one project directory (OpenCode boots an instance per directory). The attach part
// runs first: it lists that directory's sessions and expects only its own.
// - The hub delegating to Claude Code (stream-json adapter) and to OpenCode (its HTTP server API, `serverUrl`) through
//   the official MCP SDK client: run → result → continue in the same session → cancel, on the real binaries against the
//   suite's Anthropic Messages and chat-completions mocks.
// - The OpenCode hub agent (AG-3) on that server: probe by health, a round in the task directory.
// - `baton attach` end to end: the official MCP SDK v2 client at 2026-07-28 over stdio drives a real `baton attach`
//   child, which talks to the server. One attach child for its tests.
// The server baton starts itself — private home, login mirror, resume in a fresh process — is tested in
// test/e2e/attach/opencode-agent.ts, a part this file imports last (its tests run after these, on servers of their own).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { type StartedOpenCodeServer, startOpenCodeServer } from '../../../src/agents/opencode/serve.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { ConnectionRegistry } from '../../../src/faces/attach/connections.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { type ChatMock, MOCK_MODEL, opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins, NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { call, connectCaller, followToEnd, startHub, waitForEvent } from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { type StdioClient, spawnStdioClient } from '../../support/stdio-client.ts';
import { tempDir } from '../../support/tmp.ts';

let mock: ChatMock;
let opencode: StartedOpenCodeServer;
let root: string;
/** The one directory every part works in: OpenCode boots a project instance per directory (seconds of CPU each). */
let project: string;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'baton-oc-user-server-'));
  project = join(root, 'project');
  mkdirSync(project);
  mock = await startChatMock({ type: 'text', chunks: ['fallback'] });
  opencode = await startOpenCodeServer({
    binary: bins.opencode(),
    env: opencodeEnv(join(root, 'oc'), mock),
    cwd: project,
    printLogs: true,
  });
});

after(async () => {
  if (process.env.DEBUG_OPENCODE) console.error(opencode?.logTail());
  await opencode?.stop();
  await mock?.close();
  rmSync(root, { recursive: true, force: true });
});

const PLANTED_CODEX_TOKEN = 'planted-codex-remote-token-4c1e9a';

let attach: StdioClient;
let client: Client;
let otherProject: string;
const outputs: string[] = [];

async function attachCall(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = await client.callTool({ name, arguments: args });
  outputs.push(JSON.stringify(result));
  return result;
}

async function ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
  const result = await attachCall(name, args);
  assert.ok(!result.isError, `${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as T;
}

/** Schema violations are JSON-RPC -32602 errors from the standalone server, never tool results (SE-4). */
async function invalid(name: string, args: Record<string, unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(client.callTool({ name, arguments: args }), (err: Error & { code?: number }) => {
    outputs.push(err.message);
    assert.equal(err.code, -32602);
    assert.match(err.message, pattern);
    return true;
  });
}

async function fails(name: string, args: Record<string, unknown>, pattern: RegExp): Promise<string> {
  const result = await attachCall(name, args);
  assert.equal(result.isError, true, `${name} should fail: ${JSON.stringify(result)}`);
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  assert.match(text, pattern);
  return text;
}

describe('baton attach against a real opencode serve', () => {
  before(async () => {
    otherProject = join(root, 'other');
    mkdirSync(otherProject);
    attach = await spawnStdioClient({
      command: process.execPath,
      args: [join(REPO_ROOT, 'bin', 'baton.js'), 'attach'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...NODE_CACHE_ENV,
        HOME: join(root, 'attach-home'),
        BATON_ALLOWED_SERVER_URLS: `${opencode.url},ws://127.0.0.1:1/`,
        OPENCODE_SERVER_PASSWORD: opencode.password,
        CODEX_REMOTE_TOKEN: PLANTED_CODEX_TOKEN,
      },
    });
    client = attach.client;
  });

  after(async () => {
    await client?.close();
    // SE-1: no planted or generated credential anywhere in what the child said.
    const everything = [...outputs, attach?.stderr() ?? ''].join('\n');
    const basic = Buffer.from(`opencode:${opencode.password}`).toString('base64');
    for (const secret of [opencode.password, basic, PLANTED_CODEX_TOKEN])
      assert.ok(!everything.includes(secret), 'a credential leaked into tool output or stderr');
  });

  test('lists exactly the nine tools with strict input schemas', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'check_reply',
      'connect_harness',
      'connection_status',
      'disconnect_harness',
      'list_chats',
      'list_connections',
      'read_chat',
      'send_message',
      'send_message_async',
    ]);
    for (const t of tools) assert.equal(t.inputSchema.additionalProperties, false, t.name);
    const send = tools.find((t) => t.name === 'send_message')!.inputSchema.properties as Record<
      string,
      { minimum?: number; maximum?: number }
    >;
    assert.equal(send.timeoutSeconds?.minimum, 1);
    assert.equal(send.timeoutSeconds?.maximum, 3600);
  });

  test('connect refuses Claude Code, unlisted origins and URLs with paths; one connection per origin and directory', async () => {
    await fails(
      'connect_harness',
      { harness: 'claude-code', serverUrl: opencode.url, directory: project },
      /no URL-addressable/,
    );
    await fails(
      'connect_harness',
      { harness: 'opencode', serverUrl: 'http://127.0.0.1:9/', directory: project },
      /not in the allowlist/,
    );
    await fails(
      'connect_harness',
      { harness: 'opencode', serverUrl: `${opencode.url}session`, directory: project },
      /no path/,
    );
    await fails('connect_harness', { harness: 'opencode', serverUrl: opencode.url, directory: 'relative' }, /absolute/);
    await invalid(
      'connect_harness',
      { harness: 'opencode', serverUrl: opencode.url, directory: project, password: 'x' },
      /unknown argument\(s\) "password"/,
    );
    await invalid('connect_harness', { harness: 'gemini', serverUrl: opencode.url, directory: project }, /harness/);
  });

  test('lists, reads and sends in the connection directory only; async dispatches and check_reply', async () => {
    const mine = await opencode.client.createSession({ title: 'mine' }, { directory: project });
    const theirs = await opencode.client.createSession({ title: 'theirs' }, { directory: otherProject });
    const leaky = await opencode.client.createSession({ title: 'leaky' }, { directory: project });
    const connection = await ok<{ connectionId: string; serverUrl: string }>('connect_harness', {
      harness: 'opencode',
      serverUrl: opencode.url.slice(0, -1),
      directory: project,
    });
    const id = connection.connectionId;
    assert.equal(connection.serverUrl, opencode.url);
    await fails(
      'connect_harness',
      { harness: 'opencode', serverUrl: opencode.url, directory: project },
      /already exists/,
    );

    const { connections } = await ok<{ connections: unknown[] }>('list_connections', {});
    assert.equal(connections.length, 1);

    const { chats } = await ok<{ chats: { chatId: string; directory: string }[] }>('list_chats', { connectionId: id });
    assert.deepEqual(chats.map((c) => c.chatId).sort(), [mine.id, leaky.id].sort());
    await fails('read_chat', { connectionId: id, chatId: theirs.id }, /does not belong/);
    await fails('send_message', { connectionId: id, chatId: theirs.id, message: 'hi' }, /does not belong/);

    mock.script.push({ type: 'text', chunks: ['Hello ', 'from ', 'OpenCode'] });
    const sent = await ok<{ reply: string; chatId: string }>('send_message', {
      connectionId: id,
      chatId: mine.id,
      message: 'say hello',
    });
    assert.equal(sent.reply, 'Hello from OpenCode');

    // A reply quoting the server password comes back redacted, in the text and the structured result (SE-1).
    mock.script.push({ type: 'text', chunks: [`the password is ${opencode.password}`] });
    const quoted = await ok<{ reply: string }>('send_message', {
      connectionId: id,
      chatId: leaky.id,
      message: 'leak it',
    });
    assert.equal(quoted.reply, 'the password is [redacted]');

    const { chat } = await ok<{ chat: { messages: { role: string; text: string }[] } }>('read_chat', {
      connectionId: id,
      chatId: mine.id,
    });
    assert.deepEqual(
      chat.messages.map((m) => [m.role, m.text]),
      [
        ['user', 'say hello'],
        ['assistant', 'Hello from OpenCode'],
      ],
    );

    mock.script.push({ type: 'text', chunks: ['async ', 'reply'] });
    const dispatch = await ok<{ dispatchId: string; status: string }>('send_message_async', {
      connectionId: id,
      chatId: mine.id,
      message: 'later please',
    });
    assert.equal(dispatch.status, 'working');
    const checked = await ok<{ status: string; reply?: { reply: string } }>('check_reply', {
      connectionId: id,
      dispatchId: dispatch.dispatchId,
      waitSeconds: 60,
    });
    assert.equal(checked.status, 'completed');
    assert.equal(checked.reply?.reply, 'async reply');

    const status = await ok<{ health: { healthy: boolean; version: string } }>('connection_status', {
      connectionId: id,
    });
    assert.deepEqual(status.health, { healthy: true, version: opencode.version });

    const base = { connectionId: id, chatId: mine.id, message: 'x' };
    await invalid('send_message', { ...base, timeoutSeconds: 0 }, /timeoutSeconds/);
    await invalid('send_message', { ...base, timeoutSeconds: 3601 }, /timeoutSeconds/);
    await invalid('send_message_async', { ...base, timeoutSeconds: 1.5 }, /timeoutSeconds/);
    await invalid('check_reply', { dispatchId: dispatch.dispatchId, waitSeconds: 61 }, /waitSeconds/);
    await invalid('check_reply', { dispatchId: dispatch.dispatchId, waitSeconds: -1 }, /waitSeconds/);
    await invalid('list_chats', { connectionId: id, limit: 0 }, /limit/);
    await invalid('send_message', { connectionId: id, chatId: mine.id }, /message/);

    await ok('disconnect_harness', { connectionId: id });
    await fails('list_chats', { connectionId: id }, /unknown connectionId/);
    // Dispatch records outlive their connection.
    const again = await ok<{ status: string }>('check_reply', { dispatchId: dispatch.dispatchId });
    assert.equal(again.status, 'completed');
  });

  test('a local timeout reports that the server may still run the turn and is never retried', async () => {
    const session = await opencode.client.createSession({ title: 'slow' }, { directory: project });
    const connection = await ok<{ connectionId: string }>('connect_harness', {
      harness: 'opencode',
      serverUrl: opencode.url,
      directory: project,
    });
    const gate = new Gate();
    const before = mock.mainCalls().length;
    mock.script.push({ type: 'stall', gate, before: ['partial '] });
    await fails(
      'send_message',
      { connectionId: connection.connectionId, chatId: session.id, message: 'take your time', timeoutSeconds: 1 },
      /may still have queued or started the turn/,
    );
    // The local 1 s timeout can pass before OpenCode has asked the model (at a load of 30 it did): the turn still
    // reaches the model, once, so that is awaited under a deadline before it is counted.
    const calls = await until(() => mock.mainCalls().length, {
      what: 'the turn to reach the model',
      ok: (n) => n > before,
    });
    assert.equal(calls, before + 1, 'the model saw the turn exactly once');
    // Nothing aborted the session: the server is still running the turn.
    const status = await opencode.client.sessionStatus({ directory: project });
    assert.equal(status[session.id]?.type, 'busy');
    gate.open();
    await ok('disconnect_harness', { connectionId: connection.connectionId });
    assert.equal(mock.mainCalls().length, before + 1, 'never retried');
  });

  test('a wrong password is refused with a hint and without the password (library registry)', async () => {
    const wrong = 'wrong-password-planted-77aa';
    const registry = new ConnectionRegistry({
      allowedServerUrls: [opencode.url],
      openCodeCredentials: { serverUrl: opencode.url, password: wrong },
      env: {},
    });
    await assert.rejects(registry.connect('opencode', opencode.url, project), (err: Error) => {
      outputs.push(err.message);
      assert.match(err.message, /HTTP 401.*OPENCODE_SERVER_PASSWORD/);
      assert.ok(!err.message.includes(wrong));
      return true;
    });
  });
});

describe('hub + claude and opencode on a server the user runs', () => {
  test('hub + claude and opencode (HTTP): run, continue in the same session, cancel', async (t) => {
    const server = opencode;
    const chat = mock;
    const dir = tempDir(t, 'baton-hub-cl-oc-');
    const cWork = join(dir, 'work', 'c');
    mkdirSync(cWork, { recursive: true });
    const anthropic = await AnthropicMock.start();
    t.after(() => anthropic.close());
    const hub = await startHub(
      t,
      {
        dir,
        roots: [join(dir, 'work'), project],
        agents: {
          claude: { kind: 'claude', command: bins.claude() },
          opencode: {
            kind: 'opencode',
            binary: bins.opencode(),
            serverUrl: server.url,
            model: `mock/${MOCK_MODEL}`,
            cancelGraceMs: 5_000,
          },
        },
      },
      {
        ...isolatedClaudeEnv(anthropic.server.origin, join(dir, 'claude-user')),
        OPENCODE_SERVER_USERNAME: server.username,
        OPENCODE_SERVER_PASSWORD: server.password,
      },
    );
    // The hub's start-up probe of Claude Code (its --version and login, no inference), as the preflight table
    // `baton serve` prints it.
    const claudeRow = hub
      .output()
      .split('\n')
      .map((line) => line.split(/ +/))
      .find((cells) => cells[1] === 'claude');
    assert.deepEqual(claudeRow?.slice(0, 4), ['ok', 'claude', 'claude', bins.claude()]);
    assert.match(claudeRow?.[4] ?? '', /^\d+\.\d+\.\d+$/);
    assert.equal(claudeRow?.[5], 'ok', 'logged in');
    assert.equal(anthropic.server.requests.length, 0, 'the probe spent no inference');
    const alice = await connectCaller(t, hub, 'alice');

    // Claude's first round writes a file first: a hub task is a workspace-write session (the hub's delegation policy).
    anthropic.script.push(
      { kind: 'tool_use', name: 'Write', input: { file_path: join(cWork, 'made.txt'), content: 'made by claude\n' } },
      { kind: 'text', text: 'claude remembers kestrel' },
    );
    chat.script.push({ type: 'text', chunks: ['opencode remembers ', 'plover'] });
    const c = await call<{ taskId: string }>(alice, 'agent_run', {
      agent: 'claude',
      prompt: 'remember kestrel',
      cwd: cWork,
      idempotencyKey: 'c1',
    });
    const o = await call<{ taskId: string }>(alice, 'agent_run', {
      agent: 'opencode',
      prompt: 'remember plover',
      cwd: project,
      idempotencyKey: 'o1',
    });
    const cDone = await followToEnd(alice, c.taskId);
    assert.equal(cDone.state, 'succeeded');
    assert.equal(
      (await call<{ text: string }>(alice, 'agent_result', { taskId: c.taskId })).text,
      'claude remembers kestrel',
    );
    assert.equal(readFileSync(join(cWork, 'made.txt'), 'utf8'), 'made by claude\n');
    assert.deepEqual(
      cDone.events.filter((e) => e.kind === 'tool').map((e) => [e.phase, e.family, e.ok]),
      [
        ['start', 'patch', undefined],
        ['end', 'patch', true],
      ],
    );
    const offered = (anthropic.messageRequests[0]?.tools ?? []).map((x) => x.name);
    assert.ok(offered.includes('Edit') && !offered.includes('Agent') && !offered.includes('Task'), offered.join());
    // Claude's answer streams as message events (its partial-message text deltas).
    assert.equal(
      cDone.events
        .filter((e) => e.kind === 'message')
        .map((e) => e.text)
        .join(''),
      'claude remembers kestrel',
    );
    assert.equal((await followToEnd(alice, o.taskId)).state, 'succeeded');
    assert.equal(
      (await call<{ text: string }>(alice, 'agent_result', { taskId: o.taskId })).text,
      'opencode remembers plover',
    );

    anthropic.script.push({ kind: 'text', text: 'it was kestrel' });
    chat.script.push({ type: 'text', chunks: ['it was plover'] });
    await call(alice, 'agent_continue', { taskId: c.taskId, prompt: 'which bird?', idempotencyKey: 'c2' });
    await call(alice, 'agent_continue', { taskId: o.taskId, prompt: 'which bird?', idempotencyKey: 'o2' });
    assert.equal((await followToEnd(alice, c.taskId)).state, 'succeeded');
    assert.equal((await followToEnd(alice, o.taskId)).state, 'succeeded');
    assert.match(
      JSON.stringify(anthropic.messageRequests.at(-1)?.messages),
      /remember kestrel/,
      'claude resumed its session',
    );
    assert.match(chat.mainCalls().at(-1)!.rawBody, /remember plover/, 'opencode continued in its session');

    const gc = new Gate();
    const go = new Gate();
    t.after(() => {
      gc.open();
      go.open();
    });
    anthropic.script.push({ kind: 'stall', gate: gc, text: 'thinking\n' });
    chat.script.push({ type: 'stall', gate: go, before: ['thinking\n'] });
    const claudeCalls = anthropic.messageRequests.length;
    const chatCalls = chat.mainCalls().length;
    await call(alice, 'agent_continue', { taskId: c.taskId, prompt: 'slow', idempotencyKey: 'c3' });
    await call(alice, 'agent_continue', { taskId: o.taskId, prompt: 'slow', idempotencyKey: 'o3' });
    await anthropic.server.waitForRequest(() => anthropic.messageRequests.length > claudeCalls);
    await chat.server.waitForRequest(() => chat.mainCalls().length > chatCalls);
    await waitForEvent(alice, c.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
    // Both stream their answer (Claude's partial messages, OpenCode's message.part.delta): the line is visible while the
    // model holds the rest back.
    for (const taskId of [c.taskId, o.taskId]) {
      await waitForEvent(alice, taskId, (e) => e.kind === 'message' && e.text === 'thinking\n');
      const partial = await call<{ state: string; partial?: boolean; text: string }>(alice, 'agent_result', { taskId });
      assert.deepEqual([partial.state, partial.partial, partial.text], ['running', true, 'thinking\n']);
    }
    await call(alice, 'agent_cancel', { taskId: c.taskId });
    await call(alice, 'agent_cancel', { taskId: o.taskId });
    assert.equal((await followToEnd(alice, c.taskId)).state, 'cancelled');
    assert.equal((await followToEnd(alice, o.taskId)).state, 'cancelled');
  });
});

describe('opencode hub agent on a server the user runs (AG-3)', () => {
  // The last user of the user's server: stopped here, so it does not idle (and spend CPU) through the part below.
  after(() => opencode?.stop());

  async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
    const out: AgentEvent[] = [];
    for await (const e of events) out.push(e);
    return out;
  }

  test('probe checks health and a round runs in that server, in the task directory', async (t) => {
    const userRoot = tempDir(t, 'baton-oc-user-');
    const saved = { password: process.env.OPENCODE_SERVER_PASSWORD, username: process.env.OPENCODE_SERVER_USERNAME };
    process.env.OPENCODE_SERVER_PASSWORD = opencode.password;
    process.env.OPENCODE_SERVER_USERNAME = opencode.username;
    t.after(() => {
      if (saved.password === undefined) delete process.env.OPENCODE_SERVER_PASSWORD;
      else process.env.OPENCODE_SERVER_PASSWORD = saved.password;
      if (saved.username === undefined) delete process.env.OPENCODE_SERVER_USERNAME;
      else process.env.OPENCODE_SERVER_USERNAME = saved.username;
    });
    const remote = createAgent(
      'remote',
      { kind: 'opencode', binary: bins.opencode(), serverUrl: opencode.url },
      { stateDir: join(userRoot, 'state'), logger: silentLogger },
    );
    const probe = await remote.probe();
    assert.equal(probe.available, true);
    assert.equal(probe.version, opencode.version);
    // The server names its version, so the probe starts no local binary (a tripwire script stands in for it here).
    const marker = join(userRoot, 'binary-ran');
    const tripwire = join(userRoot, 'opencode');
    writeFileSync(tripwire, `#!/bin/sh\ntouch '${marker}'\necho 9.9.9\n`, { mode: 0o755 });
    const healthOnly = await createAgent(
      'remote',
      { kind: 'opencode', binary: tripwire, serverUrl: opencode.url },
      { stateDir: join(userRoot, 'state'), logger: silentLogger },
    ).probe();
    assert.deepEqual([healthOnly.available, healthOnly.version], [true, opencode.version]);
    assert.equal(existsSync(marker), false, 'the binary was not started');
    // A server that does not answer is reported with its URL, and the binary is asked for its version instead.
    const down = await createAgent(
      'down',
      { kind: 'opencode', binary: tripwire, serverUrl: 'http://127.0.0.1:1/' },
      { stateDir: join(userRoot, 'state'), logger: silentLogger },
    ).probe();
    assert.equal(down.available, false);
    assert.equal(down.version, '9.9.9');
    assert.match(down.detail ?? '', /^server http:\/\/127\.0\.0\.1:1\/: /);
    // Without a server URL (baton starts `opencode serve` itself) the probe is the binary's --version alone; the real
    // binary's answer is read by the hub's probe in test/e2e/hub/hub-acp-real.test.ts.
    const local = await createAgent(
      'local',
      { kind: 'opencode', binary: tripwire },
      { stateDir: join(userRoot, 'state'), logger: silentLogger },
    ).probe();
    assert.deepEqual([local.available, local.version, local.detail], [true, '9.9.9', undefined]);

    mock.script.push({ type: 'text', chunks: ['from the user server'] });
    const session = await remote.openSession({
      cwd: project,
      sandbox: 'workspace-write',
      signal: new AbortController().signal,
    });
    const events = await collect(session.turn('hello', { signal: new AbortController().signal }));
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.deepEqual(
      events.filter((e) => e.kind === 'message'),
      [{ kind: 'message', text: 'from the user server' }],
    );
    const listed = await opencode.client.listSessions({ directory: project });
    assert.ok(listed.some((s) => s.id === session.id));
    await session.close();
    assert.equal((await opencode.client.health()).healthy, true, 'closing the session leaves the user server running');
  });
});

// The OpenCode hub agent on servers baton starts itself: registered after this file's own tests, so it runs after
// them (a static import would run it first, with the user's server idling through it).
await import('./opencode-agent.ts');
