// The real Claude Code (npm, mock Anthropic model) answering a delegated agent's permission request through MCP's own
// input channel (rule: approvals). The delegate is the scripted ACP agent, which asks session/request_permission under
// the `ask` policy; Claude Code puts the hub's form to its Elicitation hook (the way it answers a server's question
// without a person), the hook chooses, and the delegate gets that decision. `claude -p` uses the plain tools, so its
// agent_wait is answered input_required and retried with the answer; the interactive UI runs agent_run as an MCP task,
// sees it input_required on tasks/get and answers with tasks/update.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { spawnGroup } from '../../../src/lib/process-group.ts';
import { AnthropicMock, type AnthropicStep, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { bins } from '../../support/bins.ts';
import { CLIENT_TOKENS, run } from '../../support/connect.ts';
import { Delegation, FINAL_PREFIX } from '../../support/delegation.ts';
import { startHub } from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';
import { wireRecorder } from '../../support/wire.ts';

const ASKS = acpScript([{ permission: { kind: 'execute', title: 'rm -rf /very/secret/path' } }]);

/** An Elicitation hook in Claude Code's user settings: it records what it was asked and accepts with `decision`. */
function elicitationHook(dir: string, configDir: string, decision: string): string {
  const seen = join(dir, 'hook-input.jsonl');
  const hook = join(dir, 'elicitation-hook.mjs');
  writeFileSync(
    hook,
    [
      "import { appendFileSync, readFileSync } from 'node:fs';",
      `appendFileSync(${JSON.stringify(seen)}, readFileSync(0, 'utf8').trim() + '\\n');`,
      `const content = { decision: ${JSON.stringify(decision)} };`,
      "process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'Elicitation', action: 'accept', content } }));",
    ].join('\n'),
  );
  writeFileSync(
    join(configDir, 'settings.json'),
    JSON.stringify({
      hooks: { Elicitation: [{ hooks: [{ type: 'command', command: `${process.execPath} ${hook}` }] }] },
    }),
  );
  return seen;
}

/** Stops `script` and the Claude Code it started in a session of its own (so not in script's process group). */
async function stopScript(group: ReturnType<typeof spawnGroup>): Promise<void> {
  const pid = group.child.pid!;
  const kids = existsSync(`/proc/${pid}`)
    ? readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean).map(Number)
    : [];
  for (const kid of kids) {
    try {
      process.kill(-kid, 'SIGKILL');
    } catch {
      try {
        process.kill(kid, 'SIGKILL');
      } catch {}
    }
  }
  await group.stop(1_000);
  await until(() => kids.every((kid) => !existsSync(`/proc/${kid}`)), { what: 'Claude Code to exit' });
}

