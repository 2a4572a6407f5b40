// The real Claude Code (npm, mock Anthropic model) answering a delegated agent's permission request through MCP's own
// input channel (rule: approvals). `claude -p` delegates to the scripted ACP agent, which asks
// session/request_permission under the `ask` policy; Claude Code's agent_wait is answered `input_required` with the
// form, Claude Code puts it to its Elicitation hook (the non-interactive way it answers a server's question), the hook
// chooses, and the delegate gets that decision.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnthropicMock, isolatedClaudeEnv } from '../mock-models/anthropic.ts';
import { bins } from '../support/bins.ts';
import { CLIENT_TOKENS, run } from '../support/connect.ts';
import { Delegation, FINAL_PREFIX } from '../support/delegation.ts';
import { startHub } from '../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';
import { wireRecorder } from '../support/wire.ts';

const ASKS = acpScript([{ permission: { kind: 'execute', title: 'rm -rf /very/secret/path' } }]);

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
    // The hook records what it was asked and answers with the decision.
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
      join(env.CLAUDE_CONFIG_DIR!, 'settings.json'),
      JSON.stringify({
        hooks: { Elicitation: [{ hooks: [{ type: 'command', command: `${process.execPath} ${hook}` }] }] },
      }),
    );
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
