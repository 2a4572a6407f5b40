// A provider's start loads only its own code (rule: lazy-commands): `baton mcp --provider X` through the official MCP
// SDK client, with every module the process loads logged (test/support/module-log.mjs) up to the answered tools/list.
// None of the hub's config or server, the store, the agent registry, the ACP SDK, ws or another provider may be among
// them; the provider's own module must be (so the log is known to work). A command that reads the hub config checks
// every agent entry against its kind's schema without loading the registry or any adapter; the commands that only talk
// to the running hub load no schema at all, and neither a hub's start nor a 2025-era session takes the undici path.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bins, NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { connectCaller, isolatedEnv, runGroup, startHub, writeCliConfig, writeHubConfig } from '../../support/hub.ts';
import { spawnStdioClient } from '../../support/stdio-client.ts';
import { tempDir } from '../../support/tmp.ts';

const MODULE_LOG_HOOK = fileURLToPath(new URL('../../support/module-log.mjs', import.meta.url));

/** Code a provider's start must not load, as URL fragments. */
const NEVER = [
  '/dist/faces/hub/config.js',
  '/dist/faces/hub/server.js',
  '/dist/faces/attach/',
  '/dist/core/store.js',
  '/dist/core/store-backup.js',
  '/dist/core/engine.js',
  '/dist/agents/registry.js',
  '/dist/agents/acp/',
  '/dist/agents/opencode/',
  '/node_modules/@agentclientprotocol/',
  '/node_modules/ws/',
  'node:sqlite',
];
const PROVIDERS = ['claude', 'codex', 'gemini'] as const;

for (const provider of PROVIDERS) {
  test(`baton mcp --provider ${provider}: start + tools/list loads its own code and no hub, store, ACP SDK, ws or other provider`, async (t) => {
    const dir = tempDir(t, `baton-startup-modules-${provider}-`);
    const home = join(dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    const log = join(dir, 'modules.log');
    const extra =
      provider === 'codex' ? ['--codex-command', bins.codex(), '--user-codex-home', join(dir, 'user-codex')] : [];
    if (provider === 'codex') mkdirSync(join(dir, 'user-codex'), { mode: 0o700 });
    const { client, close } = await spawnStdioClient({
      command: process.execPath,
      args: ['--import', MODULE_LOG_HOOK, join(REPO_ROOT, 'bin/baton.js'), 'mcp', '--provider', provider, ...extra],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        BATON_HOME: join(dir, 'baton-home'),
        BATON_MODULE_LOG: log,
        ...NODE_CACHE_ENV,
      },
      cwd: dir,
    });
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.length > 0, 'the provider lists its tools');
      const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      assert.ok(
        loaded.some((u) => u.includes(`/dist/faces/provider/${provider}/`)),
        `the module log names the ${provider} provider's own code (${loaded.length} modules logged)`,
      );
      const others = PROVIDERS.filter((p) => p !== provider).map((p) => `/dist/faces/provider/${p}/`);
      const unwanted = loaded.filter((u) =>
        [...NEVER, ...others, '/dist/faces/provider/browser/'].some((n) => u.includes(n)),
      );
      assert.deepEqual(unwanted, [], `modules a ${provider} provider's start must not load`);
    } finally {
      await close();
    }
  });
}

test('a command that reads the hub config (`baton examples`) checks every agent kind without loading the registry or an adapter', async (t) => {
  const dir = tempDir(t, 'baton-startup-modules-config-');
  const project = join(dir, 'project');
  mkdirSync(project);
  // One agent of every kind, each with a kind-specific key, so each kind's schema really checks an entry.
  writeHubConfig({
    dir,
    roots: [project],
    agents: {
      claude: { kind: 'claude', effort: 'high' },
      codex: { kind: 'codex', command: ['codex'] },
      opencode: { kind: 'opencode', model: 'mock/model' },
      gemini: { kind: 'acp', command: ['gemini', '--acp'] },
    },
  });
  const log = join(dir, 'modules.log');
  const ran = await runGroup(
    process.execPath,
    ['--import', MODULE_LOG_HOOK, join(REPO_ROOT, 'bin/baton.js'), 'examples'],
    isolatedEnv(dir, { BATON_MODULE_LOG: log, ...NODE_CACHE_ENV }),
  );
  assert.equal(ran.code, 0, ran.stderr);
  const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  for (const schema of ['acp', 'claude', 'codex', 'opencode'])
    assert.ok(
      loaded.some((u) => u.endsWith(`/dist/agents/${schema}/config.js`)),
      `the ${schema} config schema is loaded (${loaded.length} modules logged)`,
    );
  const adapters = [
    '/dist/agents/registry.js',
    '/dist/agents/claude/agent.js',
    '/dist/agents/codex/adapter.js',
    '/dist/agents/opencode/agent.js',
    '/dist/agents/acp/agent.js',
    '/dist/faces/hub/server.js',
    '/dist/core/store.js',
    '/dist/core/engine.js',
    '/node_modules/@agentclientprotocol/',
    '/node_modules/@modelcontextprotocol/',
    'node:sqlite',
  ];
  const unwanted = loaded.filter((u) => adapters.some((n) => u.includes(n)));
  assert.deepEqual(unwanted, [], 'modules a config-reading command must not load');
});

