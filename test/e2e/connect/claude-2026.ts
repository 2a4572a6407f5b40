// A part of connect-clients.test.ts: not a `baton connect` test, but the same real Claude Code against a hub of the same
// shape (the scripted ACP agent, a caller per client), so it shares that file's hub and test process.
// The real Claude Code (npm, mock Anthropic model) against the hub on SDK v2, through a recording
// pass-through: on the wire it negotiates MCP 2026-07-28 with `server/discover` (no initialize, no session), the hub
// answers with the Tasks extension declared, and a delegation to the scripted ACP agent completes. Whether Claude Code
// asks for a task-augmented call is recorded: `claude -p` (2.1.332) does not declare the extension, so it gets the plain
// tools; the interactive UI (run under a pty) declares it, gets agent_run back as a task handle, polls tasks/get, and
// hands the delegate's answer to the model in its next request.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { spawnGroup } from '../../../src/lib/process-group.ts';
import { AnthropicMock, type AnthropicStep, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { bins } from '../../support/bins.ts';
import { CLIENT_TOKENS, run } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FINAL_PREFIX } from '../../support/delegation.ts';
import { until } from '../../support/poll.ts';
import { acpScript } from '../../support/scripted-agent.ts';
import { TASKS } from '../../support/tasks-client.ts';
import { wireRecorder } from '../../support/wire.ts';
import { suite } from './clients-suite.ts';

type Rpc = { method?: string; params?: { name?: string; _meta?: Record<string, unknown> } };
type Answer = { result?: Record<string, unknown> };

/** The shared hub, and a directory of this part's own for the Claude Code config dirs of its two runs. */
function sharedHub() {
  return { dir: join(suite.dir, 'claude-2026'), work: suite.setup.project, hub: suite.setup.hub };
}

