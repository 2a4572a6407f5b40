// CodexAppServerClient against the real codex app-server (stdio, WebSocket with and without a token, Unix socket),
// pointed at the scripted Responses mock.
import assert from 'node:assert/strict';
import { readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  CodexAppServerClient,
  type CodexAppServerClientOptions,
  CodexAppServerRequestError,
  type CodexServerRequest,
  codexUnixSocketTarget,
  observeCodexUnixSocket,
  requireCodexVersion,
} from '../../../src/index.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import {
  escalatedShellCall,
  httpError,
  malformedStream,
  reply,
  responseFailed,
  stalledReply,
  userTexts,
} from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { binVersions } from '../../support/bins.ts';
import {
  type CodexFixture,
  codexFixture,
  NotificationLog,
  type RunningAppServer,
  startAppServer,
  startResponsesMock,
} from '../../support/codex.ts';
import { until } from '../../support/poll.ts';

const clientInfo = { name: 'baton-test', title: 'baton test', version: '0.0.1' };

function connectStdio(
  server: RunningAppServer,
  log: NotificationLog,
  extra: Partial<CodexAppServerClientOptions> = {},
): CodexAppServerClient {
  return new CodexAppServerClient({
    transport: { type: 'stdio', readable: server.group.child.stdout!, writable: server.group.child.stdin! },
    clientInfo,
    initializeTimeoutMs: 30_000,
    onNotification: log.push,
    ...extra,
  });
}

async function startThread(client: CodexAppServerClient, fixture: CodexFixture): Promise<string> {
  const result = (await client.request('thread/start', {
    cwd: fixture.workdir,
    sandbox: 'workspace-write',
    approvalPolicy: 'never',
  })) as { thread: { id: string } };
  assert.equal(typeof result.thread.id, 'string');
  return result.thread.id;
}

async function runTurn(
  client: CodexAppServerClient,
  log: NotificationLog,
  threadId: string,
  text: string,
  extra: Record<string, unknown> = {},
) {
  const started = (await client.request('turn/start', { threadId, input: [{ type: 'text', text }], ...extra })) as {
    turn: { id: string };
  };
  return log.wait('turn/completed', (p) => (p.turn as { id: string }).id === started.turn.id);
}

