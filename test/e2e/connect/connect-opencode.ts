// A part of connect-clients.test.ts (its hub and temp dir are the shared suite in clients-suite.ts).
// `baton connect opencode` into isolated XDG dirs, then the real `opencode run` delegating through the hub to the
// scripted ACP agent, with the chat-completions mock scripted as a model that reads each tool result. OpenCode calls
// MCP tools without asking, so connect writes no permission setting (and there is none to remove for a negative run).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { bins } from '../../support/bins.ts';
import { batonConnect, CLIENT_TOKENS, run, tokenEnv } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FINAL_PREFIX } from '../../support/delegation.ts';
import { suite } from './clients-suite.ts';

test('baton connect opencode: opencode run delegates through the hub and prints the delegate answer', async (t) => {
  const delegation = new Delegation(suite.setup.project);
  const mock = await startChatMock(delegation.chat);
  t.after(() => mock.close());
  const root = join(suite.dir, 'opencode', 'user');
  const env: NodeJS.ProcessEnv = { ...opencodeEnv(root, mock), PATH: suite.PATH, ...tokenEnv('opencode') };
  const c = await batonConnect(suite.setup.configPath, ['opencode'], { env, cwd: suite.setup.project });
  assert.equal(c.code, 0, `connect failed:\n${c.stdout}\n${c.stderr}`);
  assert.match(c.stdout, /ran: opencode mcp add baton --url http:\/\/127\.0\.0\.1:\d+\/mcp\/opencode --header/);
  const text = readFileSync(join(root, 'config', 'opencode', 'opencode.json'), 'utf8');
  assert.deepEqual(JSON.parse(text).mcp.baton.headers, { Authorization: 'Bearer {env:BATON_TOKEN_OPENCODE}' });
  assert.ok(!text.includes(CLIENT_TOKENS.opencode), 'the token stays in the environment');

  const r = await run([bins.opencode(), 'run', 'Hand this task to the scripted agent through baton.'], {
    env,
    cwd: suite.setup.project,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(
    r.stdout.includes(`${FINAL_PREFIX}${DELEGATE_ANSWER}`),
    `stdout: ${r.stdout}\noffered: ${delegation.offered}`,
  );
  delegation.assertRunWaitResult();
});
