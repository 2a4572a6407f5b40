// A part of connect-clients.test.ts (its hub and temp dir are the shared suite in clients-suite.ts).
// `baton connect gemini` (twice, into settings of the user's own) into an isolated HOME, then the real `gemini -p`
// delegating through the hub to the scripted ACP agent, with the Gemini mock scripted as a model that reads each tool
// result. Without the `trust` connect writes, Gemini CLI leaves baton's tools out of a non-interactive run, so nothing
// is delegated.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { bins } from '../../support/bins.ts';
import { batonConnect, CLIENT_TOKENS, run, tokenEnv } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FINAL_PREFIX, NO_TOOLS } from '../../support/delegation.ts';
import { call, connectCaller } from '../../support/hub.ts';
import { suite } from './clients-suite.ts';

/**
 * `baton connect gemini` runs twice into a home of its own whose settings already hold the user's own things (a theme,
 * another MCP server): the second run must leave one baton entry and keep the rest. Each test's Gemini CLI then gets a
 * copy of the settings it wrote, without the other server (nothing to start there) and, for the run without trust,
 * without that; so the connect and its `gemini mcp add` are not repeated per test.
 */
let connection: Promise<{ connectOut: string; settingsText: string }> | undefined;
function connectOnce() {
  connection ??= (async () => {
    const home = join(suite.dir, 'gemini', 'connected', 'home');
    const userSettings = { ui: { theme: 'Dracula' }, mcpServers: { other: { command: '/bin/true' } } };
    const env = {
      ...geminiEnv(home, { baseUrl: 'http://127.0.0.1:9' }, userSettings),
      PATH: suite.PATH,
      ...tokenEnv('gemini'),
    };
    let connectOut = '';
    for (let i = 0; i < 2; i++) {
      const c = await batonConnect(suite.setup.configPath, ['gemini'], { env, cwd: suite.setup.project });
      assert.equal(c.code, 0, `connect ${i + 1} failed:\n${c.stdout}\n${c.stderr}`);
      connectOut ||= c.stdout;
    }
    return { connectOut, settingsText: readFileSync(join(home, '.gemini', 'settings.json'), 'utf8') };
  })();
  return connection;
}

async function connected(t: TestContext, name: string) {
  const delegation = new Delegation(suite.setup.project);
  const mock = await startGeminiMock(delegation.gemini);
  t.after(() => mock.close());
  const home = join(suite.dir, 'gemini', name, 'home');
  const env: NodeJS.ProcessEnv = { ...geminiEnv(home, mock), PATH: suite.PATH, ...tokenEnv('gemini') };
  const { connectOut, settingsText } = await connectOnce();
  const settings = join(home, '.gemini', 'settings.json');
  const copy = JSON.parse(settingsText);
  delete copy.mcpServers.other;
  writeFileSync(settings, JSON.stringify(copy), { mode: 0o600 });
  return { delegation, env, connectOut, settingsText, settings };
}

const geminiP = (env: NodeJS.ProcessEnv) =>
  run([bins.gemini(), '-p', 'Hand this task to the scripted agent through baton.', '-o', 'json'], {
    env,
    cwd: suite.setup.project,
  });

async function geminiTasks(t: TestContext): Promise<number> {
  const client = await connectCaller(t, suite.setup.hub, 'gemini', CLIENT_TOKENS.gemini);
  return (await call<{ tasks: unknown[] }>(client, 'agent_list', {})).tasks.length;
}

test('baton connect gemini, run twice: one trusted baton entry, the rest kept; gemini -p delegates through the hub', async (t) => {
  const { delegation, env, connectOut, settingsText } = await connected(t, 'trusted');
  assert.match(connectOut, /ran: gemini mcp add --scope user --transport http --trust --header/);
  const json = JSON.parse(settingsText);
  assert.deepEqual(Object.keys(json.mcpServers).sort(), ['baton', 'other']);
  assert.deepEqual(json.mcpServers.baton, {
    url: `${suite.setup.hub.url}/mcp/gemini`,
    type: 'http',
    headers: { Authorization: `Bearer \${BATON_TOKEN_GEMINI}` },
    trust: true,
  });
  assert.ok(!settingsText.includes(CLIENT_TOKENS.gemini), 'the token stays in the environment');
  assert.equal(json.ui.theme, 'Dracula', 'the rest of the settings is kept');
  assert.equal(json.security.auth.selectedType, 'gemini-api-key');

  const r = await geminiP(env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { response: string };
  assert.equal(out.response, `${FINAL_PREFIX}${DELEGATE_ANSWER}`, `offered: ${delegation.offered}`);
  delegation.assertRunWaitResult();
});

test('baton connect gemini without trust: gemini -p is not offered baton tools, no task', async (t) => {
  const { delegation, env, settings } = await connected(t, 'untrusted');
  const json = JSON.parse(readFileSync(settings, 'utf8'));
  delete json.mcpServers.baton.trust;
  writeFileSync(settings, JSON.stringify(json));
  const before = await geminiTasks(t);

  const r = await geminiP(env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { response: string }).response, NO_TOOLS);
  assert.ok(!delegation.offered.some((n) => n.includes('agent_run')), `offered: ${delegation.offered}`);
  assert.deepEqual(delegation.asked, []);
  assert.equal(await geminiTasks(t), before, 'no task reached the hub');
});
