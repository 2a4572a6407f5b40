// A part of connect-clients.test.ts (its hub and temp dir are the shared suite in clients-suite.ts).
// `baton connect claude` into an isolated home, then the real `claude -p` delegating through the hub to the scripted
// ACP agent (agent_run → agent_wait until terminal → agent_result), with the Anthropic mock scripted as a model that
// reads each tool result. Without the allow rule connect writes, the same run must not delegate.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { bins } from '../../support/bins.ts';
import { batonConnect, CLIENT_TOKENS, run, tokenEnv } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FAILED_PREFIX, FINAL_PREFIX } from '../../support/delegation.ts';
import { call, connectCaller } from '../../support/hub.ts';
import { suite } from './clients-suite.ts';

/** The Claude Code env of one test: its own config dir and HOME under `suite.dir/claude/name`, the mock, the hub's token. */
function claudeEnv(origin: string, name: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...isolatedClaudeEnv(origin, join(suite.dir, 'claude', name)),
    PATH: suite.PATH,
    ...tokenEnv('claude'),
    // claude -p connects MCP servers in the background by default, so on a loaded machine its first model request can
    // go out before baton's tools are listed; this makes it wait for them, as a script that needs them would.
    MCP_CONNECTION_NONBLOCKING: 'false',
  };
  mkdirSync(env.HOME!, { recursive: true });
  return env;
}

/** The user's own settings before the first connect. */
const USER_SETTINGS = { cleanupPeriodDays: 30, permissions: { allow: ['Bash(ls:*)'] } };

/**
 * `baton connect claude` at user scope runs twice into a config dir of its own that already holds the user's own
 * things (a setting, an allow rule, another MCP server added with `claude mcp add`): the second run must leave one baton
 * entry and one allow rule and keep the rest. Each user-scope test's Claude Code then gets a copy of the files it wrote,
 * without the other server (nothing to start there), so the connect and its `claude mcp` runs are not repeated.
 */
let userConnect: Promise<{ connectOuts: string[]; configDir: string }> | undefined;
function connectUserScopeOnce() {
  userConnect ??= (async () => {
    const env = claudeEnv('http://127.0.0.1:9', 'connected');
    const configDir = env.CLAUDE_CONFIG_DIR!;
    mkdirSync(configDir, { recursive: true });
    writeFileSync(join(configDir, 'settings.json'), JSON.stringify(USER_SETTINGS));
    const other = await run([bins.claude(), 'mcp', 'add', '--scope', 'user', 'other', '--', '/bin/true'], {
      env,
      cwd: suite.setup.project,
    });
    assert.equal(other.code, 0, other.stderr);
    const connectOuts: string[] = [];
    for (let i = 0; i < 2; i++) {
      const c = await batonConnect(suite.setup.configPath, ['claude'], { env, cwd: suite.setup.project });
      assert.equal(c.code, 0, `connect ${i + 1} failed:\n${c.stdout}\n${c.stderr}`);
      connectOuts.push(c.stdout);
    }
    return { connectOuts, configDir };
  })();
  return userConnect;
}

async function connected(t: TestContext, name: string, args: string[] = [], cwd = suite.setup.project) {
  const delegation = new Delegation(cwd);
  const mock = await AnthropicMock.start(delegation.anthropic);
  t.after(() => mock.close());
  const env = claudeEnv(mock.origin, name);
  let connectOuts: string[];
  if (args.length === 0) {
    const once = await connectUserScopeOnce();
    mkdirSync(env.CLAUDE_CONFIG_DIR!, { recursive: true });
    copyFileSync(join(once.configDir, 'settings.json'), join(env.CLAUDE_CONFIG_DIR!, 'settings.json'));
    const registry = JSON.parse(readFileSync(join(once.configDir, '.claude.json'), 'utf8'));
    delete registry.mcpServers.other;
    writeFileSync(join(env.CLAUDE_CONFIG_DIR!, '.claude.json'), JSON.stringify(registry));
    connectOuts = once.connectOuts;
  } else {
    const c = await batonConnect(suite.setup.configPath, ['claude', ...args], { env, cwd });
    assert.equal(c.code, 0, `connect failed:\n${c.stdout}\n${c.stderr}`);
    connectOuts = [c.stdout];
  }
  return { delegation, env, connectOuts, settings: join(env.CLAUDE_CONFIG_DIR!, 'settings.json') };
}

