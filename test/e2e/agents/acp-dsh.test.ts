// The ACP adapter driving the real DeepSeek Harness (`dsh --profile acp`: dsh 0.1.0-rc.8 with its ACP bridge
// @deepseek-ai/dsh-acp as a user profile) offline against the suite's scripted chat-completions mock, set as the
// base URL of DSH's DeepSeek provider. One DSH start serves every turn of the first session.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AcpConfig } from '../../../src/agents/acp/config.ts';
import { ACP_PRESETS, AcpAgent, type AcpAgentSession, acpConfigSchema } from '../../../src/agents/acp/index.ts';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { type ChatMock, startChatMock } from '../../mock-models/chat-completions.ts';
import { Gate } from '../../mock-models/server.ts';
import { runTurn } from '../../support/acp-support.ts';
import { bins, NODE_CACHE_ENV } from '../../support/bins.ts';
import { until } from '../../support/poll.ts';

const API_KEY = 'dsh-mock-key-3c1a';

/**
 * A DSH home holding the `acp` profile as a user sets it up: the base bundle plus the ACP bridge, whose provider and
 * model are DSH's DeepSeek route (the bridge plugin is linked where `dsh plugin --profile acp add` would install it).
 */
function dshHome(root: string): string {
  const home = join(root, 'dsh-home');
  const profile = join(home, 'profiles', 'acp');
  mkdirSync(profile, { recursive: true });
  writeFileSync(
    join(profile, 'package.json'),
    JSON.stringify({
      name: 'dsh-profile-acp',
      private: true,
      dsh: { profile: { bundles: ['@deepseek-ai/dsh-base'] } },
    }),
  );
  writeFileSync(
    join(profile, 'cordis.patch.yml'),
    [
      '- id: session-title-llm',
      '  disabled: true',
      '- insert:',
      '    - id: acp',
      "      name: '@deepseek-ai/dsh-acp'",
      '      config:',
      '        provider: deepseek-official',
      '        model: deepseek-v4-flash',
      '',
    ].join('\n'),
  );
  const modules = join(home, 'profiles', 'node_modules', '@deepseek-ai');
  mkdirSync(modules, { recursive: true });
  symlinkSync(bins.dshAcp(), join(modules, 'dsh-acp'));
  return home;
}