for (const decision of ['allow', 'deny'] as const) {
  test(`claude -p answers the delegate's permission request through its Elicitation hook: ${decision}`, async (t) => {
    const dir = tempDir(t, 'baton-approval-claude-');
    const { work, ...scripted } = scriptedAgentSetup(dir);
    const hub = await startHub(t, {
      dir,
      roots: [work],
      agents: { scripted: scripted.entry },
      callers: { claude: { token: CLIENT_TOKENS.claude, approvals: { scripted: 'ask' } } },
    });
    const wire = await wireRecorder(t, `${hub.url}/mcp/claude`);
    const delegation = new Delegation(work, 'scripted', ASKS);
    const mock = await AnthropicMock.start(delegation.anthropic);
    t.after(() => mock.close());
    const env: NodeJS.ProcessEnv = {
      ...isolatedClaudeEnv(mock.origin, join(dir, 'claude')),
      MCP_CONNECTION_NONBLOCKING: 'false',
    };
    mkdirSync(env.HOME!, { recursive: true });
    mkdirSync(env.CLAUDE_CONFIG_DIR!, { recursive: true });
    const seen = elicitationHook(dir, env.CLAUDE_CONFIG_DIR!, decision);
    const mcpConfig = JSON.stringify({
      mcpServers: {
        baton: { type: 'http', url: wire.url, headers: { Authorization: `Bearer ${CLIENT_TOKENS.claude}` } },
      },
    });
    const r = await run(
      [
        bins.claude(),
        '-p',
        'Hand this task to the scripted agent through baton.',
        '--output-format',
        'json',
        '--strict-mcp-config',
        '--mcp-config',
        mcpConfig,
        '--allowedTools',
        'mcp__baton',
      ],
      { env, cwd: work },
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { result: string };
    const expected = decision === 'allow' ? 'permission:granted' : 'permission:denied';
    assert.equal(out.result, `${FINAL_PREFIX}${expected}`, `asked: ${delegation.asked}`);

    // The form reached the hook: the lossy description and the offered decisions, never the request's arguments.
    const asked = readFileSync(seen, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(asked.length, 1, JSON.stringify(asked));
    assert.equal(asked[0]!.mcp_server_name, 'baton');
    assert.match(String(asked[0]!.message), /asks to run a command \(command\)/);
    assert.equal(JSON.stringify(asked).includes('secret'), false);

    // On the wire: an agent_wait answered input_required, retried with the hook's answer.
    type Rpc = { method?: string; params?: { name?: string; inputResponses?: Record<string, unknown> } };
    const waits = wire.exchanges.filter((x) => (x.body as Rpc).params?.name === 'agent_wait');
    const parked = waits.find(
      (x) => (x.answers[0] as { result?: { resultType?: string } }).result?.resultType === 'input_required',
    );
    assert.ok(parked, 'an agent_wait was answered input_required');
    const retried = waits.find((x) => (x.body as Rpc).params?.inputResponses);
    assert.deepEqual(Object.values((retried!.body as Rpc).params!.inputResponses!), [
      { action: 'accept', content: { decision } },
    ]);
  });
}

/** The interactive Claude Code (under a pty) with the hub's agent_run in its model's hands; `hook` adds the hook. */
async function interactiveClaude(t: TestContext, hook: string | undefined) {
  const dir = tempDir(t, 'baton-approval-claude-tty-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: scripted.entry },
    callers: { claude: { token: CLIENT_TOKENS.claude, approvals: { scripted: 'ask' } } },
  });
  const wire = await wireRecorder(t, `${hub.url}/mcp/claude`);
  // The model: load agent_run through ToolSearch (Claude Code defers MCP tools), call it once, then only talk.
  const runTool = 'mcp__baton__agent_run';
  let searches = 0;
  let ran = false;
  const mock = await AnthropicMock.start((req): AnthropicStep => {
    const tools = ((req.body as { tools?: { name: string }[] }).tools ?? []).map((x) => x.name);
    if (!ran && tools.includes(runTool)) {
      ran = true;
      const input = { agent: 'scripted', prompt: ASKS, cwd: work, idempotencyKey: 'tty' };
      return { kind: 'tool_use', name: runTool, input };
    }
    if (!ran && tools.includes('ToolSearch') && searches++ < 3)
      return { kind: 'tool_use', name: 'ToolSearch', input: { query: `select:${runTool}` } };
    return { kind: 'text', text: 'noted' };
  });
  t.after(() => mock.close());
  const env: NodeJS.ProcessEnv = {
    ...isolatedClaudeEnv(mock.origin, join(dir, 'claude')),
    TERM: 'xterm',
    MCP_CONNECTION_NONBLOCKING: 'false',
  };
  mkdirSync(env.HOME!, { recursive: true });
  mkdirSync(env.CLAUDE_CONFIG_DIR!, { recursive: true });
  // The first-run screens (onboarding, the folder trust question, the API key question) are answered in advance.
  writeFileSync(
    join(env.CLAUDE_CONFIG_DIR!, '.claude.json'),
    JSON.stringify({
      hasCompletedOnboarding: true,
      customApiKeyResponses: { approved: ['dummy'], rejected: [] },
      projects: { [work]: { hasTrustDialogAccepted: true } },
    }),
  );
  const seen = hook ? elicitationHook(dir, env.CLAUDE_CONFIG_DIR!, hook) : undefined;
  const mcpConfig = JSON.stringify({
    mcpServers: {
      baton: { type: 'http', url: wire.url, headers: { Authorization: `Bearer ${CLIENT_TOKENS.claude}` } },
    },
  });
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const argv = [bins.claude(), 'Hand this task to the scripted agent through baton.']
    .concat(['--strict-mcp-config', '--mcp-config', mcpConfig, '--allowedTools', 'mcp__baton'])
    .map(quote)
    .join(' ');
  // The interactive UI needs a terminal: util-linux `script` gives it one.
  const group = spawnGroup('script', ['-qfc', argv, '/dev/null'], { cwd: work, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  group.child.stdout!.on('data', (d) => {
    screen += d;
  });
  t.after(() => stopScript(group));
  // What the terminal shows, without its control sequences.
  const shown = () => screen.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ' ');
  return { wire, mock, seen, shown };
}

type TasksRpc = { method?: string; params?: { inputResponses?: Record<string, unknown> } };

test('interactive Claude Code answers through the Tasks extension: input_required, its Elicitation hook, tasks/update', async (t) => {
  const { wire, mock, seen } = await interactiveClaude(t, 'allow');
  const notification = await mock.waitForMessages((body) => {
    const messages = JSON.stringify(body.messages);
    return messages.includes('task-notification') && messages.includes('permission:');
  }, 120_000);
  assert.match(JSON.stringify(notification.messages), /permission:granted/);
  const asked = readFileSync(seen!, 'utf8').trim().split('\n');
  assert.equal(asked.length, 1);
  assert.match(asked[0]!, /asks to run a command \(command\)/);
  const polls = wire.exchanges.filter((x) => (x.body as TasksRpc).method === 'tasks/get');
  assert.ok(
    polls.some((x) => (x.answers[0] as { result?: { status?: string } }).result?.status === 'input_required'),
    'a poll saw input_required',
  );
  const update = wire.exchanges.find((x) => (x.body as TasksRpc).method === 'tasks/update');
  assert.ok(update, 'Claude Code sent tasks/update');
  assert.deepEqual(Object.values((update.body as TasksRpc).params!.inputResponses!), [
    { action: 'accept', content: { decision: 'allow' } },
  ]);
});

test('interactive Claude Code without a hook shows the form to the person at the terminal and leaves the task running', async (t) => {
  const { wire, shown } = await interactiveClaude(t, undefined);
  await until(() => shown().includes('requests your input'), { what: "Claude Code's input form", timeoutMs: 120_000 });
  await until(() => shown().includes('asks to run a command (command)'), { what: 'the form to show the request' });
  const methods = wire.exchanges.map((x) => (x.body as TasksRpc).method);
  assert.ok(methods.includes('tasks/get'));
  assert.ok(!methods.includes('tasks/update'), 'nothing answered without the person');
  assert.ok(!methods.includes('tasks/cancel'), 'the task is not cancelled');
});
