// `baton mcp --provider codex` over the real current Codex (app-server path) and the Responses mock, through the
// official MCP SDK client over stdio: the curated contract, the isolated home, replies across a bridge restart, and
// auth invalidation.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type CallToolResult, ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { httpError, MOCK_MODEL, ResponsesMock, reply, userTexts } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import { until } from '../../support/poll.ts';
import { spawnV1StdioClient } from '../../support/stdio-client.ts';
import {
  type Connected,
  connectProvider,
  type Layout,
  makeLayout,
  OTHER_MODEL,
  PLANTED_SECRET,
  providerLaunch,
  textOf,
} from './codex/harness.ts';

let mock: ResponsesMock;
let layout: Layout;
let conn: Connected;

before(async () => {
  mock = await ResponsesMock.start();
  layout = makeLayout();
  conn = await connectProvider(bins.codex(), layout, mock, ['--goal', 'DEFAULT-GOAL-7']);
});
after(async () => {
  await conn?.close();
  await mock?.close();
  layout?.cleanup();
});

interface Schema {
  additionalProperties?: boolean;
  required?: string[];
  properties: Record<string, { enum?: string[] }>;
}
const codeOf = (res: { structuredContent?: unknown }) => {
  const sc = (res.structuredContent ?? {}) as { code?: string; action?: string };
  return { code: sc.code, action: sc.action };
};

const developerTexts = (input: Array<Record<string, unknown>>) =>
  input
    .filter((i) => i.type === 'message' && i.role === 'developer')
    .flatMap((i) => (i.content as Array<{ text?: string }>).map((c) => c.text ?? ''));
const effortOf = (n: number) => (mock.turns[n]!.raw.body as { reasoning?: { effort?: string } }).reasoning?.effort;

test('ready line, the eight tools, strict curated schemas', async () => {
  assert.match(conn.stderr(), /\[baton\] ready \(provider: codex\)/);
  const { tools } = await conn.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [
    'codex',
    'codex-cancel',
    'codex-commentary',
    'codex-peek',
    'codex-reply',
    'codex-result',
    'codex-start',
    'codex-status',
  ]);
  const byName = new Map(tools.map((t) => [t.name, t.inputSchema as unknown as Schema]));
  for (const name of ['codex', 'codex-reply', 'codex-start']) {
    assert.equal(byName.get(name)!.additionalProperties, false, `${name} is closed`);
  }
  const codex = byName.get('codex')!;
  assert.deepEqual(codex.required, ['prompt', 'sandbox']);
  assert.deepEqual(codex.properties.model!.enum, [MOCK_MODEL, OTHER_MODEL]);
  assert.deepEqual(codex.properties.model_reasoning_effort!.enum, ['medium', 'high', 'xhigh', 'max']);
  assert.deepEqual(Object.keys(byName.get('codex-reply')!.properties).sort(), ['goal', 'prompt', 'threadId']);
});

test('unknown, missing or invalid arguments are -32602 before Codex starts', async () => {
  const before = mock.turns.length;
  const base = { prompt: 'p', sandbox: 'read-only', cwd: layout.workspace };
  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ['codex', { ...base, config: { model: 'x' } }, /unknown argument.*"config"/],
    ['codex', { ...base, 'approval-policy': 'never' }, /"approval-policy"/],
    ['codex', { ...base, 'developer-instructions': 'x' }, /"developer-instructions"/],
    ['codex', { ...base, 'base-instructions': 'x' }, /"base-instructions"/],
    ['codex', { ...base, 'compact-prompt': 'x' }, /"compact-prompt"/],
    ['codex', { prompt: 'p', cwd: layout.workspace }, /sandbox/],
    ['codex', { ...base, model: 'gpt-4o' }, /model/],
    ['codex', { ...base, model_reasoning_effort: 'low' }, /model_reasoning_effort/],
    ['codex', { ...base, cwd: 'relative/dir' }, /absolute/],
    ['codex-reply', { threadId: 't', prompt: 'p', sandbox: 'read-only' }, /"sandbox"/],
    ['codex-reply', { threadId: 't', prompt: 'p', model_reasoning_effort: 'high' }, /model_reasoning_effort/],
    ['codex-start', { prompt: 'p', cwd: layout.workspace }, /sandbox/],
    ['codex-start', { prompt: 'p', threadId: 't', model: MOCK_MODEL }, /inherits/],
  ];
  for (const [name, args, message] of refused) {
    await assert.rejects(
      conn.call(name, args),
      (err: unknown) =>
        err instanceof ProtocolError && err.code === ProtocolErrorCode.InvalidParams && message.test(err.message),
      `${name} ${JSON.stringify(args)}`,
    );
  }
  assert.equal(mock.turns.length, before, 'no model request was made');
});

