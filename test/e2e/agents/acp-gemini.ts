// A part of acp-real.test.ts.
// The ACP adapter driving the real Gemini CLI (`gemini --acp`) offline against the scripted Gemini API mock.
// One binary start serves every turn below. The preset's binary found on PATH and its --version are asserted through
// the hub's start-up probe in test/e2e/hub/hub-acp-real.test.ts.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ACP_PRESETS, AcpAgent, type AcpAgentSession, acpConfigSchema } from '../../../src/agents/acp/index.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { type GeminiMock, geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { assertStallCancelAcknowledged, runTurn } from '../../support/acp-support.ts';
import { bins } from '../../support/bins.ts';

/** One of the models gemini --acp offers in session/new (not its default `auto`). */
const CHOSEN_MODEL = 'gemini-2.5-pro';

describe('ACP adapter with the real gemini --acp', () => {
  let mock: GeminiMock;
  let session: AcpAgentSession;
  let cwd: string;
  let root: string;
  let mcpMarker: string;
  const pgids: number[] = [];
  let callsAtOpen: number;

  before(async () => {
    mock = await startGeminiMock();
    root = mkdtempSync(join(tmpdir(), 'baton-acp-gemini-'));
    cwd = join(root, 'work');
    mkdirSync(cwd);
    // A user MCP server in settings.json that leaves a marker if gemini ever starts it (AG-7).
    const marker = join(root, 'user-mcp-server-started');
    mcpMarker = marker;
    const agentEnv = geminiEnv(join(root, 'home'), mock, {
      mcpServers: {
        users: {
          command: process.execPath,
          args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`],
        },
      },
    });
    const agent = new AcpAgent(
      'gemini',
      // The preset's arguments, with the binary run by this Node (the preset's `gemini` is resolved from PATH).
      acpConfigSchema.parse({
        command: [process.execPath, bins.gemini(), ...ACP_PRESETS.gemini.command.slice(1)],
        env: agentEnv,
        cancelGraceMs: 30_000,
      }),
      { logger: silentLogger },
    );
    session = await agent.openSession({
      cwd,
      sandbox: 'workspace-write',
      model: CHOSEN_MODEL,
      signal: new AbortController().signal,
      onProcessGroup: (p) => pgids.push(p),
    });
    callsAtOpen = mock.mainCalls().length;
  });

  after(async () => {
    await session?.close();
    await mock?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('one turn end to end in the chosen model: streamed text and usage', async () => {
    mock.script.push({ type: 'text', chunks: ['Hello ', 'from ', 'Gemini'] });
    const { events, end, text } = await runTurn(session, 'say hello');
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'Hello from Gemini');
    assert.deepEqual(events[0], { kind: 'session', id: session.id });
    assert.ok(events.some((e) => e.kind === 'usage' && e.inputTokens !== undefined));
    const main = mock.mainCalls().at(-1)!;
    assert.match(JSON.stringify(main.body), /say hello/);
    assert.equal(main.path, `/v1beta/models/${CHOSEN_MODEL}:streamGenerateContent`, 'the model chosen at open is used');
  });

  test('a read-only tool call runs and shows as tool start/end without its arguments', async () => {
    mock.script.push(
      { type: 'functionCall', name: 'list_directory', args: { dir_path: cwd } },
      { type: 'text', chunks: ['listed'] },
    );
    const { events, end, text } = await runTurn(session, 'list the files');
    assert.equal(end.outcome, 'succeeded');
    assert.equal(text, 'listed');
    const tools = events.filter((e) => e.kind === 'tool');
    assert.deepEqual(
      tools.map((e) => e.kind === 'tool' && e.phase),
      ['start', 'end'],
    );
    assert.ok(!JSON.stringify(events).includes(cwd), 'no paths surfaced');
    // The tool really ran: its result went back to the model.
    assert.match(JSON.stringify(mock.mainCalls().at(-1)!.body), /functionResponse/);
  });

  test('a shell tool call asks permission: denied and reported, and the turn completes', async () => {
    mock.script.push(
      { type: 'functionCall', name: 'run_shell_command', args: { command: 'touch denied-marker.txt' } },
      { type: 'text', chunks: ['could not run it'] },
    );
    const { events, end, text } = await runTurn(session, 'run a command');
    assert.equal(end.outcome, 'succeeded');
    assert.equal(text, 'could not run it');
    assert.deepEqual(
      events.filter((e) => e.kind === 'permission'),
      [{ kind: 'permission', decision: 'denied', what: 'run a command' }],
    );
    assert.ok(!JSON.stringify(events).includes('denied-marker'));
    assert.equal(existsSync(join(cwd, 'denied-marker.txt')), false, 'the denied command never ran');
  });

  test('cancel of a stalled turn is acknowledged; the session keeps working', async () => {
    await assertStallCancelAcknowledged(session, mock);
  });

  test('initialize names the version and session/load; the session opened without inference; close stops the group', async () => {
    // What doctor's session check (probeSession: initialize, session/new, no prompt) asks of an agent, read off this
    // file's one gemini start: gemini 0.61 offers no session/close, so the check sends it nothing more. The check's own
    // code is in test/agents/acp/acp.test.ts (scripted agent) and test/e2e/hub/doctor.test.ts.
    assert.equal(session.agentVersion, '0.61.0');
    assert.equal(session.capabilities?.loadSession, true);
    assert.equal(callsAtOpen, 0, 'no inference');

    await session.close();
    assert.equal(isGroupAlive(pgids[0]!), false);
    assert.equal(existsSync(mcpMarker), false, "the user's own MCP server was never started (AG-7)");
  });
});
