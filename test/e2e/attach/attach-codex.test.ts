// `baton attach` against the real `codex app-server --listen ws://127.0.0.1:0` (bearer-token WebSocket auth), pointed
// at the suite's Responses mock: list/read/send, per-thread sequencing and the 10-per-thread bound, approvals declined,
// and the timeout path (turn/interrupt acknowledged, terminal reported, queue unlocked) with a stalling model.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CodexAppServerClient } from '../../../src/codex/app-server-client.ts';
import { escalatedShellCall, functionOutputs, reply, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { codexFixture, NotificationLog, startAppServer, startResponsesMock } from '../../support/codex.ts';

const TOKEN = 'planted-codex-remote-token-ab12cd34ef';

test('baton attach against a real codex app-server over WebSocket', async (t) => {
  const mock = await startResponsesMock(t);
  const fixture = codexFixture(t, mock, { approvalPolicy: 'on-request' });
  const tokenFile = join(fixture.dir, 'ws-token');
  writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  const server = await startAppServer(t, fixture, {
    listen: 'ws://127.0.0.1:0',
    args: ['--ws-auth', 'capability-token', '--ws-token-file', tokenFile],
  });
  const url = `${server.url!.replace(/\/$/, '')}/`;

  // A chat that already exists in the server, created by another client (as the user's own Codex would).
  const owner = new CodexAppServerClient({
    transport: { type: 'websocket', url, token: TOKEN },
    clientInfo: { name: 'owner', version: '1' },
    // The library's 5 s default is for a warm server; a first start on a fresh, loaded machine has taken longer.
    initializeTimeoutMs: 30_000,
    onNotification: (n) => log.push(n),
  });
  const log = new NotificationLog();
  await owner.connect();
  const started = (await owner.request('thread/start', { cwd: fixture.workdir })) as { thread: { id: string } };
  const threadId = started.thread.id;
  mock.push(reply('first answer'));
  await owner.request('turn/start', { threadId, input: [{ type: 'text', text: 'hello codex', text_elements: [] }] });
  await log.wait('turn/completed', (p) => p.threadId === threadId);
  owner.close();

  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(REPO_ROOT, 'bin', 'baton.js'), 'attach'],
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      ...NODE_CACHE_ENV,
      HOME: fixture.dir,
      CROSSHARNESS_ALLOWED_SERVER_URLS: url,
      CODEX_REMOTE_TOKEN: TOKEN,
    },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const client = new Client({ name: 'attach-codex-test', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const outputs: string[] = [];
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    outputs.push(JSON.stringify(r));
    return r;
  };
  const ok = async <T>(name: string, args: Record<string, unknown>): Promise<T> => {
    const r = await call(name, args);
    assert.ok(!r.isError, `${name} failed: ${JSON.stringify(r.content)}`);
    return r.structuredContent as T;
  };
  const errorText = async (name: string, args: Record<string, unknown>) => {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r)}`);
    return (r.content as { text: string }[]).map((c) => c.text).join('\n');
  };

  const connection = await ok<{ connectionId: string }>('connect_harness', {
    harness: 'codex',
    serverUrl: url,
    directory: fixture.workdir,
  });
  const id = connection.connectionId;

  await t.test('lists and reads the chats of the directory', async () => {
    const { chats } = await ok<{ chats: { chatId: string }[] }>('list_chats', { connectionId: id, limit: 10 });
    assert.deepEqual(
      chats.map((c) => c.chatId),
      [threadId],
    );
    const { chat } = await ok<{ chat: { messages: { role: string; text: string }[] } }>('read_chat', {
      connectionId: id,
      chatId: threadId,
    });
    assert.deepEqual(
      chat.messages.map((m) => [m.role, m.text]),
      [
        ['user', 'hello codex'],
        ['assistant', 'first answer'],
      ],
    );
  });

  await t.test('send_message runs a turn in the thread and returns the final answer', async () => {
    mock.push(reply('second answer'));
    const sent = await ok<{ reply: string }>('send_message', { connectionId: id, chatId: threadId, message: 'again' });
    assert.equal(sent.reply, 'second answer');
  });

  await t.test('approval requests are declined, never granted', async () => {
    const marker = join(fixture.workdir, 'should-not-exist');
    mock.push(escalatedShellCall(`touch ${marker}`, 'call_declined'), reply('done without running it'));
    const sent = await ok<{ reply: string }>('send_message', { connectionId: id, chatId: threadId, message: 'touch' });
    assert.equal(sent.reply, 'done without running it');
    const outputs = functionOutputs(mock.turns.at(-1)!);
    assert.match(JSON.stringify(outputs.get('call_declined')), /reject|declin|denied/i);
    assert.equal(existsSync(marker), false);
  });

  await t.test('a timed-out turn is interrupted, acknowledged and terminal; the thread stays usable', async () => {
    const gate = new Gate();
    const before = mock.turns.length;
    mock.push(stalledReply(gate));
    const text = await errorText('send_message', {
      connectionId: id,
      chatId: threadId,
      message: 'slow',
      timeoutSeconds: 1,
    });
    assert.match(text, /no reply within 1 s; the turn was interrupted/);
    assert.equal(mock.turns.length, before + 1, 'sent once, never retried');
    gate.open();
    mock.push(reply('after the interrupt'));
    const sent = await ok<{ reply: string }>('send_message', {
      connectionId: id,
      chatId: threadId,
      message: 'still there?',
    });
    assert.equal(sent.reply, 'after the interrupt');
  });

  await t.test('cancelling a foreground send interrupts its turn and unlocks the thread', async () => {
    const gate = new Gate();
    const before = mock.turns.length;
    mock.push(stalledReply(gate));
    const ac = new AbortController();
    const pending = client.callTool(
      { name: 'send_message', arguments: { connectionId: id, chatId: threadId, message: 'cancel me' } },
      undefined,
      { signal: ac.signal },
    );
    await mock.waitForTurn(before);
    ac.abort();
    await assert.rejects(pending);
    mock.push(reply('after the cancel'));
    // The interrupt runs in the server after the cancel; the next send waits behind it on the same thread.
    const sent = await ok<{ reply: string }>('send_message', { connectionId: id, chatId: threadId, message: 'next' });
    assert.equal(sent.reply, 'after the cancel');
    assert.equal(mock.turns.length, before + 2);
    gate.open();
  });

  await t.test('sends to one thread are sequenced and bounded at 10 queued or active', async () => {
    const gate = new Gate();
    const before = mock.turns.length;
    mock.push(stalledReply(gate, 'one'));
    const dispatches: string[] = [];
    for (let i = 0; i < 10; i++) {
      const dispatch = await ok<{ dispatchId: string }>('send_message_async', {
        connectionId: id,
        chatId: threadId,
        message: `queued ${i}`,
      });
      dispatches.push(dispatch.dispatchId);
    }
    assert.match(
      await errorText('send_message_async', { connectionId: id, chatId: threadId, message: 'eleventh' }),
      /already has 10 queued or active sends; nothing was sent/,
    );
    await mock.waitForTurn(before);
    assert.equal(mock.turns.length, before + 1, 'only the first send reached the model while it stalls');
    gate.open();
    for (const d of dispatches) {
      const dispatch = await ok<{ status: string }>('check_reply', {
        dispatchId: d,
        waitSeconds: 60,
      });
      assert.equal(dispatch.status, 'completed');
    }
    assert.equal(mock.turns.length, before + 10);
  });

  await t.test('disconnect closes the socket; nothing leaked the token', async () => {
    await ok('disconnect_harness', { connectionId: id });
    assert.deepEqual((await ok<{ connections: unknown[] }>('list_connections', {})).connections, []);
    for (const text of [...outputs, stderr]) assert.ok(!text.includes(TOKEN), 'the bearer token leaked');
  });
});
