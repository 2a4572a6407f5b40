// A part of acp-real.test.ts.
// The ACP adapter driving the real OpenCode (`opencode acp`) offline against the scripted chat-completions mock.
// One binary start serves every turn below (an OpenCode start costs seconds of CPU). Resuming a saved session in a new
// process (session/load) and the preset's binary found on PATH are asserted on the real opencode through the hub in
// test/e2e/hub/hub-acp-real.test.ts, whose every round is a new process anyway; the adapter's own resume handling is in
// test/agents/acp/acp.test.ts.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ACP_PRESETS, AcpAgent, type AcpAgentSession, acpConfigSchema } from '../../../src/agents/acp/index.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { type ChatMock, MOCK_MODEL_ALT, opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { assertStallCancelAcknowledged, runTurn } from '../../support/acp-support.ts';
import { bins } from '../../support/bins.ts';

describe('ACP adapter with the real opencode acp', () => {
  let mock: ChatMock;
  let session: AcpAgentSession;
  let root: string;
  let cwd: string;
  const pgids: number[] = [];

  before(async () => {
    mock = await startChatMock();
    root = mkdtempSync(join(tmpdir(), 'baton-acp-opencode-'));
    cwd = join(root, 'work');
    mkdirSync(cwd);
    const agentEnv = opencodeEnv(join(root, 'oc'), mock);
    const agent = new AcpAgent(
      'opencode-acp',
      acpConfigSchema.parse({
        command: [bins.opencode(), ...ACP_PRESETS['opencode-acp'].command.slice(1)],
        env: agentEnv,
        cancelGraceMs: 30_000,
      }),
      { logger: silentLogger },
    );
    session = await agent.openSession({
      cwd,
      sandbox: 'workspace-write',
      model: `mock/${MOCK_MODEL_ALT}`,
      signal: new AbortController().signal,
      onProcessGroup: (p) => pgids.push(p),
    });
  });

  after(async () => {
    await session?.close();
    await mock?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('one turn end to end in the chosen model: streamed text and token usage', async () => {
    mock.script.push({ type: 'text', chunks: ['Hello ', 'from ', 'OpenCode'] });
    const { events, end, text } = await runTurn(session, 'say hello');
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'Hello from OpenCode');
    assert.ok(session.id?.startsWith('ses_'));
    assert.deepEqual(events[0], { kind: 'session', id: session.id });
    assert.ok(events.some((e) => e.kind === 'usage' && e.inputTokens === 11 && e.outputTokens === 7));
    const main = mock.mainCalls().at(-1)!;
    assert.match(JSON.stringify(main.body), /say hello/);
    assert.equal((main.body as { model: string }).model, MOCK_MODEL_ALT, 'the model chosen at open is used');
  });

  test('cancel of a stalled turn is acknowledged; the session keeps working', async () => {
    await assertStallCancelAcknowledged(session, mock);
  });

  test('close stops the process group; opencode installed nothing from npm', async () => {
    await session.close();
    assert.equal(isGroupAlive(pgids[0]!), false);
    assert.deepEqual(readdirSync(join(root, 'oc', 'config', 'opencode', 'node_modules')), [], 'no npm install ran');
  });
});