test('Claude Code speaks 2026-07-28 to the hub: server/discover answered, stateless delegation completes', async (t) => {
  const { dir, work, hub } = sharedHub();
  const wire = await wireRecorder(t, `${hub.url}/mcp/claude`);
  const delegation = new Delegation(work);
  const mock = await AnthropicMock.start(delegation.anthropic);
  t.after(() => mock.close());
  // MCP_CONNECTION_NONBLOCKING: claude -p would otherwise ask the model before baton's tools are listed.
  const env: NodeJS.ProcessEnv = {
    ...isolatedClaudeEnv(mock.origin, join(dir, 'claude-p')),
    MCP_CONNECTION_NONBLOCKING: 'false',
  };
  mkdirSync(env.HOME!, { recursive: true });
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
  const out = JSON.parse(r.stdout) as { result: string; is_error: boolean };
  assert.equal(out.is_error, false, r.stdout);
  assert.equal(out.result, `${FINAL_PREFIX}${DELEGATE_ANSWER}`, `asked: ${delegation.asked}`);

  const sent = wire.exchanges.map((x) => ({ ...x, rpc: x.body as Rpc }));
  const discover = sent.find((x) => x.rpc.method === 'server/discover');
  assert.ok(discover, `no server/discover on the wire: ${sent.map((x) => x.rpc.method)}`);
  assert.equal(discover.headers['mcp-protocol-version'], '2026-07-28');
  assert.equal(discover.rpc.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
  assert.equal(discover.status, 200);
  const discovered = (discover.answers[0] as Answer).result as {
    supportedVersions: string[];
    capabilities: { extensions?: Record<string, unknown> };
  };
  assert.deepEqual(discovered.supportedVersions, ['2026-07-28']);
  assert.deepEqual(discovered.capabilities.extensions?.[TASKS], {});
  assert.ok(!sent.some((x) => x.rpc.method === 'initialize'), 'no 2025 handshake');
  assert.ok(!sent.some((x) => x.headers['mcp-session-id']), 'no session id');

  const calls = sent.filter((x) => x.rpc.method === 'tools/call');
  assert.deepEqual(
    calls.map((x) => x.rpc.params?.name),
    delegation.asked,
  );
  const run0 = calls[0]!;
  const caps = run0.rpc.params?._meta?.['io.modelcontextprotocol/clientCapabilities'] as {
    extensions?: Record<string, unknown>;
  };
  const negotiated = typeof caps?.extensions?.[TASKS] === 'object';
  const answer = (run0.answers[0] as Answer).result!;
  if (negotiated) {
    // A task-augmented call: the hub answers with a task handle and the client follows it with tasks/get.
    assert.equal(answer.resultType, 'task');
    assert.ok(sent.some((x) => x.rpc.method === 'tasks/get'));
  } else {
    // What Claude Code 2.1.332 sends in -p mode: per-request capabilities without the extension, so the plain
    // tools answer (a task may only be returned to a client that declared the extension on that request).
    assert.notEqual(answer.resultType, 'task');
    t.diagnostic(`Claude Code did not declare ${TASKS}; its agent_run request: ${JSON.stringify(run0.rpc)}`);
  }
});

test('interactive Claude Code runs agent_run as an MCP task and its result reaches the model', async (t) => {
  const { dir, work, hub } = sharedHub();
  const wire = await wireRecorder(t, `${hub.url}/mcp/claude`);
  // The model: load baton's agent_run through ToolSearch (Claude Code defers MCP tools), call it once, then only talk.
  const run = 'mcp__baton__agent_run';
  let searches = 0;
  let ran = false;
  const mock = await AnthropicMock.start((req): AnthropicStep => {
    const tools = ((req.body as { tools?: { name: string }[] }).tools ?? []).map((x) => x.name);
    if (!ran && tools.includes(run)) {
      ran = true;
      const prompt = acpScript([{ chunks: ['kestrel', '-42'] }]);
      return { kind: 'tool_use', name: run, input: { agent: 'scripted', prompt, cwd: work, idempotencyKey: 'tty' } };
    }
    if (!ran && tools.includes('ToolSearch') && searches++ < 3)
      return { kind: 'tool_use', name: 'ToolSearch', input: { query: `select:${run}` } };
    return { kind: 'text', text: 'noted' };
  });
  t.after(() => mock.close());
  const env: NodeJS.ProcessEnv = {
    ...isolatedClaudeEnv(mock.origin, join(dir, 'claude-tty')),
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
  group.child.stdout!.resume();
  // `script` starts Claude Code in a session of its own, so stopping script's group does not reach it: it is stopped by
  // its pid (its own group, as a session leader), before the test's dir is removed.
  const stopAll = async () => {
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
  };
  t.after(stopAll);

  // The result reaches the model: a later request carries Claude Code's task notification with the delegate's answer.
  const notification = await mock.waitForMessages((body) => {
    const messages = JSON.stringify(body.messages);
    return messages.includes('task-notification') && messages.includes(DELEGATE_ANSWER);
  }, 120_000);
  const notified = JSON.stringify(notification.messages);
  assert.match(notified, /<status>completed<\/status>/);

  const sent = wire.exchanges.map((x) => ({ ...x, rpc: x.body as Rpc }));
  const call = sent.find((x) => x.rpc.method === 'tools/call' && x.rpc.params?.name === 'agent_run');
  assert.ok(call, 'agent_run was called');
  const caps = call.rpc.params?._meta?.['io.modelcontextprotocol/clientCapabilities'] as {
    extensions?: Record<string, unknown>;
  };
  assert.deepEqual(caps.extensions?.[TASKS], {}, 'the call declared the Tasks extension');
  const handle = (call.answers[0] as Answer).result!;
  assert.equal(handle.resultType, 'task');
  assert.match(handle.taskId as string, /^t-/);
  const polls = sent.filter((x) => x.rpc.method === 'tasks/get');
  assert.ok(polls.length >= 1);
  assert.ok(polls.every((x) => x.headers['mcp-name'] === handle.taskId));
  const last = (polls.at(-1)!.answers[0] as Answer).result!;
  assert.equal(last.status, 'completed');
  t.diagnostic(
    `Claude Code polled tasks/get ${polls.length} time(s); per-request capabilities: ${JSON.stringify(caps)}`,
  );
});
