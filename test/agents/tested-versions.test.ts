// The verdict on an agent version against the range baton was tested on: tested, untested (newer, used with a one-line
// note) or refused (older, or a release known to break baton) — one line naming the version, the range and the fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentProbe } from '../../src/agents/agent.ts';
import { withVersionVerdict } from '../../src/agents/probe.ts';
import { checkTestedVersion, TESTED_VERSIONS, testedAgentOf } from '../../src/agents/tested-versions.ts';

test('versions inside the tested range (any patch of the newest MAJOR.MINOR) pass; unreadable ones are left alone', () => {
  for (const v of ['0.153.4', '0.160.0', '0.171.0', 'codex-cli 0.171.9', '0.171.1-alpha.1', undefined, '', 'dev build'])
    assert.deepEqual(checkTestedVersion('codex', v), { outcome: 'tested' }, String(v));
  assert.deepEqual(checkTestedVersion('opencode', 'opencode 1.18.40'), { outcome: 'tested' });
  assert.deepEqual(checkTestedVersion('claude-code', '2.1.332 (Claude Code)'), { outcome: 'tested' });
});

test('older than the range: refused in one line naming version, range and what to install', () => {
  assert.deepEqual(checkTestedVersion('codex', 'codex-cli 0.150.2'), {
    outcome: 'refused',
    message:
      'Codex 0.150.2 is older than baton supports (tested 0.153.4 – 0.171.x): upgrade it (npm i -g @openai/codex@0.171)',
  });
  assert.deepEqual(checkTestedVersion('gemini-cli', 'v0.60.9'), {
    outcome: 'refused',
    message:
      'Gemini CLI 0.60.9 is older than baton supports (tested 0.61.0 – 0.61.x): upgrade it (npm i -g @google/gemini-cli@0.61)',
  });
});

test('OpenCode 2 and later: refused; a newer release elsewhere: used, with a one-line note', () => {
  assert.deepEqual(checkTestedVersion('opencode', '2.0.0'), {
    outcome: 'refused',
    message:
      'OpenCode 2.0.0 is not supported yet (tested 1.18.33 – 1.18.x; 2.0.0 and later changed what baton relies on): ' +
      'install a supported release (npm i -g opencode-ai@1)',
  });
  assert.equal(checkTestedVersion('opencode', 'opencode 2.3.1').outcome, 'refused');
  assert.deepEqual(checkTestedVersion('codex', '0.172.0'), {
    outcome: 'untested',
    message:
      'Codex 0.172.0 is newer than baton was tested on (0.153.4 – 0.171.x); it is used anyway — if something fails, ' +
      'report it or install a tested release (npm i -g @openai/codex@0.171)',
  });
  assert.equal(checkTestedVersion('claude-code', '3.0.0').outcome, 'untested');
  assert.equal(checkTestedVersion('opencode', '1.19.0').outcome, 'untested');
});

test('which product a kind or ACP command is; a probe carries the verdict', () => {
  assert.equal(testedAgentOf('codex'), 'codex');
  assert.equal(testedAgentOf('claude'), 'claude-code');
  assert.equal(testedAgentOf('opencode'), 'opencode');
  assert.equal(testedAgentOf('acp', ['/usr/local/bin/gemini', '--acp']), 'gemini-cli');
  assert.equal(testedAgentOf('acp', ['opencode', 'acp']), 'opencode');
  assert.equal(testedAgentOf('acp', ['dsh', 'acp']), undefined, 'no release of DSH was tested');
  for (const range of Object.values(TESTED_VERSIONS)) assert.match(range.min, /^\d+\.\d+\.\d+$/);

  const base: AgentProbe = { name: 'oc', kind: 'opencode', available: true, binary: '/bin/opencode', version: '2.0.1' };
  const refused = withVersionVerdict(base);
  assert.equal(refused.available, false);
  assert.match(refused.detail!, /^OpenCode 2\.0\.1 is not supported yet/);
  const newer = withVersionVerdict({ ...base, version: '1.20.0', detail: 'login unknown' });
  assert.equal(newer.available, true);
  assert.match(newer.detail!, /^OpenCode 1\.20\.0 is newer than baton was tested on .*; login unknown$/);
  assert.deepEqual(withVersionVerdict({ ...base, version: '1.18.33' }), { ...base, version: '1.18.33' });
  // A probe that failed without a version keeps its own reason; one that read a refused version says that instead.
  const missing: AgentProbe = { name: 'oc', kind: 'opencode', available: false, detail: 'not found' };
  assert.deepEqual(withVersionVerdict(missing), missing);
  const broken = withVersionVerdict({ ...base, available: false, detail: 'server did not start' });
  assert.match(broken.detail!, /^OpenCode 2\.0\.1 is not supported yet/);
});
