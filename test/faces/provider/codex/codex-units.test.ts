// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of the Codex provider's pure parts (no binary): the isolated config by version and settings, Fast mode
// detection, the workspace-network precedence, flag spelling, unauthorized detection and the peek table.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseCodexVersion } from '../../../../src/codex/version.ts';
import {
  type CodexHomeSettings,
  isAppServerCodex,
  renderProviderConfig,
  userWantsFastMode,
} from '../../../../src/faces/provider/codex/home.ts';
import { normaliseFlagSpelling, parseFlags, workspaceNetwork } from '../../../../src/faces/provider/codex/index.ts';
import { InFlightTurns, isUnauthorized } from '../../../../src/faces/provider/codex/turns.ts';

const settings = (over: Partial<CodexHomeSettings> = {}): CodexHomeSettings => ({
  model: 'm',
  effort: 'xhigh',
  sandboxMode: 'workspace-write',
  approvalPolicy: 'never',
  workspaceNetwork: true,
  fastMode: false,
  version: parseCodexVersion('0.169.0'),
  ...over,
});

test('[agents] enabled=false only from Codex 0.145.0 on; an unparsable version means modern', () => {
  assert.match(renderProviderConfig(settings()), /\[agents\]\nenabled = false/);
  assert.match(renderProviderConfig(settings({ version: parseCodexVersion('0.145.0') })), /\[agents\]/);
  assert.match(renderProviderConfig(settings({ version: null })), /\[agents\]/);
  assert.doesNotMatch(renderProviderConfig(settings({ version: parseCodexVersion('0.144.9') })), /\[agents\]/);
  assert.equal(isAppServerCodex(parseCodexVersion('0.153.4')), false);
  assert.equal(isAppServerCodex(parseCodexVersion('0.154.0')), true);
  assert.equal(isAppServerCodex(null), true);
});

test('server-wide sandbox, approval policy and workspace network reach the config', () => {
  const c = renderProviderConfig(
    settings({ sandboxMode: 'read-only', approvalPolicy: 'on-request', workspaceNetwork: false }),
  );
  assert.match(c, /^sandbox_mode = "read-only"$/m);
  assert.match(c, /^approval_policy = "on-request"$/m);
  assert.match(c, /\[sandbox_workspace_write\]\nnetwork_access = false/);
});

test('workspace network: on by default, env turns it off, the flag wins', () => {
  assert.equal(workspaceNetwork(undefined, {}), true);
  assert.equal(workspaceNetwork(undefined, { BATON_CODEX_WORKSPACE_NETWORK_ACCESS: 'false' }), false);
  assert.equal(workspaceNetwork(true, { BATON_CODEX_WORKSPACE_NETWORK_ACCESS: 'false' }), true);
  assert.equal(workspaceNetwork(false, {}), false);
  assert.equal(parseFlags(['--codex-workspace-network=false']).codexWorkspaceNetwork, false);
});

test('Fast mode only with both user settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-fast-'));
  try {
    const check = (toml: string) => {
      writeFileSync(join(dir, 'config.toml'), toml);
      return userWantsFastMode(dir);
    };
    assert.equal(userWantsFastMode(join(dir, 'missing')), false);
    assert.equal(check('service_tier = "fast"\n[features]\nfast_mode = true\n'), true);
    assert.equal(check('service_tier = "fast"\n'), false);
    assert.equal(check('[features]\nfast_mode = true\n'), false);
    assert.equal(check('service_tier = "fast"\n[features]\nfast_mode = false\n'), false);
    assert.equal(check('[x]\nservice_tier = "fast"\n[features]\nfast_mode = true\n'), false, 'not top-level');
    const c = renderProviderConfig(settings({ fastMode: true }));
    assert.match(c, /^service_tier = "fast"$/m);
    assert.match(c, /^fast_mode = true$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('flags accept both spellings and keep their defaults', () => {
  assert.deepEqual(normaliseFlagSpelling(['--codex_idle_timeout', '0', '--codex-cancel-grace=5', 'a_b']), [
    '--codex-idle-timeout',
    '0',
    '--codex-cancel-grace=5',
    'a_b',
  ]);
  const d = parseFlags([]);
  assert.equal(d.codexIdleTimeout, 600);
  assert.equal(d.timeout, 7200);
  assert.equal(d.codexCancelGrace, 30);
  assert.equal(d.codexStatusInterval, 30);
  assert.equal(d.sandboxMode, 'workspace-write');
  assert.equal(d.approvalPolicy, 'never');
  assert.equal(d.modelReasoningEffort, 'xhigh');
  assert.equal(parseFlags(['--codex_idle_timeout', '0']).codexIdleTimeout, 0);
  assert.throws(() => parseFlags(['--model_reasoning_effort', 'low']));
});

test('unauthorized: the typed code or a typed 401', () => {
  assert.equal(isUnauthorized('error', { error: { codexErrorInfo: 'unauthorized' } }), true);
  assert.equal(
    isUnauthorized('turn/completed', {
      turn: { error: { codexErrorInfo: { httpConnectionFailed: { httpStatusCode: 401 } } } },
    }),
    true,
  );
  assert.equal(
    isUnauthorized('error', { error: { codexErrorInfo: { httpConnectionFailed: { httpStatusCode: 500 } } } }),
    false,
  );
  assert.equal(isUnauthorized('error', { error: { message: 'unauthorized' } }), false);
});

test('peek: a cwd filter never hides a turn whose cwd is unknown; abandoned count is never filtered', () => {
  const turns = new InFlightTurns();
  turns.add({ ids: { requestId: 'number:1' }, cwd: '/a', cwdInferred: false, sandbox: 'read-only' });
  turns.add({ ids: { jobId: 'j' }, cwdInferred: false, sandbox: 'workspace-write', threadId: 't' });
  turns.abandoned = 2;
  const b = turns.peek({ cwd: '/b' });
  assert.equal(b.turns.length, 1);
  assert.equal(b.turns[0]!.cwdUnknown, true);
  assert.equal(b.turns[0]!.jobId, 'j');
  assert.equal(b.abandonedTurnsProcessWide, 2);
  assert.equal(turns.peek({ cwd: '/a' }).turns.length, 2);
  assert.equal(turns.peek({ threadId: 't' }).turns.length, 1);
  assert.deepEqual(
    turns.peek({ requestId: 'number:1' }).turns.map((r) => r.cwd),
    ['/a'],
  );
});
