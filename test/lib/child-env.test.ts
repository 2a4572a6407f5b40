// AG-7: one allowlisted environment for every agent child. A BATON_* variable (baton's endpoints, its tokens) planted
// in the parent environment must reach no kind's child, whichever way the adapter builds the environment; the
// variables each runtime needs (generic process settings, its own login and endpoint variables) still pass.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { agentEnvironment } from '../../src/agents/acp/process.ts';
import { ClaudeAgent } from '../../src/agents/claude/agent.ts';
import { codexChildEnv } from '../../src/agents/codex/env.ts';
import { GeminiAgent } from '../../src/agents/gemini/agent.ts';
import { openCodeServerEnv } from '../../src/agents/opencode/agent.ts';
import { probeCodexVersion } from '../../src/faces/provider/codex/index.ts';
import { CHILD_KINDS, type ChildKind, childEnv } from '../../src/lib/child-env.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { tempDir } from '../support/tmp.ts';

const PLANTED = {
  BATON_X: 'planted-baton-variable',
  BATON_TOKEN: 'planted-baton-token-0x5ecret',
  BATON_HUB_URL: 'http://127.0.0.1:1/mcp/alice',
};

/** Plants PLANTED in this process's own env, for what reads it rather than an injected env, until the test ends. */
function plantInProcessEnv(t: Pick<TestContext, 'after'>): void {
  const saved = Object.fromEntries(Object.keys(PLANTED).map((k) => [k, process.env[k]]));
  Object.assign(process.env, PLANTED);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

const parent: NodeJS.ProcessEnv = {
  ...PLANTED,
  PATH: '/usr/bin:/bin',
  HOME: '/home/someone',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TMPDIR: '/tmp/x',
  HTTPS_PROXY: 'http://proxy:3128',
  NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
  NODE_COMPILE_CACHE: '/home/someone/.cache/node-compile-cache',
  NODE_OPTIONS: '--require /home/someone/hook.js',
  SOME_UNRELATED_SECRET: 'not-for-children',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/anthropic',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  CLAUDECODE: '1',
  GEMINI_API_KEY: 'dummy',
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9/gemini',
  GEMINI_SANDBOX: 'false',
  SANDBOX: 'pretend',
  OPENAI_API_KEY: 'sk-openai',
  CODEX_API_KEY: 'codex-key',
  MY_PROVIDER_KEY: 'provider-key',
  OPENCODE_CONFIG: '/home/someone/evil-opencode.json',
  OPENCODE_CONFIG_DIR: '/home/someone/evil-opencode',
  OPENCODE_SERVER_PASSWORD: 'attach-opencode-password',
  OPENCODE_SERVER_USERNAME: 'someone',
  CODEX_REMOTE_TOKEN: 'attach-codex-remote-token',
  CODEX_HOME: '/home/someone/.codex',
  OPENROUTER_API_KEY: 'or-key',
  XDG_CONFIG_HOME: '/home/someone/.config',
};

function batonKeys(env: Record<string, unknown>): string[] {
  return Object.keys(env).filter((k) => k.startsWith('BATON_'));
}

describe('childEnv: the shared allowlist', () => {
  for (const kind of CHILD_KINDS) {
    test(`${kind}: no BATON_* variable passes, not even when named or set explicitly`, () => {
      const env = childEnv(kind, { parent, pass: ['BATON_X', 'BATON_TOKEN'], set: { BATON_Y: 'set-by-caller' } });
      assert.deepEqual(batonKeys(env), []);
      for (const value of Object.values(PLANTED)) assert.ok(!Object.values(env).includes(value));
      // The generic process variables pass for every kind; an unknown variable does not.
      // NODE_COMPILE_CACHE is only where Node keeps compiled code (rule: node-compile-cache); other NODE_* settings,
      // which could load code into the child, stay behind.
      const generic = [
        'PATH',
        'HOME',
        'LANG',
        'LC_ALL',
        'TMPDIR',
        'HTTPS_PROXY',
        'NODE_EXTRA_CA_CERTS',
        'NODE_COMPILE_CACHE',
      ];
      for (const name of generic) assert.equal(env[name], parent[name], `${kind} gets ${name}`);
      assert.equal(env.SOME_UNRELATED_SECRET, undefined);
      assert.equal(env.NODE_OPTIONS, undefined);
    });

    test(`${kind}: baton's own secrets and what points an agent at another config or server stay behind`, () => {
      const env = childEnv(kind, { parent, pass: ['OPENCODE_SERVER_PASSWORD', 'CODEX_REMOTE_TOKEN'] });
      for (const name of [
        'OPENCODE_SERVER_PASSWORD',
        'OPENCODE_SERVER_USERNAME',
        'CODEX_REMOTE_TOKEN',
        'OPENCODE_CONFIG',
        'OPENCODE_CONFIG_DIR',
        'CODEX_HOME',
      ])
        assert.equal(env[name], undefined, `${kind} does not get ${name}`);
      for (const value of ['attach-opencode-password', 'attach-codex-remote-token'])
        assert.ok(!Object.values(env).includes(value));
    });
  }

  const expectations: Record<ChildKind, { passes: string[]; stays: string[] }> = {
    claude: {
      passes: [
        'ANTHROPIC_BASE_URL',
        'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
        'DISABLE_TELEMETRY',
        'XDG_CONFIG_HOME',
      ],
      stays: ['CLAUDECODE', 'OPENAI_API_KEY', 'GEMINI_API_KEY'],
    },
    gemini: {
      passes: ['GEMINI_API_KEY', 'GEMINI_CLI_TRUST_WORKSPACE', 'GOOGLE_GEMINI_BASE_URL'],
      stays: ['GEMINI_SANDBOX', 'SANDBOX', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY'],
    },
    opencode: {
      passes: ['OPENAI_API_KEY', 'OPENROUTER_API_KEY', 'ANTHROPIC_BASE_URL', 'XDG_CONFIG_HOME'],
      stays: ['OPENCODE_CONFIG', 'CLAUDECODE'],
    },
    codex: {
      passes: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
      stays: ['ANTHROPIC_BASE_URL', 'GEMINI_API_KEY', 'XDG_CONFIG_HOME', 'MY_PROVIDER_KEY'],
    },
    acp: {
      passes: ['ANTHROPIC_BASE_URL', 'GEMINI_API_KEY', 'OPENAI_API_KEY', 'CODEX_API_KEY', 'XDG_CONFIG_HOME'],
      stays: ['CLAUDECODE', 'SOME_UNRELATED_SECRET', 'OPENCODE_CONFIG', 'CODEX_HOME'],
    },
  };
  for (const [kind, { passes, stays }] of Object.entries(expectations) as [
    ChildKind,
    (typeof expectations)[ChildKind],
  ][]) {
    test(`${kind}: passes what its runtime reads, keeps the rest back`, () => {
      const env = childEnv(kind, { parent });
      for (const name of passes) assert.equal(env[name], parent[name], `${kind} gets ${name}`);
      for (const name of stays) assert.equal(env[name], undefined, `${kind} does not get ${name}`);
    });
  }

  test('a named extra variable passes and set values win over the parent', () => {
    const env = childEnv('codex', { parent, pass: ['MY_PROVIDER_KEY'], set: { HOME: '/isolated' } });
    assert.equal(env.MY_PROVIDER_KEY, 'provider-key');
    assert.equal(env.HOME, '/isolated');
  });
});

describe('every adapter builds its child environment through the allowlist', () => {
  test('claude, gemini, codex, acp and opencode environments carry no planted BATON_* variable', (t) => {
    const dir = tempDir(t);
    const claude = new ClaudeAgent('c', { homeDir: join(dir, 'claude'), userConfigDir: join(dir, 'u'), env: parent });
    const gemini = new GeminiAgent('g', { homeDir: join(dir, 'gemini'), env: parent, sandboxMode: 'docker' });
    plantInProcessEnv(t);
    const envs = {
      claude: claude.childEnv(),
      gemini: gemini.childEnv(),
      codex: codexChildEnv({ modelProvider: { id: 'mock', baseUrl: 'http://127.0.0.1:1/v1', envKey: 'PATH' } }, dir),
      acp: agentEnvironment({ BATON_FROM_CONFIG: 'x', ACP_MARK: 'from-config' }),
      opencode: openCodeServerEnv(
        { HOME: join(dir, 'oc-home') },
        { BATON_FROM_CONFIG: 'x', OPENCODE_CONFIG_CONTENT: '{}' },
      ),
    };
    for (const [kind, env] of Object.entries(envs)) assert.deepEqual(batonKeys(env), [], kind);
    assert.equal(envs.claude.CLAUDE_CONFIG_DIR, join(dir, 'claude'));
    assert.equal(envs.claude.CLAUDECODE, undefined);
    assert.equal(envs.gemini.GEMINI_SANDBOX, 'docker', 'the operator mode, not the environment, sets the sandbox');
    assert.equal(envs.gemini.SANDBOX, undefined);
    assert.equal(envs.codex.CODEX_HOME, dir);
    assert.equal(envs.acp.ACP_MARK, 'from-config');
    assert.equal(envs.opencode.OPENCODE_CONFIG_CONTENT, '{}');
    assert.equal(envs.opencode.OPENCODE_DISABLE_AUTOUPDATE, '1');
  });

  test('a real child started by the Claude adapter sees no BATON_* variable', async (t) => {
    const dir = tempDir(t);
    // Stands in for `claude -p --output-format json`: answers with the names of the variables it was given.
    const dump = join(dir, 'dump-env');
    writeFileSync(
      dump,
      `#!${process.execPath}\nprocess.stdin.resume();\nprocess.stdin.on('end', () => console.log(JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: JSON.stringify(Object.keys(process.env)), session_id: 's' })));\n`,
    );
    chmodSync(dump, 0o700);
    const agent = new ClaudeAgent('c', {
      command: dump,
      homeDir: join(dir, 'claude'),
      userConfigDir: join(dir, 'u'),
      env: parent,
    });
    const res = await agent.runBlocking('hello', { cwd: dir });
    assert.ok(res.ok, res.ok ? '' : res.error);
    const names = JSON.parse(res.text) as string[];
    assert.deepEqual(batonKeys(Object.fromEntries(names.map((n) => [n, 1]))), []);
    assert.ok(names.includes('ANTHROPIC_BASE_URL') && names.includes('CLAUDE_CONFIG_DIR'));
    assert.ok(!names.includes('SOME_UNRELATED_SECRET'));
  });

  test("the Codex provider's `codex --version` probe sees no BATON_* variable", async (t) => {
    const dir = tempDir(t);
    // Stands in for `codex --version`: records the variables it was given, then prints a version line.
    const fake = join(dir, 'fake-codex.mjs');
    const seen = join(dir, 'seen.json');
    writeFileSync(
      fake,
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(process.argv[2], JSON.stringify({ argv: process.argv.slice(3), env: process.env }));\nconsole.log('codex-cli 0.153.4');\n`,
    );
    plantInProcessEnv(t);
    const userCodexHome = join(dir, 'user-codex');
    const version = await probeCodexVersion([process.execPath, fake, seen], silentLogger, { userCodexHome });
    assert.deepEqual(version && [version.major, version.minor, version.patch], [0, 153, 4]);
    const child = JSON.parse(readFileSync(seen, 'utf8')) as { argv: string[]; env: Record<string, string> };
    assert.deepEqual(child.argv, ['--version']);
    assert.deepEqual(batonKeys(child.env), []);
    for (const value of Object.values(PLANTED)) assert.ok(!Object.values(child.env).includes(value));
    assert.equal(child.env.CODEX_HOME, userCodexHome);
    assert.equal(child.env.PATH, process.env.PATH);
  });
});