describe('over stdio', () => {
  test('connect, fields, thread/start, turns, thread/read, thread/list, interrupt, server requests, close', async (t) => {
    const mock = await startResponsesMock(t);
    const fixture = codexFixture(t, mock);
    const server = await startAppServer(t, fixture);
    const log = new NotificationLog();
    const serverRequests: CodexServerRequest[] = [];
    let closedWith: Error | undefined | 'open' = 'open';
    const client = connectStdio(server, log, {
      onServerRequest: (r) => serverRequests.push(r),
      onClose: (e) => {
        closedWith = e;
      },
    });
    await client.connect();
    assert.equal(client.serverVersion, binVersions.codex());
    assert.equal(requireCodexVersion(client.serverVersion).text, binVersions.codex());
    assert.equal(client.serverCodexHome, fixture.codexHome);
    assert.equal(client.serverPlatformFamily, 'unix');
    assert.equal(client.serverPlatformOs, 'linux');

    // A plain turn: text streamed by the mock comes back as the turn's final agent message.
    mock.push(reply('hello from the mock', { chunks: 4 }));
    const threadId = await startThread(client, fixture);
    const completed = await runTurn(client, log, threadId, 'say hello');
    const turn = completed.turn as { status: string; items: Array<{ type: string; text?: string }> };
    assert.equal(turn.status, 'completed');
    assert.equal(turn.items.find((i) => i.type === 'agentMessage')?.text, 'hello from the mock');
    assert.deepEqual(userTexts(await mock.waitForTurn(0)).slice(-1), ['say hello']);

    const read = (await client.request('thread/read', { threadId, includeTurns: true })) as {
      thread: { id: string; turns: unknown[] };
    };
    assert.equal(read.thread.id, threadId);
    assert.equal(read.thread.turns.length, 1);
    const listed = (await client.request('thread/list', { cwd: fixture.workdir })) as { data: Array<{ id: string }> };
    assert.ok(listed.data.some((th) => th.id === threadId));
    const elsewhere = (await client.request('thread/list', { cwd: fixture.codexHome })) as { data: unknown[] };
    assert.equal(elsewhere.data.length, 0);

    // A server request (the model asks to run a command outside the sandbox, on-request policy) carries an id and a
    // signal; answering it aborts the signal and a second answer finds the id expired.
    mock.push(escalatedShellCall('echo approval-needed'), reply('done after decline'));
    const approvalTurn = runTurn(client, log, threadId, 'run something', { approvalPolicy: 'on-request' });
    const request = await until(() => serverRequests[0], { what: 'an approval request' });
    assert.equal(request.method, 'item/commandExecution/requestApproval');
    assert.equal(request.signal.aborted, false);
    assert.equal(client.respond(request.id, { decision: 'decline' }), true);
    assert.equal(request.signal.aborted, true);
    assert.equal(client.respond(request.id, { decision: 'accept' }), false);
    assert.equal(client.rejectRequest(request.id, -32000, 'too late'), false);
    assert.equal((await approvalTurn).turn && ((await approvalTurn).turn as { status: string }).status, 'completed');

    // Interrupt a stalled turn.
    const gate = new Gate();
    t.after(() => gate.open());
    mock.push(stalledReply(gate));
    const stalled = (await client.request('turn/start', { threadId, input: [{ type: 'text', text: 'stall' }] })) as {
      turn: { id: string };
    };
    await log.wait('item/agentMessage/delta', (p) => p.turnId === stalled.turn.id);
    assert.deepEqual(await client.request('turn/interrupt', { threadId, turnId: stalled.turn.id }), {});
    const interrupted = await log.wait('turn/completed', (p) => (p.turn as { id: string }).id === stalled.turn.id);
    assert.equal((interrupted.turn as { status: string }).status, 'interrupted');

    // Model failures end the turn as failed with Codex's reason: response.failed, a malformed stream, an HTTP error.
    mock.push(responseFailed('the mock model failed'), malformedStream(), httpError(500));
    for (const prompt of ['fail: response.failed', 'fail: malformed stream', 'fail: http 500']) {
      const failed = await runTurn(client, log, threadId, prompt);
      const failedTurn = failed.turn as { status: string; error: { message: string } | null };
      assert.equal(failedTurn.status, 'failed', prompt);
      assert.ok(failedTurn.error?.message, prompt);
    }

    // An unknown method is the server's error, with its code, after dispatch.
    await assert.rejects(client.request('no/such/method', {}), (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.equal(err.dispatched, true);
      assert.equal(typeof err.code, 'number');
      return true;
    });

    // close() ends the streams; the app-server exits on its own (the client never kills it).
    client.close();
    assert.equal(closedWith, undefined);
    assert.equal(client.respond(0, {}), false);
    await assert.rejects(client.request('thread/list', {}), (err: unknown) => {
      assert.ok(err instanceof CodexAppServerRequestError);
      assert.equal(err.dispatched, false);
      return true;
    });
    const exit = await server.group.exited;
    assert.equal(exit.signal, null);
  });

  test('an inbound frame over maxMessageBytes closes the connection', async (t) => {
    const mock = await startResponsesMock(t);
    const fixture = codexFixture(t, mock);
    const server = await startAppServer(t, fixture);
    const log = new NotificationLog();
    let closeError: Error | undefined;
    const client = connectStdio(server, log, {
      maxMessageBytes: 1024,
      onClose: (e) => {
        closeError = e;
      },
    });
    await client.connect();
    // thread/start's answer (the full thread record) is well over 1 KiB.
    await assert.rejects(
      client.request('thread/start', { cwd: fixture.workdir }),
      (err: unknown) => err instanceof CodexAppServerRequestError && err.dispatched,
    );
    assert.match(String(closeError?.message), /exceeds the 1024-byte limit/);
  });
});

