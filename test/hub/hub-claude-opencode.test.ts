// The hub delegating to Claude Code (stream-json adapter) and to OpenCode (its HTTP server API) through the official
// MCP SDK client: run → result → continue in the same session → cancel, on the real binaries against the suite's
// Anthropic Messages and chat-completions mocks. OpenCode runs as one warm `opencode serve` the test starts and the hub
// uses through `serverUrl`, instead of a server per round (three here, seconds of CPU each); the server baton starts
// itself — private home, login mirror, resume in a fresh process — is tested in test/attach/opencode-agent.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startOpenCodeServer } from '../../src/agents/opencode/serve.ts';
import { AnthropicMock, isolatedClaudeEnv } from '../mock-models/anthropic.ts';
import { MOCK_MODEL, opencodeEnv, startChatMock } from '../mock-models/chat-completions.ts';
import { Gate } from '../mock-models/server.ts';
import { bins } from '../support/bins.ts';
import { call, connectCaller, followToEnd, startHub, waitForEvent } from '../support/hub.ts';
import { tempDir } from '../support/tmp.ts';

test('hub + claude and opencode (HTTP): run, continue in the same session, cancel', async (t) => {
  const dir = tempDir(t, 'baton-hub-cl-oc-');
  const cWork = join(dir, 'work', 'c');
  const oWork = join(dir, 'work', 'o');
  mkdirSync(cWork, { recursive: true });
  mkdirSync(oWork, { recursive: true });
  const anthropic = await AnthropicMock.start();
  t.after(() => anthropic.close());
  const chat = await startChatMock();
  t.after(() => chat.close());
  const server = await startOpenCodeServer({
    binary: bins.opencode(),
    env: opencodeEnv(join(dir, 'oc'), chat),
    cwd: oWork,
  });
  t.after(() => server.stop());
  const hub = await startHub(
    t,
    {
      dir,
      roots: [join(dir, 'work')],
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
  const alice = await connectCaller(t, hub, 'alice');

  anthropic.script.push({ kind: 'text', text: 'claude remembers kestrel' });
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
    cwd: oWork,
    idempotencyKey: 'o1',
  });
  const cDone = await followToEnd(alice, c.taskId);
  assert.equal(cDone.state, 'succeeded');
  assert.equal(
    (await call<{ text: string }>(alice, 'agent_result', { taskId: c.taskId })).text,
    'claude remembers kestrel',
  );
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