const claudeP = (env: NodeJS.ProcessEnv, cwd = suite.setup.project) =>
  run([bins.claude(), '-p', 'Hand this task to the scripted agent through baton.', '--output-format', 'json'], {
    env,
    cwd,
  });

async function claudeTasks(t: TestContext): Promise<number> {
  const client = await connectCaller(t, suite.setup.hub, 'claude', CLIENT_TOKENS.claude);
  return (await call<{ tasks: unknown[] }>(client, 'agent_list', {})).tasks.length;
}

test('baton connect claude, run twice: one baton entry and allow rule, the rest kept; claude -p delegates through the hub', async (t) => {
  const { delegation, env, connectOuts } = await connected(t, 'allowed');
  const [first, second] = connectOuts;
  assert.match(first!, /ran \(nothing to remove\): claude mcp remove --scope user baton/);
  assert.match(
    first!,
    /ran: claude mcp add --scope user --transport http baton http:\/\/127\.0\.0\.1:\d+\/mcp\/claude/,
  );
  assert.match(first!, /edited .*settings\.json: add "mcp__baton" to permissions\.allow/);
  assert.match(second!, /ran: claude mcp remove --scope user baton/);
  const once = await connectUserScopeOnce();
  assert.deepEqual(JSON.parse(readFileSync(join(once.configDir, 'settings.json'), 'utf8')), {
    ...USER_SETTINGS,
    permissions: { allow: ['Bash(ls:*)', 'mcp__baton'] },
  });
  const registryText = readFileSync(join(once.configDir, '.claude.json'), 'utf8');
  const registry = JSON.parse(registryText);
  assert.deepEqual(Object.keys(registry.mcpServers).sort(), ['baton', 'other']);
  assert.equal(registry.mcpServers.baton.url, `${suite.setup.hub.url}/mcp/claude`);
  assert.equal(
    registry.mcpServers.baton.headers.Authorization,
    `Bearer \${BATON_TOKEN_CLAUDE}`,
    'the token stays in the environment',
  );
  assert.ok(!registryText.includes(CLIENT_TOKENS.claude));
  assert.ok(!readFileSync(join(env.CLAUDE_CONFIG_DIR!, '.claude.json'), 'utf8').includes('"other"'));

  const r = await claudeP(env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { result: string; is_error: boolean };
  assert.equal(out.is_error, false, r.stdout);
  assert.equal(out.result, `${FINAL_PREFIX}${DELEGATE_ANSWER}`, `offered: ${delegation.offered.join(', ')}`);
  delegation.assertRunWaitResult();
});

test('baton connect claude without its allow rule: claude -p is refused the tool and delegates nothing', async (t) => {
  const { delegation, env, settings } = await connected(t, 'denied');
  const json = JSON.parse(readFileSync(settings, 'utf8'));
  json.permissions.allow = json.permissions.allow.filter((r: string) => r !== 'mcp__baton');
  writeFileSync(settings, JSON.stringify(json));
  const before = await claudeTasks(t);

  const r = await claudeP(env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { result: string; permission_denials: unknown[] };
  assert.ok(out.result.startsWith(FAILED_PREFIX), out.result);
  assert.ok(!out.result.includes(DELEGATE_ANSWER));
  assert.equal(out.permission_denials.length, 1, 'Claude Code denied the baton tool');
  assert.deepEqual(delegation.asked, ['agent_run']);
  assert.equal(await claudeTasks(t), before, 'no task reached the hub');
});

test('baton connect claude --scope project: .mcp.json and .claude/settings.local.json let claude -p delegate', async (t) => {
  // A project of its own inside the hub's root, so its files cannot grant anything to the other tests.
  const project = join(suite.setup.project, 'own-project');
  mkdirSync(project);
  const { delegation, env } = await connected(t, 'project', ['--scope', 'project'], project);
  const mcp = JSON.parse(readFileSync(join(project, '.mcp.json'), 'utf8'));
  assert.equal(mcp.mcpServers.baton.type, 'http');
  const settings = JSON.parse(readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8'));
  assert.deepEqual(settings.permissions.allow, ['mcp__baton']);
  assert.ok(!existsSync(join(env.CLAUDE_CONFIG_DIR!, 'settings.json')), 'the user settings are left alone');

  const r = await claudeP(env, project);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { result: string }).result, `${FINAL_PREFIX}${DELEGATE_ANSWER}`);
  assert.equal(delegation.asked.at(-1), 'agent_result');
});
