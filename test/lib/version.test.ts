// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The one loose version finder used for display by the Claude, OpenCode and ACP probes (Codex has its strict parser).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findVersion } from '../../src/lib/version.ts';

test('finds the first release number in a --version line', () => {
  assert.equal(findVersion('2.1.332 (Claude Code)\n'), '2.1.332');
  assert.equal(findVersion('opencode 1.18.33'), '1.18.33');
  assert.equal(findVersion('v0.61.0-nightly.20260101'), '0.61.0-nightly.20260101');
  assert.equal(findVersion('dsh version 0.1.6, build 1.2.3.4'), '0.1.6');
});

test('nothing that is not MAJOR.MINOR.PATCH counts', () => {
  assert.equal(findVersion('version 12'), undefined);
  assert.equal(findVersion('1.2'), undefined);
  assert.equal(findVersion(''), undefined);
  // A longer dotted run gives its first three parts, never a match starting inside it.
  assert.equal(findVersion('10.1.2.3'), '10.1.2');
});
