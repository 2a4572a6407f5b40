// `baton connect` as a command: bad input (unknown client, client not installed, unsupported scope, unreadable client
// config, hub without that caller) changes nothing; --print runs nothing; running twice keeps one baton entry and
// everything else in the client's config (Codex and OpenCode here; Claude Code and Gemini CLI in connect-clients.test.ts,
// whose connects feed real delegating runs); --provider registers a command that runs from any directory. The client
// CLIs are the real ones from npm; no model is involved here.
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ConnectError, type Plan, runPlan } from '../../../src/faces/hub/clients.ts';
import { NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { batonConnect, CLIENT_TOKENS, clientPath, run } from '../../support/connect.ts';
import { CONTROL_TOKEN, writeHubConfig } from '../../support/hub.ts';
import { portForLater } from '../../support/ports.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const PORT = 43_299;

function setup(t: Parameters<typeof tempDir>[0], callers: readonly string[] = Object.keys(CLIENT_TOKENS)) {
  const dir = tempDir(t, 'baton-connect-cli-');
  const project = join(dir, 'project');
  const home = join(dir, 'home');
  mkdirSync(project, { recursive: true });
  mkdirSync(home, { recursive: true });
  const configPath = writeHubConfig({
    dir,
    roots: [project],
    agents: {},
    callers: Object.fromEntries(callers.map((c) => [c, { token: CLIENT_TOKENS[c as keyof typeof CLIENT_TOKENS] }])),
  });
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  config.listen.port = PORT;
  writeFileSync(configPath, JSON.stringify(config));
  const env: NodeJS.ProcessEnv = {
    PATH: clientPath(dir),
    // baton and the Node clients (Codex's launcher, Gemini CLI) reuse the suite's compiled code instead of a cold
    // cache in each fresh HOME.
    ...NODE_CACHE_ENV,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    GEMINI_CLI_NO_RELAUNCH: 'true',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    NO_COLOR: '1',
  };
  const connect = (args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) =>
    batonConnect(configPath, args, { env: opts.env ?? env, cwd: opts.cwd ?? project });
  return { dir, project, home, env, configPath, connect };
}

/**
 * Every file under `dir`, relative, sorted: to prove a refused command wrote nothing. Node's compile cache, which every
 * baton start keeps under $XDG_CACHE_HOME (compiled code only; docs/hub.md), is not something a command wrote.
 */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((p) => !p.startsWith('.cache/baton/node-compile-cache/'))
    .sort();
}

test('connect: an unknown client is refused with the known ones listed', async (t) => {
  const s = setup(t);
  const r = await s.connect(['cursor']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /unknown client "cursor"; baton can connect: claude, codex, gemini, opencode/);
  assert.deepEqual(filesUnder(s.home), []);
});

test('connect: a client that is not on PATH says how to install it and writes nothing', async (t) => {
  const s = setup(t);
  const env = { ...s.env, PATH: dirname(process.execPath) };
  for (const [client, install] of [
    ['claude', 'npm install -g @anthropic-ai/claude-code'],
    ['codex', 'npm install -g @openai/codex'],
    ['gemini', 'npm install -g @google/gemini-cli'],
    ['opencode', 'npm install -g opencode-ai'],
  ]) {
    const r = await s.connect([client!], { env });
    assert.equal(r.code, 1, client);
    assert.match(r.stderr, /is not installed \(no `\w+` on PATH\)/);
    assert.ok(r.stderr.includes(install!), r.stderr);
  }
  assert.deepEqual(filesUnder(s.home), []);
  assert.deepEqual(filesUnder(s.project), []);
});