test('a hub start and a 2025-era session load no undici path; `baton tasks` and `health` load no config schema', async (t) => {
  const dir = tempDir(t, 'baton-startup-modules-hub-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hubLog = join(dir, 'hub-modules.log');
  const hub = await startHub(
    t,
    { dir, roots: [work], agents: {} },
    { NODE_OPTIONS: `--import=${MODULE_LOG_HOOK}`, BATON_MODULE_LOG: hubLog },
  );
  const alice = await connectCaller(t, hub, 'alice');
  assert.ok((await alice.listTools()).tools.length > 0, 'the 2025-era session lists its tools');
  const hubLoaded = readFileSync(hubLog, 'utf8').split('\n').filter(Boolean);
  assert.ok(
    hubLoaded.some((u) => u.endsWith('/dist/faces/hub/server.js')),
    `the module log names the hub's server (${hubLoaded.length} modules logged)`,
  );
  // An ES-module import of node:http or node:http2 (the SDK's Node adapter makes both, through @hono/node-server)
  // loads Node's bundled undici; a hub serving 2025-era sessions needs neither.
  const undiciPath = hubLoaded.filter(
    (u) =>
      u === 'node:http' ||
      u === 'node:http2' ||
      u.includes('/node_modules/@hono/') ||
      u.includes('/node_modules/@modelcontextprotocol/node/'),
  );
  assert.deepEqual(undiciPath, [], 'modules a hub start and a 2025-era session must not load');

  let runs = 0;
  const cli = async (config: string, args: string[]) => {
    const log = join(dir, `cli-${++runs}.log`);
    const ran = await runGroup(
      process.execPath,
      ['--import', MODULE_LOG_HOOK, join(REPO_ROOT, 'bin/baton.js'), '--config', config, ...args],
      isolatedEnv(dir, { BATON_MODULE_LOG: log, ...NODE_CACHE_ENV }),
    );
    return { ...ran, loaded: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
  };
  const good = writeCliConfig(hub, join(dir, 'cli', 'config.json'));
  for (const args of [['tasks', 'list'], ['health']]) {
    const ran = await cli(good, args);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, args[0] === 'health' ? /"ok": true/ : /no tasks/);
    const schema = ran.loaded.filter(
      (u) => u.includes('/node_modules/zod/') || u.endsWith('/dist/faces/hub/config.js'),
    );
    assert.deepEqual(schema, [], `\`baton ${args.join(' ')}\` loads no config schema`);
  }

  // The hub checked the whole config at its start: a root deleted since does not stop the commands that talk to it.
  const config = JSON.parse(readFileSync(good, 'utf8'));
  const goneRoot = join(dir, 'gone', 'config.json');
  mkdirSync(join(dir, 'gone'), { mode: 0o700 });
  writeFileSync(goneRoot, JSON.stringify({ ...config, roots: [join(dir, 'deleted-project')] }), { mode: 0o600 });
  const listed = await cli(goneRoot, ['tasks', 'list']);
  assert.equal(listed.code, 0, listed.stderr);
  // A listen or control that is not plainly valid takes the full load, whose error names the bad key.
  const typo = join(dir, 'typo', 'config.json');
  mkdirSync(join(dir, 'typo'), { mode: 0o700 });
  writeFileSync(typo, JSON.stringify({ ...config, listen: { ...config.listen, hots: 'x' } }), { mode: 0o600 });
  const refused = await cli(typo, ['health']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /listen: unknown key\(s\) hots/);
});
