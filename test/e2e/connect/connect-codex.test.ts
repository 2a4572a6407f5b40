// `baton connect codex` into an isolated CODEX_HOME, then the real `codex exec` delegating through the hub to the
// scripted ACP agent, with the Responses mock scripted as a model that reads each tool result. Without the
// default_tools_approval_mode connect writes, `codex exec` (approval policy never) must refuse the tool.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { mockCodexEnv, ResponsesMock, writeMockCodexHome } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import { batonConnect, CLIENT_TOKENS, connectSuite, run, tokenEnv } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FAILED_PREFIX, FINAL_PREFIX } from '../../support/delegation.ts';
import { call, connectCaller } from '../../support/hub.ts';

const suite = connectSuite('codex');

async function connected(t: TestContext, name: string) {
  const delegation = new Delegation(suite.setup.project);
  const mock = await ResponsesMock.start(delegation.responses);
  t.after(() => mock.close());
  const root = join(suite.dir, name);
  const codexHome = writeMockCodexHome(join(root, 'codex-home'), mock);
  mkdirSync(join(root, 'home'), { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...mockCodexEnv(codexHome, join(root, 'home')),
    PATH: suite.PATH,
    ...tokenEnv('codex'),
  };
  const c = await batonConnect(suite.setup.configPath, ['codex'], { env, cwd: suite.setup.project });
  assert.equal(c.code, 0, `connect failed:\n${c.stdout}\n${c.stderr}`);
  return { delegation, env, connectOut: c.stdout, config: join(codexHome, 'config.toml') };
}

const codexExec = (env: NodeJS.ProcessEnv) =>
  run([bins.codex(), 'exec', '--skip-git-repo-check', 'Hand this task to the scripted agent through baton.'], {
    env,
    cwd: suite.setup.project,
  });

async function codexTasks(t: TestContext): Promise<number> {
  const client = await connectCaller(t, suite.setup.hub, 'codex', CLIENT_TOKENS.codex);
  return (await call<{ tasks: unknown[] }>(client, 'agent_list', {})).tasks.length;
}

test('baton connect codex: codex exec delegates through the hub and prints the delegate answer', async (t) => {
  const { delegation, env, connectOut, config } = await connected(t, 'approved');
  assert.match(
    connectOut,
    /ran: codex mcp add baton --url http:\/\/127\.0\.0\.1:\d+\/mcp\/codex --bearer-token-env-var BATON_TOKEN_CODEX/,
  );
  const toml = readFileSync(config, 'utf8');
  assert.match(toml, /\[mcp_servers\.baton\]\ndefault_tools_approval_mode = "approve"\n/);
  assert.match(toml, /model_provider = "mock"/, 'the rest of the config is kept');
  assert.ok(!toml.includes(CLIENT_TOKENS.codex), 'the token stays in the environment');

  const r = await codexExec(env);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(
    r.stdout.includes(`${FINAL_PREFIX}${DELEGATE_ANSWER}`),
    `stdout: ${r.stdout}\noffered: ${delegation.offered}`,
  );
  delegation.assertRunWaitResult();
});

test('baton connect codex without default_tools_approval_mode: codex exec refuses the tool, no task', async (t) => {
  const { delegation, env, config } = await connected(t, 'unapproved');
  writeFileSync(config, readFileSync(config, 'utf8').replace(/^default_tools_approval_mode = "approve"\n/m, ''));
  assert.doesNotMatch(readFileSync(config, 'utf8'), /default_tools_approval_mode/);
  const before = await codexTasks(t);

  const r = await codexExec(env);
  assert.ok(r.stdout.includes(FAILED_PREFIX), `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.match(r.stdout, /requires approval/, 'refused for want of approval, not for another reason');
  assert.ok(!r.stdout.includes(DELEGATE_ANSWER));
  assert.deepEqual(delegation.asked, ['agent_run']);
  assert.equal(await codexTasks(t), before, 'no task reached the hub');
});