test('connect --print: shows each command and edit, runs nothing, even with no client installed', async (t) => {
  const s = setup(t);
  const env = { ...s.env, PATH: dirname(process.execPath) };
  const claude = await s.connect(['claude', '--print'], { env });
  assert.equal(claude.code, 0, claude.stderr);
  assert.ok(
    claude.stdout.includes(
      `claude mcp add --scope user --transport http baton http://127.0.0.1:${PORT}/mcp/claude --header 'Authorization: Bearer \${BATON_TOKEN_CLAUDE}'`,
    ),
    claude.stdout,
  );
  assert.ok(claude.stdout.includes(`edit ${join(s.home, '.claude', 'settings.json')}`));
  assert.match(claude.stdout, /"mcp__baton" to permissions\.allow/);
  const codex = await s.connect(['codex', '--print'], { env });
  assert.ok(
    codex.stdout.includes(
      `codex mcp add baton --url http://127.0.0.1:${PORT}/mcp/codex --bearer-token-env-var BATON_TOKEN_CODEX`,
    ),
  );
  assert.match(codex.stdout, /default_tools_approval_mode = "approve" under \[mcp_servers\.baton\]/);
  const gemini = await s.connect(['gemini', '--print'], { env });
  assert.ok(
    gemini.stdout.includes(
      `gemini mcp add --scope user --transport http --trust --header 'Authorization: Bearer \${BATON_TOKEN_GEMINI}' baton http://127.0.0.1:${PORT}/mcp/gemini`,
    ),
  );
  const opencode = await s.connect(['opencode', '--print'], { env });
  assert.ok(
    opencode.stdout.includes(
      `opencode mcp add baton --url http://127.0.0.1:${PORT}/mcp/opencode --header 'Authorization=Bearer {env:BATON_TOKEN_OPENCODE}'`,
    ),
  );
  for (const r of [claude, codex, gemini, opencode]) assert.ok(!r.stdout.includes('-token-0123'), 'no token printed');
  assert.deepEqual(filesUnder(s.home), []);
});

test('connect: bad scope, a scope the client lacks, and a hub without that caller are refused', async (t) => {
  const s = setup(t);
  const bogus = await s.connect(['claude', '--scope', 'global']);
  assert.equal(bogus.code, 1);
  assert.match(bogus.stderr, /--scope must be user or project/);
  const codex = await s.connect(['codex', '--scope', 'project']);
  assert.equal(codex.code, 1);
  assert.match(codex.stderr, /Codex keeps MCP servers in its user config/);
  const noGemini = setup(t, ['claude']);
  const r = await noGemini.connect(['gemini']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /has no caller "gemini"/);
  assert.deepEqual(filesUnder(s.home), []);
  assert.deepEqual(filesUnder(noGemini.home), []);
});

// Running `baton connect claude` twice at user scope (one baton entry and one allow rule, the user's other servers and
// rules kept) is asserted in test/e2e/connect/connect-claude.ts (run by connect-clients.test.ts), whose connect feeds the
// real claude -p runs there.

