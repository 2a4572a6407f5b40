// A part of opencode-user-server.test.ts, which imports it: one test process for both files' OpenCode starts.
// The OpenCode hub agent (AG-3) against the real `opencode serve` baton starts itself, pointed at the suite's
// chat-completions mock: text, tool lifecycle, usage, cancel (abort) and resume of a saved session. The agent on a server
// the user runs (`serverUrl`) shares that file's warm server in opencode-user-server.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { type ChatMock, opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';

let mock: ChatMock;
let root: string;
let project: string;
let agentEnv: Record<string, string>;

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

function agent() {
  return createAgent(
    'oc',
    { kind: 'opencode', binary: bins.opencode(), model: 'mock/mock-model', env: agentEnv },
    { stateDir: join(root, 'state'), logger: silentLogger },
  );
}

describe('opencode hub agent (AG-3)', () => {
  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'baton-oc-agent-'));
    project = join(root, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'notes.txt'), 'the notes\n');
    writeFileSync(join(root, 'outside.txt'), 'outside the project\n');
    mock = await startChatMock({ type: 'text', chunks: ['fallback'] });
    // Only the OpenCode switches and the inline mock config: HOME and XDG dirs are the agent's own isolated ones.
    agentEnv = Object.fromEntries(
      Object.entries(opencodeEnv(join(root, 'scratch'), mock)).filter(([k]) => k.startsWith('OPENCODE_')),
    );
  });

  after(async () => {
    await mock?.close();
    rmSync(root, { recursive: true, force: true });
  });

  // The probe (the binary's --version, no inference) costs a full OpenCode start of its own, so it is asserted without
  // one here: the real opencode's --version is read by the hub's probe in test/e2e/hub/hub-acp-real.test.ts, and this
  // kind's probe asks its binary (a script there) in test/e2e/attach/opencode-user-server.test.ts.

  test('a round streams tool lifecycle, usage and the final message; cancel aborts; resume continues the session', async (t) => {
    // The user's OpenCode login (AG-9): copied into the private home, written back on close if opencode rotated it.
    const userAuth = join(root, 'user-data', 'opencode', 'auth.json');
    mkdirSync(join(root, 'user-data', 'opencode'), { recursive: true });
    writeFileSync(userAuth, JSON.stringify({ mock: { type: 'api', key: 'login-1' } }));
    const savedDataHome = process.env.XDG_DATA_HOME;
    process.env.XDG_DATA_HOME = join(root, 'user-data');
    t.after(() => {
      if (savedDataHome === undefined) delete process.env.XDG_DATA_HOME;
      else process.env.XDG_DATA_HOME = savedDataHome;
    });
    const a = agent();
    const session = await a.openSession({
      cwd: project,
      sandbox: 'workspace-write',
      signal: new AbortController().signal,
    });
    assert.match(session.id ?? '', /^ses_/);
    const home = join(root, 'state', 'homes', 'opencode', 'oc');
    assert.equal(statSync(home).mode & 0o777, 0o700);
    const privateAuth = join(home, 'data', 'opencode', 'auth.json');
    assert.equal(readFileSync(privateAuth, 'utf8'), readFileSync(userAuth, 'utf8'));
    assert.equal(statSync(privateAuth).mode & 0o777, 0o600);

    mock.script.push(
      { type: 'toolCall', name: 'read', args: { filePath: join(project, 'notes.txt') } },
      { type: 'text', chunks: ['I read ', 'the notes.'] },
    );
    const events = await collect(session.turn('read the notes', { signal: new AbortController().signal }));
    const kinds = events.map((e) => e.kind);
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.deepEqual(
      events.filter((e) => e.kind === 'tool'),
      [
        { kind: 'tool', phase: 'start', family: 'other' },
        { kind: 'tool', phase: 'end', family: 'other', ok: true },
      ],
    );
    assert.ok(kinds.includes('usage'));
    assert.deepEqual(
      events.filter((e) => e.kind === 'message'),
      [{ kind: 'message', text: 'I read the notes.' }],
    );
    const body = mock.mainCalls().at(-1)!.body as { model?: string };
    assert.equal(body.model, 'mock-model', 'the configured model is passed with the message');

    // A read outside the project needs OpenCode's external_directory permission: denied and reported (TE-11).
    mock.script.push(
      { type: 'toolCall', name: 'read', args: { filePath: join(root, 'outside.txt') } },
      { type: 'text', chunks: ['could not read it'] },
    );
    const denied = await collect(session.turn('read the outside file', { signal: new AbortController().signal }));
    assert.deepEqual(denied.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.deepEqual(
      denied.filter((e) => e.kind === 'permission'),
      [{ kind: 'permission', decision: 'denied', what: 'external_directory' }],
    );
    assert.deepEqual(
      denied.filter((e) => e.kind === 'tool'),
      [
        { kind: 'tool', phase: 'start', family: 'other' },
        { kind: 'tool', phase: 'end', family: 'other', ok: false },
      ],
    );

    const gate = new Gate();
    mock.script.push({ type: 'stall', gate, before: ['partial'] });
    const cancel = new AbortController();
    const stalled = mock.mainCalls().length;
    const turn = collect(session.turn('take forever', { signal: cancel.signal }));
    await mock.server.waitForRequest(() => mock.mainCalls().length > stalled);
    cancel.abort();
    const cancelled = await turn;
    assert.deepEqual(cancelled.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
    gate.open();
    const id = session.id!;
    const rotated = JSON.stringify({ mock: { type: 'api', key: 'login-2' } });
    writeFileSync(privateAuth, rotated);
    await session.close();
    assert.equal(readFileSync(userAuth, 'utf8'), rotated, 'the rotated login is written back once opencode exited');

    mock.script.push({ type: 'text', chunks: ['still here'] });
    const resumed = await a.openSession({
      cwd: project,
      sandbox: 'workspace-write',
      resume: id,
      signal: new AbortController().signal,
    });
    assert.equal(resumed.id, id);
    const again = await collect(resumed.turn('are you there?', { signal: new AbortController().signal }));
    assert.deepEqual(again.at(-1), { kind: 'end', outcome: 'succeeded' });
    const history = JSON.stringify((mock.mainCalls().at(-1)!.body as { messages: unknown }).messages);
    assert.match(history, /read the notes/, 'the resumed session carries the earlier rounds');
    await resumed.close();
  });
});