describe('ACP adapter with the real DeepSeek Harness', () => {
  let mock: ChatMock;
  let agent: AcpAgent;
  let agentConfig: AcpConfig;
  let session: AcpAgentSession;
  let root: string;
  let cwd: string;
  const pgids: number[] = [];

  before(async () => {
    mock = await startChatMock();
    root = mkdtempSync(join(tmpdir(), 'baton-acp-dsh-'));
    cwd = join(root, 'work');
    mkdirSync(cwd);
    mkdirSync(join(root, 'home'));
    agentConfig = acpConfigSchema.parse({
      // The preset's arguments, with the launcher run by this Node (DSH needs Node ≥ 22).
      command: [process.execPath, bins.dsh(), ...ACP_PRESETS.dsh.command.slice(1)],
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...NODE_CACHE_ENV,
        HOME: join(root, 'home'),
        DSH_HOME: dshHome(root),
        DEEPSEEK_API_KEY: API_KEY,
        DEEPSEEK_BASE_URL: mock.baseUrl,
      },
    });
    agent = new AcpAgent('dsh', agentConfig, { logger: silentLogger });
    session = await agent.openSession({
      cwd,
      sandbox: 'workspace-write',
      signal: new AbortController().signal,
      onProcessGroup: (p) => pgids.push(p),
    });
  });

  after(async () => {
    await session?.close();
    await mock?.close();
    rmSync(root, { recursive: true, force: true });
  });

  test('a round: the prompt reaches the provider with the configured model and key; the committed answer comes back', async () => {
    mock.script.push({ type: 'text', chunks: ['Hello ', 'from DSH'] });
    const { events, end, text } = await runTurn(session, 'say hello');
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'Hello from DSH');
    assert.deepEqual(events[0], { kind: 'session', id: session.id });
    const call = mock.mainCalls().at(-1)!;
    const body = call.body as { model: string; messages: { role: string; content: unknown }[] };
    assert.equal(body.model, 'deepseek-v4-flash');
    assert.match(JSON.stringify(body.messages.filter((m) => m.role === 'user')), /say hello/);
    assert.equal(call.headers.authorization, `Bearer ${API_KEY}`);
  });

  test('a second prompt in the same open session carries the earlier exchange to the model', async () => {
    mock.script.push({ type: 'text', chunks: ['second answer'] });
    const { end, text } = await runTurn(session, 'and again');
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'second answer');
    const messages = JSON.stringify((mock.mainCalls().at(-1)!.body as { messages: unknown }).messages);
    assert.match(messages, /say hello[\s\S]*Hello from DSH[\s\S]*and again/);
  });

  test('cancel while the model stalls: DSH acknowledges it and the session answers the next round', async () => {
    const gate = new Gate();
    // No partial text before the stall: DSH commits a cancelled turn's partial message and sends it during the next
    // prompt, where no client can tell it from that prompt's answer (docs/agents-acp.md).
    mock.script.push({ type: 'stall', gate });
    const callsBefore = mock.mainCalls().length;
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const turn = (async () => {
      for await (const e of session.turn('take your time', { signal: controller.signal })) events.push(e);
    })();
    await until(() => mock.mainCalls().length > callsBefore, { what: 'DSH to call the model' });
    controller.abort();
    await turn;
    gate.open();
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
    mock.script.push({ type: 'text', chunks: ['back'] });
    assert.equal((await runTurn(session, 'still there?')).text, 'back');
  });

  test('a bash command that asks to leave the sandbox: denied by default (reported, nothing runs), granted with allowPermissions (it runs)', async () => {
    const marker = join(cwd, 'escalated.txt');
    mock.script.push(
      {
        type: 'toolCall',
        name: 'bash',
        args: {
          command: `touch ${marker}`,
          description: 'create a marker outside the sandbox rules',
          sandbox_permissions: 'danger-full-access',
          justification: 'The task needs it.',
        },
      },
      { type: 'text', chunks: ['could not'] },
    );
    const { events, end, text } = await runTurn(session, 'make the marker');
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'could not');
    assert.deepEqual(
      events.filter((e) => e.kind === 'permission'),
      // DSH names its request's tool kind `bash`, not an ACP kind, so baton says it generically.
      [{ kind: 'permission', decision: 'denied', what: 'use a tool' }],
    );
    assert.equal(existsSync(marker), false);

    // With allowPermissions the same request is granted once and the command runs outside the sandbox.
    const allowing = new AcpAgent('dsh', { ...agentConfig, allowPermissions: true }, { logger: silentLogger });
    const granted = await allowing.openSession({
      cwd,
      sandbox: 'workspace-write',
      signal: new AbortController().signal,
    });
    try {
      mock.script.push(
        {
          type: 'toolCall',
          name: 'bash',
          args: {
            command: `touch ${marker}`,
            description: 'create a marker outside the sandbox rules',
            sandbox_permissions: 'danger-full-access',
            justification: 'The task needs it.',
          },
        },
        { type: 'text', chunks: ['done'] },
      );
      const allowed = await runTurn(granted, 'make the marker');
      assert.deepEqual(allowed.end, { kind: 'end', outcome: 'succeeded' });
      assert.deepEqual(
        allowed.events.filter((e) => e.kind === 'permission'),
        [{ kind: 'permission', decision: 'allowed', what: 'use a tool' }],
      );
      assert.equal(existsSync(marker), true);
    } finally {
      await granted.close();
    }
  });

  test('continuing in a new process (as every hub round is): DSH cannot load a saved session, so the open fails in one line and nothing runs', async () => {
    const calls = mock.mainCalls().length;
    const resumed: number[] = [];
    await assert.rejects(
      agent.openSession({
        cwd,
        sandbox: 'workspace-write',
        resume: session.id,
        signal: new AbortController().signal,
        onProcessGroup: (p) => resumed.push(p),
      }),
      {
        name: 'ResumeUnsupportedError',
        message:
          'agent "dsh" cannot resume a saved session (it does not advertise session/load); start a new task instead',
      },
    );
    assert.equal(resumed.length, 1);
    assert.equal(isGroupAlive(resumed[0]!), false, 'the DSH started for the resume was stopped');
    assert.equal(mock.mainCalls().length, calls, 'no model call');
  });
});