describe('over WebSocket', () => {
  test('without a token: connect, thread/start, a turn', async (t) => {
    const mock = await startResponsesMock(t);
    const fixture = codexFixture(t, mock);
    const server = await startAppServer(t, fixture, { listen: 'ws://127.0.0.1:0' });
    const log = new NotificationLog();
    const client = new CodexAppServerClient({
      transport: { type: 'websocket', url: server.url! },
      clientInfo,
      initializeTimeoutMs: 30_000,
      onNotification: log.push,
    });
    t.after(() => client.close());
    await client.connect();
    assert.equal(client.serverCodexHome, fixture.codexHome);
    mock.push(reply('over websocket'));
    const threadId = await startThread(client, fixture);
    const done = await runTurn(client, log, threadId, 'hi');
    assert.equal((done.turn as { status: string }).status, 'completed');

    // The same inbound limit applies to WebSocket messages.
    let closeError: Error | undefined;
    const small = new CodexAppServerClient({
      transport: { type: 'websocket', url: server.url! },
      clientInfo,
      maxMessageBytes: 1024,
      initializeTimeoutMs: 30_000,
      onClose: (e) => {
        closeError = e;
      },
    });
    await small.connect();
    await assert.rejects(
      small.request('thread/read', { threadId, includeTurns: true }),
      (err: unknown) => err instanceof CodexAppServerRequestError && err.dispatched,
    );
    assert.match(String(closeError?.message), /exceeds the 1024-byte limit/);
    // The server and the other client are unaffected.
    assert.ok(await client.request('thread/read', { threadId }));
  });

  test('with a capability token: refused without it, accepted with it', async (t) => {
    const mock = await startResponsesMock(t);
    const fixture = codexFixture(t, mock);
    const token = 'baton-ws-token-0123456789';
    const tokenFile = join(fixture.dir, 'ws-token');
    await writeFile(tokenFile, token, { mode: 0o600 });
    const server = await startAppServer(t, fixture, {
      listen: 'ws://127.0.0.1:0',
      args: ['--ws-auth', 'capability-token', '--ws-token-file', tokenFile],
    });
    const refused = new CodexAppServerClient({ transport: { type: 'websocket', url: server.url! }, clientInfo });
    await assert.rejects(refused.connect(), (err: Error) => {
      assert.match(err.message, /HTTP 401/);
      assert.doesNotMatch(err.message, new RegExp(token));
      return true;
    });
    const client = new CodexAppServerClient({
      transport: { type: 'websocket', url: server.url!, token },
      clientInfo,
      initializeTimeoutMs: 30_000,
    });
    t.after(() => client.close());
    await client.connect();
    assert.equal(client.serverPlatformOs, 'linux');
    assert.ok(await startThread(client, fixture));
  });
});

describe('over a Unix socket', () => {
  test('Codex publishes the derived alias; the client connects through it', async (t) => {
    const mock = await startResponsesMock(t);
    const fixture = codexFixture(t, mock);
    // A path with a space and URL punctuation stays a filesystem path.
    const socketPath = join(fixture.dir, 'app server#1?.sock');
    assert.equal(await observeCodexUnixSocket(socketPath), 'absent');
    const server = await startAppServer(t, fixture, { listen: `unix://${socketPath}` });
    const state = await until(
      async () => {
        try {
          return (await observeCodexUnixSocket(socketPath)) === 'published' ? 'published' : undefined;
        } catch {
          return undefined; // the link or socket is still being created
        }
      },
      { what: 'the published alias' },
    );
    assert.equal(state, 'published');
    assert.equal(await readlink(socketPath), await codexUnixSocketTarget(socketPath));
    const log = new NotificationLog();
    const client = new CodexAppServerClient({
      transport: { type: 'unix', socketPath },
      clientInfo,
      initializeTimeoutMs: 30_000,
      onNotification: log.push,
    });
    t.after(() => client.close());
    await client.connect();
    assert.equal(client.serverVersion, binVersions.codex());
    mock.push(reply('over the unix socket'));
    const threadId = await startThread(client, fixture);
    const done = await runTurn(client, log, threadId, 'hi');
    assert.equal((done.turn as { status: string }).status, 'completed');

    // close() ends only this connection: the daemon keeps running and keeps its alias published.
    client.close();
    assert.equal(isGroupAlive(server.group.pgid), true);
    assert.equal(await observeCodexUnixSocket(socketPath), 'published');
    const again = new CodexAppServerClient({
      transport: { type: 'unix', socketPath },
      clientInfo,
      initializeTimeoutMs: 30_000,
    });
    await again.connect();
    const read = (await again.request('thread/read', { threadId })) as { thread: { id: string } };
    assert.equal(read.thread.id, threadId);
    again.close();
  });
});
