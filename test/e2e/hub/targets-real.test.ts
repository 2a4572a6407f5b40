// The real agents under the `local` secrets fence (bubblewrap), each against the suite's mock model server through a
// hub: Codex runs a shell command (its own sandbox nested inside the fence) that tries to read baton's config, Claude
// Code lists the processes it can see with its Bash tool, OpenCode answers a round. Each round succeeds; what the commands printed went
// back to the mock model, where the test reads it: baton's config was not there.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnthropicMock } from '../../mock-models/anthropic.ts';
import { opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { reply, shellCall } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import { codexTestDir, startResponsesMock } from '../../support/codex.ts';
import { call, connectCaller, followToEnd, startHub } from '../../support/hub.ts';

test('real Codex (with a shell command), Claude Code and OpenCode each run a round behind the secrets fence', async (t) => {
  // Outside the system temp dir, as a user's state dir is: Codex makes its sandbox helper links only there.
  const dir = codexTestDir('baton-targets-real-');
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  const work = join(dir, 'work');
  mkdirSync(work);
  const responses = await startResponsesMock(t);
  const anthropic = await AnthropicMock.start();
  t.after(() => anthropic.close());
  const chat = await startChatMock({ type: 'text', chunks: ['opencode answered'] });
  t.after(() => chat.close());
  const opencode = Object.fromEntries(
    Object.entries(opencodeEnv(join(dir, 'opencode-scratch'), chat)).filter(([k]) => k.startsWith('OPENCODE_')),
  );
  const hub = await startHub(
    t,
    {
      dir,
      roots: [work],
      agents: {
        codex: {
          kind: 'codex',
          command: [process.execPath, bins.codex()],
          model: 'mock-model',
          modelProvider: { id: 'mock', baseUrl: responses.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
          userCodexHome: join(dir, 'no-user-login'),
        },
        claude: { kind: 'claude', command: bins.claude() },
        opencode: { kind: 'opencode', binary: bins.opencode(), model: 'mock/mock-model', env: opencode },
      },
    },
    {
      ANTHROPIC_BASE_URL: anthropic.origin,
      ANTHROPIC_API_KEY: 'dummy',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      CLAUDE_CODE_MAX_RETRIES: '0',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    },
  );
  const alice = await connectCaller(t, hub, 'alice');
  // What a prompt-injected agent would run; the exit status shows the file was not there to read.
  const probe = `cat ${hub.configPath}; echo "exit=$?"`;
  const run = async (agent: string, key: string) => {
    const r = await call<{ taskId: string; target: string }>(alice, 'agent_run', {
      agent,
      prompt: 'read the config',
      cwd: work,
      idempotencyKey: key,
    });
    assert.equal(r.target, 'local');
    const end = await followToEnd(alice, r.taskId);
    assert.equal(end.state, 'succeeded', `${agent}: ${JSON.stringify(end.last)}`);
    return (await call<{ text: string }>(alice, 'agent_result', { taskId: r.taskId })).text;
  };

  responses.push(shellCall(probe), reply('codex done'));
  assert.equal(await run('codex', 'codex'), 'codex done');
  const codexOutput = responses.turns
    .at(-1)!
    .input.filter((i) => i.type === 'function_call_output')
    .map((i) => String(i.output))
    .join('\n');
  assert.match(codexOutput, /No such file or directory/, codexOutput);
  assert.match(codexOutput, /exit=1/, codexOutput);
  assert.doesNotMatch(codexOutput, /control-token/);

  anthropic.push(
    { kind: 'tool_use', name: 'Bash', input: { command: 'ps -e', description: 'list processes' } },
    { kind: 'text', text: 'claude done' },
  );
  assert.equal(await run('claude', 'claude'), 'claude done');
  // Claude's policy asks before reading outside the work dir, so its look is `ps`: its own /proc holds bubblewrap as
  // pid 1 and its own few processes, no hub.
  const claudeOutput = anthropic.messageRequests
    .at(-1)!
    .messages!.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((c: { type?: string }) => c.type === 'tool_result')
    .map((c: { content?: unknown }) => String(c.content))
    .join('\n');
  assert.match(claudeOutput, /^\s+1 \S+\s+\S+ bwrap$/m, claudeOutput);
  assert.match(claudeOutput, /claude/, claudeOutput);
  assert.ok(claudeOutput.trim().split('\n').length < 10, claudeOutput);

  assert.equal(await run('opencode', 'opencode'), 'opencode answered');

  const health = await fetch(`${hub.url}/control/health`, {
    headers: { authorization: `Bearer ${(await import('../../support/hub.ts')).CONTROL_TOKEN}` },
  }).then((r) => r.json() as Promise<{ targets: Array<{ name: string; fence: string }> }>);
  assert.deepEqual(health.targets, [{ name: 'local', kind: 'local', fence: 'secrets' }], 'the fence was on');
});