test('connect codex twice: one [mcp_servers.baton] with one approval line; other servers kept', async (t) => {
  const s = setup(t);
  const codexHome = join(s.dir, 'codex-home');
  mkdirSync(codexHome, { mode: 0o700 });
  const config = join(codexHome, 'config.toml');
  writeFileSync(config, 'model = "gpt-x"\n\n[mcp_servers.other]\ncommand = "/bin/true"\n');
  const env = { ...s.env, CODEX_HOME: codexHome };
  for (let i = 0; i < 2; i++) {
    const r = await s.connect(['codex'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /edited .*config\.toml: set default_tools_approval_mode = "approve"/);
  }
  const toml = readFileSync(config, 'utf8');
  assert.equal(toml.match(/\[mcp_servers\.baton\]/g)?.length, 1, toml);
  assert.equal(toml.match(/default_tools_approval_mode/g)?.length, 1, toml);
  assert.match(toml, /model = "gpt-x"/);
  assert.match(toml, /\[mcp_servers\.other\]\ncommand = "\/bin\/true"/);
  assert.match(toml, /bearer_token_env_var = "BATON_TOKEN_CODEX"/);
  assert.ok(!toml.includes(CLIENT_TOKENS.codex));
});

// Running `baton connect gemini` twice at user scope (one trusted entry, the user's other settings kept) is asserted
// in test/e2e/connect/connect-gemini.ts (run by connect-clients.test.ts), whose connect feeds the real gemini -p runs.
test('connect gemini --scope project writes the project settings and leaves the user settings alone', async (t) => {
  const s = setup(t);
  const settings = join(s.home, '.gemini', 'settings.json');
  mkdirSync(dirname(settings), { recursive: true });
  const json = { ui: { theme: 'Dracula' }, mcpServers: { other: { command: '/bin/true' } } };
  writeFileSync(settings, JSON.stringify(json));

  const project = await s.connect(['gemini', '--scope', 'project']);
  assert.equal(project.code, 0, project.stderr);
  const local = JSON.parse(readFileSync(join(s.project, '.gemini', 'settings.json'), 'utf8'));
  assert.equal(local.mcpServers.baton.trust, true);
  assert.deepEqual(JSON.parse(readFileSync(settings, 'utf8')), json, 'the user settings are left alone');
});

test('connect opencode --scope project twice: mcp.baton in ./opencode.json, the rest kept; unreadable JSON refused', async (t) => {
  const s = setup(t);
  const file = join(s.project, 'opencode.json');
  writeFileSync(file, JSON.stringify({ theme: 'tokyonight', mcp: { other: { type: 'local', command: ['x'] } } }));
  for (let i = 0; i < 2; i++) {
    const r = await s.connect(['opencode', '--scope', 'project']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /edited .*opencode\.json: set mcp\.baton/);
  }
  const json = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(json.theme, 'tokyonight');
  assert.deepEqual(json.mcp.other, { type: 'local', command: ['x'] });
  assert.deepEqual(json.mcp.baton, {
    type: 'remote',
    url: `http://127.0.0.1:${PORT}/mcp/opencode`,
    headers: { Authorization: 'Bearer {env:BATON_TOKEN_OPENCODE}' },
  });

  const commented = '{\n  // mine\n  "theme": "x"\n}\n';
  writeFileSync(file, commented);
  const r = await s.connect(['opencode', '--scope', 'project']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /opencode\.json has comments; remove them/);
  assert.equal(readFileSync(file, 'utf8'), commented, 'left as it was');
});

test('connect claude with an unreadable settings.json: refused before anything runs', async (t) => {
  const s = setup(t);
  const settings = join(s.home, '.claude', 'settings.json');
  mkdirSync(dirname(settings), { recursive: true });
  writeFileSync(settings, '{ not json');
  const r = await s.connect(['claude']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /settings\.json is not plain JSON/);
  assert.equal(readFileSync(settings, 'utf8'), '{ not json');
  assert.ok(!existsSync(join(s.home, '.claude.json')), 'claude mcp add never ran');
});

test('runPlan: a failing step puts back every file touched before it', async (t) => {
  const dir = tempDir(t, 'baton-connect-plan-');
  const kept = join(dir, 'kept.json');
  const created = join(dir, 'created.json');
  writeFileSync(kept, '{"a":1}\n');
  const plan: Plan = {
    client: 'claude',
    scope: 'user',
    files: [kept, created],
    steps: [
      {
        kind: 'exec',
        argv: [
          process.execPath,
          '-e',
          `require('node:fs').writeFileSync(${JSON.stringify(kept)}, 'changed'); require('node:fs').writeFileSync(${JSON.stringify(created)}, 'new')`,
        ],
        why: 'a client CLI that writes its files',
      },
      {
        kind: 'edit',
        path: kept,
        why: 'an edit that finds the file unusable',
        checkFirst: false,
        apply: () => {
          throw new ConnectError('cannot edit');
        },
      },
    ],
  };
  await assert.rejects(runPlan(plan, process.env, dir), /cannot edit\nnothing was changed/);
  assert.equal(readFileSync(kept, 'utf8'), '{"a":1}\n');
  assert.ok(!existsSync(created));
});

test('runPlan: a failing command is reported with its exit code and the end of its stderr; a missing one by name', async (t) => {
  const dir = tempDir(t);
  const exec = (argv: string[], tolerateFailure?: boolean): Plan => ({
    client: 'claude',
    scope: 'user',
    files: [],
    steps: [{ kind: 'exec', argv, why: 'a client CLI step', ...(tolerateFailure ? { tolerateFailure } : {}) }],
  });
  const failing = [process.execPath, '-e', 'console.log("out"); console.error("first\\nsecond"); process.exit(4)'];
  await assert.rejects(runPlan(exec(failing), process.env, dir), (err: Error) => {
    assert.ok(err instanceof ConnectError);
    assert.match(err.message, /failed \(exit 4\): first second\nnothing was changed/);
    return true;
  });
  const tolerated = await runPlan(exec(failing, true), process.env, dir);
  assert.deepEqual(
    tolerated.map((o) => [o.ok, o.detail]),
    [[false, 'first second']],
  );
  const missing = join(dir, 'no-such-client');
  await assert.rejects(runPlan(exec([missing, 'mcp', 'add']), process.env, dir), (err: Error) => {
    assert.ok(err instanceof ConnectError);
    assert.match(err.message, new RegExp(`^cannot run ${missing}: .*ENOENT`));
    return true;
  });
});

test('connect claude --provider codex: an absolute Node + baton command that serves MCP from any directory', async (t) => {
  const s = setup(t);
  const r = await s.connect(['claude', '--provider', 'codex']);
  assert.equal(r.code, 0, r.stderr);
  const entry = JSON.parse(readFileSync(join(s.home, '.claude.json'), 'utf8')).mcpServers['baton-codex'];
  assert.equal(entry.command, process.execPath);
  assert.deepEqual(entry.args, [join(REPO_ROOT, 'bin', 'baton.js'), 'mcp', '--provider', 'codex']);
  const allow = JSON.parse(readFileSync(join(s.home, '.claude', 'settings.json'), 'utf8')).permissions.allow;
  assert.deepEqual(allow, ['mcp__baton-codex']);

  // Started the way Claude Code starts it: from another directory, speaking MCP on stdout from the first byte.
  const client = new Client({ name: 'connect-test', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args,
    cwd: '/',
    env: { PATH: s.env.PATH!, HOME: s.home },
    stderr: 'ignore',
  });
  await client.connect(transport);
  t.after(() => client.close());
  const tools = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(tools.includes('codex'), tools.join(', '));
});

/** The mode of every dir and file under each of `roots` (and the roots themselves), by path. */
function modesUnder(...roots: string[]): Map<string, number> {
  const modes = new Map<string, number>();
  for (const root of roots) {
    modes.set(root, statSync(root).mode & 0o7777);
    for (const e of readdirSync(root, { recursive: true, withFileTypes: true })) {
      const p = join(e.parentPath, e.name);
      if (p.includes('/.cache/baton/node-compile-cache')) continue;
      // A client's own CLI holds a lock file while it writes (Gemini's projects.json.lock) and removes it after, maybe
      // after connect returned: not a file of the user's whose mode could be kept.
      if (e.name.endsWith('.lock')) continue;
      modes.set(p, lstatSync(p).mode & 0o7777);
    }
  }
  return modes;
}

test("connect leaves the modes of the user's dirs and files alone, for every client and scope", async (t) => {
  const s = setup(t);
  const umask = process.umask();
  const json = (path: string, text = '{}\n') => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  // Everything connect may touch exists first, with the modes a user typically has (dirs 0755, files 0644).
  for (const f of [
    join(s.home, '.claude.json'),
    join(s.home, '.claude', 'settings.json'),
    join(s.project, '.mcp.json'),
    join(s.home, '.gemini', 'settings.json'),
    join(s.home, '.config', 'opencode', 'opencode.json'),
  ])
    json(f);
  json(join(s.home, '.codex', 'config.toml'), 'model = "gpt-x"\n');
  const all = (dir: string, dirMode: number, fileMode: number) => {
    for (const [p] of modesUnder(dir)) chmodSync(p, statSync(p).isDirectory() ? dirMode : fileMode);
  };
  all(s.home, 0o755, 0o644);
  all(s.project, 0o755, 0o644);
  const env = { ...s.env, CODEX_HOME: join(s.home, '.codex') };
  for (const [client, scope] of [
    ['claude', 'user'],
    ['claude', 'project'],
    ['codex', 'user'],
    ['gemini', 'user'],
    ['gemini', 'project'],
    ['opencode', 'user'],
    ['opencode', 'project'],
  ] as const) {
    const before = modesUnder(s.home, s.project);
    const r = await s.connect([client, '--scope', scope], { env });
    assert.equal(r.code, 0, `${client} ${scope}: ${r.stderr}`);
    const after = modesUnder(s.home, s.project);
    // `codex mcp add` itself rewrites config.toml 0600 (Codex 0.169.0's own choice for a file that may hold secrets);
    // baton's edit after it keeps whatever mode the file then has.
    if (client === 'codex')
      after.set(join(s.home, '.codex', 'config.toml'), before.get(join(s.home, '.codex', 'config.toml'))!);
    for (const [p, mode] of before)
      assert.equal(after.get(p)?.toString(8), mode.toString(8), `${client} --scope ${scope} changed the mode of ${p}`);
    // What connect created itself (.claude/settings.local.json and its dir, ./opencode.json) has the umask's modes.
    for (const p of [
      join(s.project, '.claude'),
      join(s.project, '.claude', 'settings.local.json'),
      join(s.project, 'opencode.json'),
    ]) {
      if (before.has(p) || !after.has(p)) continue;
      const want = (statSync(p).isDirectory() ? 0o777 : 0o666) & ~umask;
      assert.equal(after.get(p)!.toString(8), want.toString(8), `${p}, created by connect ${client} --scope ${scope}`);
    }
  }
  assert.ok(existsSync(join(s.project, 'opencode.json')));
  // disconnect, in every client and scope, keeps the modes as they are too.
  for (const [client, scope] of [
    ['claude', 'user'],
    ['claude', 'project'],
    ['codex', 'user'],
    ['gemini', 'user'],
    ['gemini', 'project'],
    ['opencode', 'user'],
    ['opencode', 'project'],
  ] as const) {
    const before = modesUnder(s.home, s.project);
    const r = await run(
      [process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), 'disconnect', client, '--scope', scope],
      {
        env,
        cwd: s.project,
      },
    );
    assert.equal(r.code, 0, `disconnect ${client} ${scope}: ${r.stderr}`);
    assert.match(r.stdout, /^disconnecting /, r.stdout);
    const after = modesUnder(s.home, s.project);
    for (const [p, mode] of before)
      assert.equal(after.get(p)?.toString(8), mode.toString(8), `disconnect ${client} --scope ${scope}: ${p}`);
  }
  assert.ok(existsSync(join(s.project, '.claude', 'settings.local.json')));
});

