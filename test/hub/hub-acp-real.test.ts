// The hub end to end with the real `gemini --acp` and the real `opencode acp` through the official MCP SDK client over
// Streamable HTTP, each against a mock model the suite owns. Its own file (the scripted ACP agent is in
// hub-acp.test.ts) because it is one of the suite's longest: apart, it runs beside the rest instead of after it.
// Every agent round is a fresh agent process (seconds of CPU for OpenCode), so OpenCode's continue is also the round
// that is cancelled; a continued round that runs to success is asserted on the real opencode in
// test/agents/acp-opencode.test.ts and through the hub in hub-acp.test.ts.

import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ACP_PRESETS } from '../../src/agents/acp/presets.ts';
import { opencodeEnv, startChatMock } from '../mock-models/chat-completions.ts';
import { geminiEnv, startGeminiMock } from '../mock-models/gemini.ts';
import { Gate } from '../mock-models/server.ts';
import { bins } from '../support/bins.ts';
import { call, connectCaller, followToEnd, startHub } from '../support/hub.ts';
import { tempDir } from '../support/tmp.ts';

test('hub + real gemini --acp and opencode acp: run, result, continue (opencode), cancel, list', async (t) => {
  const dir = tempDir(t, 'baton-hub-acp-real-');
  const work = join(dir, 'work');
  // Sibling directories, so the two agents never wait for each other's workspace lock.
  const gWork = join(work, 'g');
  const oWork = join(work, 'o');
  mkdirSync(gWork, { recursive: true });
  mkdirSync(oWork);
  // OpenCode under its usual name, as a user installs it: the hub's start-up probe then asks `opencode --version`
  // instead of starting its ACP mode (the npm package's file is opencode.exe).
  const binDir = join(dir, 'bin');
  mkdirSync(binDir);
  symlinkSync(bins.opencode(), join(binDir, 'opencode'));
  const gemini = await startGeminiMock();
  t.after(() => gemini.close());
  const chat = await startChatMock();
  t.after(() => chat.close());
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      gemini: {
        kind: 'acp',
        command: [process.execPath, bins.gemini(), ...ACP_PRESETS.gemini.command.slice(1)],
        env: geminiEnv(join(dir, 'gemini-home'), gemini),
        cancelGraceMs: 10_000,
      },
      opencode: {
        kind: 'acp',
        command: [join(binDir, 'opencode'), ...ACP_PRESETS['opencode-acp'].command.slice(1)],
        env: opencodeEnv(join(dir, 'oc'), chat),
        cancelGraceMs: 10_000,
      },
    },
  });
  const alice = await connectCaller(t, hub, 'alice');

  gemini.script.push({ type: 'text', chunks: ['gemini ', 'says hi'] });
  chat.script.push({ type: 'text', chunks: ['opencode ', 'says hi'] });
  const g = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'gemini',
    prompt: 'greet',
    cwd: gWork,
    idempotencyKey: 'g-1',
  });
  const o = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'opencode',
    prompt: 'remember the word osprey',
    cwd: oWork,
    idempotencyKey: 'o-1',
  });
  assert.equal((await followToEnd(alice, g.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: g.taskId })).text, 'gemini says hi');
  assert.equal((await followToEnd(alice, o.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: o.taskId })).text, 'opencode says hi');

  // Continue: opencode loads the saved session in a fresh process, so the model sees the first prompt. (Gemini CLI
  // 0.61's session/load cannot find a session saved in the same minute — an upstream bug — so its continue is not
  // exercised here; its cancel is, on a second run.) Both models then hold a streamed answer open and are cancelled.
  const stallG = new Gate();
  const stallO = new Gate();
  t.after(() => {
    stallG.open();
    stallO.open();
  });
  gemini.script.push({ type: 'stall', gate: stallG, before: ['thinking'] });
  chat.script.push({ type: 'stall', gate: stallO, before: ['thinking'] });
  const gs = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'gemini',
    prompt: 'take long',
    cwd: gWork,
    idempotencyKey: 'g-2',
  });
  await call(alice, 'agent_continue', { taskId: o.taskId, prompt: 'which word?', idempotencyKey: 'o-2' });
  await gemini.server.waitForRequest(() => gemini.mainCalls().length >= 2);
  await chat.server.waitForRequest(() => chat.mainCalls().length >= 2);
  const lastCall = chat.mainCalls().at(-1)!;
  assert.match(lastCall.rawBody, /which word\?/);
  assert.match(lastCall.rawBody, /osprey/, 'the continued round carries the earlier history');
  await call(alice, 'agent_cancel', { taskId: gs.taskId });
  await call(alice, 'agent_cancel', { taskId: o.taskId });
  assert.equal((await followToEnd(alice, gs.taskId)).state, 'cancelled');
  assert.equal((await followToEnd(alice, o.taskId)).state, 'cancelled');
  const list = await call<{ tasks: Array<{ taskId: string }> }>(alice, 'agent_list', {});
  assert.deepEqual(
    list.tasks.map((x) => x.taskId),
    [g.taskId, o.taskId, gs.taskId],
  );
});