let threadId = '';

test('codex returns the seed shape; the goal becomes developer instructions; model and effort are curated', async () => {
  mock.push(reply('first answer'));
  const res = await conn.call('codex', {
    prompt: 'do the thing',
    cwd: layout.workspace,
    sandbox: 'read-only',
    model: OTHER_MODEL,
    model_reasoning_effort: 'high',
    goal: 'KEEP-API-STABLE',
  });
  assert.equal(res.isError, undefined);
  assert.equal(textOf(res), 'first answer');
  const sc = res.structuredContent as { threadId: string; content: string };
  assert.equal(sc.content, 'first answer');
  assert.match(sc.threadId, /^[0-9a-f-]{36}$/);
  threadId = sc.threadId;
  const sent = mock.turns.at(-1)!;
  assert.equal(sent.model, OTHER_MODEL);
  assert.equal(effortOf(mock.turns.length - 1), 'high');
  assert.ok(
    developerTexts(sent.input).some((t) => t.includes('KEEP-API-STABLE')),
    'goal in developer instructions',
  );
  assert.ok(!developerTexts(sent.input).some((t) => t.includes('DEFAULT-GOAL-7')), 'a call goal overrides the default');
  assert.ok(!sent.toolNames.some((n) => n.startsWith('multi_agent') || n === 'spawn_agent'), 'no sub-agent tools');
});

test('codex-reply inherits model and effort; its goal is a prompt reminder', async () => {
  mock.push(reply('second answer'));
  const res = await conn.call('codex-reply', { threadId, prompt: 'and then', goal: 'REPLY-REMINDER' });
  assert.equal(textOf(res), 'second answer');
  assert.equal((res.structuredContent as { threadId: string }).threadId, threadId);
  const sent = mock.turns.at(-1)!;
  assert.equal(sent.model, OTHER_MODEL);
  assert.equal(effortOf(mock.turns.length - 1), 'high');
  const lastUser = userTexts(sent).at(-1)!;
  assert.match(lastUser, /REPLY-REMINDER/);
  assert.match(lastUser, /and then$/);
  assert.ok(
    developerTexts(sent.input).some((t) => t.includes('KEEP-API-STABLE')),
    'thread goal persists',
  );
});

test('the server default goal applies unless "" suppresses it; allow_subagents is per session', async () => {
  mock.push(reply('a'), reply('b'));
  await conn.call('codex', { prompt: 'x', cwd: layout.workspace, sandbox: 'read-only', allow_subagents: true });
  const withDefault = mock.turns.at(-1)!;
  assert.ok(developerTexts(withDefault.input).some((t) => t.includes('DEFAULT-GOAL-7')));
  assert.ok(
    withDefault.toolNames.some((n) => n.startsWith('multi_agent')),
    'sub-agent tools for this session',
  );
  assert.equal(effortOf(mock.turns.length - 1), 'xhigh', 'server default effort');
  assert.equal(withDefault.model, MOCK_MODEL, 'server default model');
  await conn.call('codex', { prompt: 'y', cwd: layout.workspace, sandbox: 'read-only', goal: '' });
  const suppressed = mock.turns.at(-1)!;
  assert.ok(!developerTexts(suppressed.input).some((t) => t.includes('DEFAULT-GOAL-7')));
  assert.ok(!suppressed.toolNames.some((n) => n.startsWith('multi_agent')), 'not inherited by other sessions');
});

test('isolated home under tmp/codex-homes: private modes, exact config, auth snapshot, no MCP servers', () => {
  const root = join(layout.launchDir, 'tmp', 'codex-homes');
  const home = join(root, 'app-server');
  for (const dir of [root, home]) assert.equal(statSync(dir).mode & 0o777, 0o700, dir);
  for (const file of ['config.toml', 'auth.json']) assert.equal(statSync(join(home, file)).mode & 0o777, 0o600, file);
  assert.ok(readFileSync(join(home, 'auth.json'), 'utf8').includes(PLANTED_SECRET), 'auth.json copied');
  const config = readFileSync(join(home, 'config.toml'), 'utf8');
  for (const line of [
    'sandbox_mode = "workspace-write"',
    'approval_policy = "never"',
    'web_search = "cached"',
    'check_for_update_on_startup = false',
    'allow_login_shell = false',
    '[history]\npersistence = "none"',
    '[sandbox_workspace_write]\nnetwork_access = true',
    '[agents]\nenabled = false',
    '[features]\nmulti_agent = false\napps = false\nplugins = false\nhooks = false\nskill_mcp_dependency_install = false',
  ]) {
    assert.ok(config.includes(line), `config has ${line}`);
  }
  assert.doesNotMatch(config, /mcp_servers|service_tier|fast_mode/);
  assert.doesNotMatch(conn.stderr(), new RegExp(PLANTED_SECRET));
});

