// `baton attach` end to end: the official MCP SDK v2 client at 2026-07-28 over stdio drives a real `baton attach` child, which talks to
// a real `opencode serve` pointed at the suite's chat-completions mock. One opencode and one attach child for the file.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import { type StartedOpenCodeServer, startOpenCodeServer } from '../../src/agents/opencode/serve.ts';
import { ConnectionRegistry } from '../../src/faces/attach/connections.ts';
import { type ChatMock, opencodeEnv, startChatMock } from '../mock-models/chat-completions.ts';
import { Gate } from '../mock-models/server.ts';
import { bins, NODE_CACHE_ENV, REPO_ROOT } from '../support/bins.ts';
import { type StdioClient, spawnStdioClient } from '../support/stdio-client.ts';

const PLANTED_CODEX_TOKEN = 'planted-codex-remote-token-4c1e9a';

let mock: ChatMock;
let opencode: StartedOpenCodeServer;
let attach: StdioClient;
let client: Client;
let root: string;
let project: string;
let otherProject: string;
const outputs: string[] = [];

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = await client.callTool({ name, arguments: args });
  outputs.push(JSON.stringify(result));
  return result;
}

async function ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T> {
  const result = await call(name, args);
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
  const result = await call(name, args);
  assert.equal(result.isError, true, `${name} should fail: ${JSON.stringify(result)}`);
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  assert.match(text, pattern);
  return text;
}

describe('baton attach against a real opencode serve', () => {
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'baton-attach-oc-'));
    project = join(root, 'project');
    otherProject = join(root, 'other');
    mkdirSync(project);
    mkdirSync(otherProject);
    mock = await startChatMock({ type: 'text', chunks: ['fallback'] });
    opencode = await startOpenCodeServer({
      binary: bins.opencode(),
      env: opencodeEnv(root, mock),
      cwd: project,
      printLogs: true,
    });
    attach = await spawnStdioClient({
      command: process.execPath,
      args: [join(REPO_ROOT, 'bin', 'baton.js'), 'attach'],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...NODE_CACHE_ENV,
        HOME: root,
        BATON_ALLOWED_SERVER_URLS: `${opencode.url},ws://127.0.0.1:1/`,
        OPENCODE_SERVER_PASSWORD: opencode.password,
        CODEX_REMOTE_TOKEN: PLANTED_CODEX_TOKEN,
      },
    });
    client = attach.client;
  });

  after(async () => {
    if (process.env.DEBUG_OPENCODE) console.error(opencode?.logTail());
    await client?.close();
    await opencode?.stop();
    await mock?.close();
    rmSync(root, { recursive: true, force: true });
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
    assert.equal(mock.mainCalls().length, before + 1, 'the model saw the turn exactly once');
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
