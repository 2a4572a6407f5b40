// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The one Codex config.toml writer: key order kept, optional keys and tables left out, values TOML-quoted, the
// operator's provider table and the untrusted project entries appended (AG-7).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { minimalCodexConfig } from '../../src/agents/codex/home.ts';
import { renderCodexConfig } from '../../src/codex/config-toml.ts';

test('renders top-level keys, tables, the provider and untrusted projects in order', () => {
  const text = renderCodexConfig({
    comment: 'test',
    top: [['model', 'gpt "x"'], undefined, ['retries', 2], ['on', true]],
    tables: [['history', [['persistence', 'none']]], undefined, ['features', [['apps', false], undefined]]],
    provider: { id: 'mock', baseUrl: 'http://127.0.0.1:1/v1', envKey: 'MOCK_KEY' },
    untrustedProjects: ['/work/a"b'],
  });
  assert.equal(
    text,
    [
      '# test',
      'model = "gpt \\"x\\""',
      'retries = 2',
      'on = true',
      '',
      '[history]',
      'persistence = "none"',
      '',
      '[features]',
      'apps = false',
      '',
      '[model_providers.mock]',
      'name = "mock"',
      'base_url = "http://127.0.0.1:1/v1"',
      'wire_api = "responses"',
      'env_key = "MOCK_KEY"',
      '',
      '[projects."/work/a\\"b"]',
      'trust_level = "untrusted"',
      '',
    ].join('\n'),
  );
});

test("the agent kind's minimal config turns off MCP-bearing features and marks the cwd untrusted", () => {
  const text = minimalCodexConfig({ model: 'm' }, ['/srv/repo']);
  assert.match(text, /^# Written by baton for an isolated Codex run/);
  assert.match(text, /\napproval_policy = "never"\n/);
  assert.match(text, /\n\[features\]\n(?:[a-z0-9_]+ = false\n)*plugins = false\n/);
  assert.match(text, /\n\[projects\."\/srv\/repo"\]\ntrust_level = "untrusted"\n$/);
});