test('an SDK v1 client (2025 protocol) gets the same contract: tools, -32602, a reply on the same thread', async () => {
  const v1 = await spawnV1StdioClient(providerLaunch(bins.codex(), layout, mock));
  try {
    const { tools } = await v1.client.listTools();
    assert.ok(tools.some((t) => t.name === 'codex-reply'));
    await assert.rejects(
      v1.client.callTool({ name: 'codex', arguments: { prompt: 'p', cwd: layout.workspace } }),
      (err: unknown) => (err as { code?: number }).code === -32602 && /sandbox/.test((err as Error).message),
    );
    mock.push(reply('v1 answer'));
    const res = (await v1.client.callTool(
      { name: 'codex-reply', arguments: { threadId, prompt: 'from v1' } },
      undefined,
      {
        timeout: 120_000,
      },
    )) as CallToolResult;
    assert.equal(textOf(res), 'v1 answer');
  } finally {
    await v1.close();
  }
});

test('codex-reply works across a bridge restart (thread/resume); auth invalidation then refuses new turns', async () => {
  await conn.close();
  conn = await connectProvider(bins.codex(), layout, mock);
  mock.push(reply('after restart'));
  const res = await conn.call('codex-reply', { threadId, prompt: 'still there?' });
  assert.equal(textOf(res), 'after restart');
  const sent = mock.turns.at(-1)!;
  assert.ok(userTexts(sent).includes('do the thing'), 'the resumed thread carries its history');
  assert.equal(sent.model, OTHER_MODEL, 'model inherited after restart');

  mock.push(httpError(401, 'token revoked'));
  const denied = await conn.call('codex-reply', { threadId, prompt: 'again' });
  assert.equal(denied.isError, true);
  assert.deepEqual(codeOf(denied), { code: 'codex_auth_invalidated', action: 'reauthenticate_and_restart' });
  const turns = mock.turns.length;
  for (const [name, args] of [
    ['codex', { prompt: 'x', sandbox: 'read-only', cwd: layout.workspace }],
    ['codex-reply', { threadId, prompt: 'x' }],
    ['codex-start', { prompt: 'x', sandbox: 'read-only', cwd: layout.workspace }],
  ] as const) {
    const refused = await conn.call(name, args);
    assert.equal(codeOf(refused).code, 'codex_auth_invalidated', name);
  }
  assert.equal(mock.turns.length, turns, 'refused locally');
  await conn.responsive();
  const peek = await conn.call('codex-peek', {});
  assert.deepEqual(peek.structuredContent, { turns: [], abandonedTurnsProcessWide: 0 });
  const status = await conn.call('codex-status', { jobId: 'nope', cursor: 0 });
  assert.equal(status.isError, true, 'status still answers (unknown job)');
});

test('a login rotated in the isolated home is written back at exit only while the user file is unchanged (AG-9)', async () => {
  const isolated = join(layout.launchDir, 'tmp', 'codex-homes', 'app-server', 'auth.json');
  const userAuth = join(layout.userHome, 'auth.json');
  const original = readFileSync(userAuth, 'utf8');
  // Stands in for Codex refreshing its token during a call (the mock cannot make Codex rotate a login).
  writeFileSync(isolated, '{"OPENAI_API_KEY":"rotated-in-isolation"}');
  await conn.close();
  await until(() => readFileSync(userAuth, 'utf8') !== original, { what: 'the refreshed login written back' });
  assert.match(readFileSync(userAuth, 'utf8'), /rotated-in-isolation/);
  assert.equal(statSync(userAuth).mode & 0o777, 0o600);

  // A newer login by the user wins over a stale bridge.
  conn = await connectProvider(bins.codex(), layout, mock);
  writeFileSync(isolated, '{"OPENAI_API_KEY":"stale-bridge-token"}');
  writeFileSync(userAuth, '{"OPENAI_API_KEY":"fresh-user-login"}');
  const exited = new Promise((r) => {
    conn.transport.onclose = () => r(undefined);
  });
  await conn.close();
  await exited; // the bridge process has exited: its write-back decision is final
  assert.match(readFileSync(userAuth, 'utf8'), /fresh-user-login/);
});