const disconnectCmd = (
  s: ReturnType<typeof setup>,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
) =>
  run([process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), '--config', s.configPath, 'disconnect', ...args], {
    env: opts.env ?? s.env,
    cwd: opts.cwd ?? s.project,
  });

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

test('disconnect claude takes out the entry and the allow rule connect added, nothing else, in either scope', async (t) => {
  const s = setup(t);
  const settings = join(s.home, '.claude', 'settings.json');
  mkdirSync(dirname(settings), { recursive: true });
  const userSettings = { cleanupPeriodDays: 30, permissions: { allow: ['Bash(ls:*)'] } };
  writeFileSync(settings, JSON.stringify(userSettings));
  writeFileSync(
    join(s.home, '.claude.json'),
    JSON.stringify({ mcpServers: { other: { type: 'stdio', command: '/bin/true', args: [] } } }),
  );
  assert.equal((await s.connect(['claude'])).code, 0);
  assert.deepEqual(readJson(settings).permissions.allow, ['Bash(ls:*)', 'mcp__baton']);

  const preview = await disconnectCmd(s, ['claude', '--print']);
  assert.equal(preview.code, 0, preview.stderr);
  assert.match(preview.stdout, /^# disconnect Claude Code \(user scope\); nothing below has been run\n/);
  assert.ok(preview.stdout.includes('claude mcp remove --scope user baton'), preview.stdout);
  assert.ok(preview.stdout.includes(`edit ${settings}`), preview.stdout);
  assert.ok(readJson(join(s.home, '.claude.json')).mcpServers.baton, '--print removed nothing');

  const r = await disconnectCmd(s, ['claude']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `disconnecting Claude Code (user scope)\nran: claude mcp remove --scope user baton\nedited ${settings}: remove "mcp__baton" from permissions.allow\n`,
  );
  assert.deepEqual(readJson(settings), userSettings, 'the settings are as they were before connect');
  assert.deepEqual(Object.keys(readJson(join(s.home, '.claude.json')).mcpServers), ['other']);
  const again = await disconnectCmd(s, ['claude']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'Claude Code (user scope): no baton entry; nothing to remove\n');

  // `claude mcp remove` by hand leaves the allow rule behind; disconnect takes out what is left.
  assert.equal((await s.connect(['claude'])).code, 0);
  const byHand = await run([join(s.dir, 'bin', 'claude'), 'mcp', 'remove', '--scope', 'user', 'baton'], {
    env: s.env,
    cwd: s.project,
  });
  assert.equal(byHand.code, 0, byHand.stderr);
  assert.deepEqual(readJson(settings).permissions.allow, ['Bash(ls:*)', 'mcp__baton']);
  const rest = await disconnectCmd(s, ['claude']);
  assert.equal(
    rest.stdout,
    `disconnecting Claude Code (user scope)\nedited ${settings}: remove "mcp__baton" from permissions.allow\n`,
  );
  assert.deepEqual(readJson(settings), userSettings);

  assert.equal((await s.connect(['claude', '--scope', 'project'])).code, 0);
  const wrongScope = await disconnectCmd(s, ['claude']);
  assert.match(
    wrongScope.stdout,
    /no baton entry; nothing to remove \(baton is registered in its project scope here: `baton disconnect claude --scope project`\)/,
  );
  const project = await disconnectCmd(s, ['claude', '--scope', 'project']);
  assert.equal(project.code, 0, project.stderr);
  assert.ok(!readJson(join(s.project, '.mcp.json')).mcpServers?.baton);
  assert.deepEqual(readJson(join(s.project, '.claude', 'settings.local.json')), {});
  assert.deepEqual(readJson(settings), userSettings, 'the user settings were not touched');
});

test('disconnect codex, gemini and opencode: each takes out only baton, the user scope and the project scope apart', async (t) => {
  const s = setup(t);
  // Codex: its own `mcp remove` drops the table with the approval setting connect added.
  const codexHome = join(s.dir, 'codex-home');
  mkdirSync(codexHome);
  const toml = join(codexHome, 'config.toml');
  writeFileSync(toml, 'model = "gpt-x"\n\n[mcp_servers.other]\ncommand = "/bin/true"\n');
  const env = { ...s.env, CODEX_HOME: codexHome };
  assert.equal((await s.connect(['codex'], { env })).code, 0);
  const codex = await disconnectCmd(s, ['codex'], { env });
  assert.equal(codex.code, 0, codex.stderr);
  assert.equal(codex.stdout, 'disconnecting Codex (user scope)\nran: codex mcp remove baton\n');
  const text = readFileSync(toml, 'utf8');
  assert.doesNotMatch(text, /baton|default_tools_approval_mode/);
  assert.match(text, /model = "gpt-x"/);
  assert.match(text, /\[mcp_servers\.other\]\ncommand = "\/bin\/true"/);

  // Gemini CLI: both scopes connected; each disconnect takes out its own scope's entry only. Its own
  // `mcp remove --scope project` finds nothing in an untrusted folder, so that scope is an edit.
  const userGemini = join(s.home, '.gemini', 'settings.json');
  mkdirSync(dirname(userGemini), { recursive: true });
  const geminiMine = { ui: { theme: 'Dracula' }, mcpServers: { other: { command: '/bin/true' } } };
  writeFileSync(userGemini, JSON.stringify(geminiMine));
  assert.equal((await s.connect(['gemini'])).code, 0);
  assert.equal((await s.connect(['gemini', '--scope', 'project'])).code, 0);
  const geminiProject = await disconnectCmd(s, ['gemini', '--scope', 'project']);
  const projectGemini = join(s.project, '.gemini', 'settings.json');
  assert.equal(
    geminiProject.stdout,
    `disconnecting Gemini CLI (project scope)\nedited ${projectGemini}: remove mcpServers.baton\n`,
  );
  assert.deepEqual(readJson(projectGemini), {});
  assert.ok(readJson(userGemini).mcpServers.baton, 'the user scope is still connected');
  const geminiUser = await disconnectCmd(s, ['gemini']);
  assert.equal(geminiUser.stdout, 'disconnecting Gemini CLI (user scope)\nran: gemini mcp remove --scope user baton\n');
  assert.deepEqual(readJson(userGemini), geminiMine);

  // OpenCode has no `mcp remove`: a careful edit of the file that holds the entry.
  const opencodeProject = join(s.project, 'opencode.json');
  // With its $schema already: any OpenCode run in this dir (the user-scope `opencode mcp add` too) adds one.
  const mine = {
    $schema: 'https://opencode.ai/config.json',
    theme: 'tokyonight',
    mcp: { other: { type: 'local', command: ['x'] } },
  };
  writeFileSync(opencodeProject, JSON.stringify(mine));
  assert.equal((await s.connect(['opencode'])).code, 0);
  assert.equal((await s.connect(['opencode', '--scope', 'project'])).code, 0);
  const ocProject = await disconnectCmd(s, ['opencode', '--scope', 'project']);
  assert.equal(
    ocProject.stdout,
    `disconnecting OpenCode (project scope)\nedited ${opencodeProject}: remove mcp.baton\n`,
  );
  assert.deepEqual(readJson(opencodeProject), mine);
  // `opencode mcp add` picks the file itself (opencode.jsonc when there is none yet).
  const userOpencode = ['opencode.json', 'opencode.jsonc']
    .map((f) => join(s.home, '.config', 'opencode', f))
    .find((f) => existsSync(f))!;
  assert.ok(readJson(userOpencode).mcp.baton);
  const ocUser = await disconnectCmd(s, ['opencode']);
  assert.equal(ocUser.stdout, `disconnecting OpenCode (user scope)\nedited ${userOpencode}: remove mcp.baton\n`);
  assert.equal(readJson(userOpencode).mcp, undefined);
});

test('disconnect --all: every client and every baton entry (the hub and the stdio providers); bad input changes nothing', async (t) => {
  const s = setup(t);
  const env = { ...s.env, CODEX_HOME: join(s.dir, 'codex-home') };
  mkdirSync(env.CODEX_HOME);
  for (const args of [['claude'], ['claude', '--provider', 'codex'], ['codex'], ['gemini'], ['opencode']]) {
    const c = await s.connect(args, { env });
    assert.equal(c.code, 0, `${args.join(' ')}: ${c.stderr}`);
  }
  const snapshot = () =>
    filesUnder(s.home)
      .filter((f) => !f.endsWith('.claude.json'))
      .map((f) => [f, readFileSync(join(s.home, f), 'utf8')]);
  const before = snapshot();
  for (const bad of [
    [],
    ['claude', '--all'],
    ['cursor'],
    ['claude', '--scope', 'global'],
    ['claude', '--provider', 'x'],
  ]) {
    const r = await disconnectCmd(s, bad, { env });
    assert.equal(r.code, 1, `${bad.join(' ')}: ${r.stdout}`);
    assert.match(r.stderr, /^baton: /);
  }
  assert.deepEqual(snapshot(), before);

  const r = await disconnectCmd(s, ['--all'], { env });
  assert.equal(r.code, 0, r.stderr);
  for (const line of [
    'ran: claude mcp remove --scope user baton',
    'ran: claude mcp remove --scope user baton-codex',
    'remove "mcp__baton", "mcp__baton-codex" from permissions.allow',
    'ran: codex mcp remove baton',
    'ran: gemini mcp remove --scope user baton',
    'remove mcp.baton',
  ])
    assert.ok(r.stdout.includes(line), `${line}\n${r.stdout}`);
  for (const f of filesUnder(s.home))
    assert.doesNotMatch(readFileSync(join(s.home, f), 'utf8'), /mcp__baton|"baton|mcp_servers\.baton|BATON_TOKEN/, f);
  const again = await disconnectCmd(s, ['--all'], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout.match(/nothing to remove/g)?.length, 4, again.stdout);
});

test('doctor checks each connected client: registered where, its token variable set, the hub answering with it; one fix each', async (t) => {
  const s = setup(t);
  const port = await portForLater();
  const config = JSON.parse(readFileSync(s.configPath, 'utf8'));
  config.listen.port = port;
  config.agents = { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } };
  writeFileSync(s.configPath, JSON.stringify(config));
  const env = { ...s.env, CODEX_HOME: join(s.dir, 'codex-home') };
  mkdirSync(env.CODEX_HOME);
  for (const args of [['claude'], ['codex'], ['gemini', '--scope', 'project'], ['opencode']]) {
    const c = await s.connect(args, { env });
    assert.equal(c.code, 0, c.stderr);
    assert.ok(c.stdout.endsWith('the hub answering)\n'), c.stdout);
    assert.match(c.stdout, /\ncheck it: `baton doctor` \(/);
  }
  const tokens = join(dirname(s.configPath), 'connections', 'tokens.env');
  const doctor = (extra: NodeJS.ProcessEnv = {}) =>
    run([process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), '--config', s.configPath, 'doctor'], {
      env: { ...env, ...extra },
      cwd: s.project,
    });
  const clientLines = (stdout: string) => stdout.split('\nclients:\n')[1]!.trimEnd().split('\n');
  const names = ['claude', 'codex', 'gemini', 'opencode'] as const;
  const scopes = { claude: 'user', codex: 'user', gemini: 'project', opencode: 'user' };

  // No token variable in this environment: each client would start without baton's tools.
  const noTokens = await doctor();
  assert.equal(noTokens.code, 1);
  const lines = clientLines(noTokens.stdout);
  assert.equal(lines.length, 4, noTokens.stdout);
  for (const [i, c] of names.entries()) {
    assert.match(lines[i]!, new RegExp(`^ {2}FAIL {2}${c} \\(${scopes[c]} scope, /`));
    assert.ok(
      lines[i]!.endsWith(
        `$BATON_TOKEN_${c.toUpperCase()} is not set in this environment, so ${c} starts without baton's tools; fix: \`source ${tokens}\` in the shell that starts ${c} (or add that line to its profile)`,
      ),
      lines[i],
    );
  }

  // The variables set, no hub running.
  const tokenEnv = Object.fromEntries(names.map((c) => [`BATON_TOKEN_${c.toUpperCase()}`, CLIENT_TOKENS[c]]));
  const down = await doctor(tokenEnv);
  assert.equal(down.code, 1);
  for (const [i, c] of names.entries())
    assert.ok(
      clientLines(down.stdout)[i]!.endsWith(
        `the hub is not answering at http://127.0.0.1:${port}/mcp/${c}; fix: \`baton start\``,
      ),
      down.stdout,
    );

  const started = await run([process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), '--config', s.configPath, 'start'], {
    env,
    cwd: s.project,
  });
  // The temp dir (and the config in it) is gone by the time later hooks run: stop over the control endpoint.
  t.after(() =>
    fetch(`http://127.0.0.1:${port}/control/stop?force=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CONTROL_TOKEN}` },
    }).catch(() => {}),
  );
  assert.equal(started.code, 0, started.stderr);
  const up = await doctor(tokenEnv);
  assert.equal(up.code, 0, up.stdout);
  for (const [i, c] of names.entries())
    assert.match(
      clientLines(up.stdout)[i]!,
      new RegExp(
        `^ {2}ok {4}${c} .*: \\$BATON_TOKEN_${c.toUpperCase()} is set and the hub answers http://127\\.0\\.0\\.1:${port}/mcp/${c} with it$`,
      ),
    );

  // Another hub's token in the variable.
  const wrong = await doctor({ ...tokenEnv, BATON_TOKEN_CLAUDE: CLIENT_TOKENS.codex });
  assert.equal(wrong.code, 1);
  assert.ok(
    clientLines(wrong.stdout)[0]!.endsWith(
      `the hub at http://127.0.0.1:${port}/mcp/claude refused the token in $BATON_TOKEN_CLAUDE (not this hub's token for "claude"); fix: \`source ${tokens}\` again in the shell that starts claude`,
    ),
    wrong.stdout,
  );
  assert.ok(!wrong.stdout.includes(CLIENT_TOKENS.codex), 'no token printed');
  const stopped = await run([process.execPath, join(REPO_ROOT, 'bin', 'baton.js'), '--config', s.configPath, 'stop'], {
    env,
    cwd: s.project,
  });
  assert.equal(stopped.stdout, 'stopped\n');
});

test("disconnect edits a client's JSON with trailing commas, and refuses one with comments, changing nothing", async (t) => {
  const s = setup(t);
  const dir = join(s.home, '.config', 'opencode');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'opencode.jsonc');
  const entry = '"baton": { "type": "remote", "url": "http://127.0.0.1:1/mcp/opencode" }';
  const commented = `{\n  // my theme\n  "theme": "x",\n  "mcp": { ${entry} },\n}\n`;
  writeFileSync(file, commented);
  const refused = await disconnectCmd(s, ['opencode']);
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, /opencode\.jsonc has comments; remove them \(or make this change by hand\)/);
  assert.equal(readFileSync(file, 'utf8'), commented, 'left as it was');

  // What OpenCode itself writes: plain JSON but for a trailing comma.
  writeFileSync(file, `{\n  "theme": "x, }",\n  "mcp": { ${entry}, },\n}\n`);
  const r = await disconnectCmd(s, ['opencode']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(readJson(file), { theme: 'x, }' });
});
