// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// LB-3: strict Codex release numbers and the minimum-version check, table-driven.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareCodexVersions, readCodexVersionOutput } from '../../src/codex/version.ts';
import {
  CODEX_UNIX_SOCKET_MINIMUM_VERSION,
  CodexVersionUnsupportedError,
  parseCodexVersion,
  requireCodexVersion,
} from '../../src/index.ts';

test('the unix socket floor is 0.156.0', () => {
  assert.equal(CODEX_UNIX_SOCKET_MINIMUM_VERSION, '0.156.0');
});

test('parseCodexVersion reads exactly one release number', () => {
  const parsed: Array<[string, [number, number, number, string | null]]> = [
    ['0.169.0', [0, 169, 0, null]],
    ['0.158.0-alpha.2', [0, 158, 0, 'alpha.2']],
    ['1.2.3-rc', [1, 2, 3, 'rc']],
    ['10.0.0-0.3.7', [10, 0, 0, '0.3.7']],
    [`${Number.MAX_SAFE_INTEGER}.0.0`, [Number.MAX_SAFE_INTEGER, 0, 0, null]],
  ];
  for (const [text, [major, minor, patch, prerelease]] of parsed) {
    assert.deepEqual(parseCodexVersion(text), { major, minor, patch, prerelease, text }, text);
  }
  const rejected = [
    'codex-cli 0.169.0',
    ' 0.169.0',
    '0.169.0 ',
    '0.169.0\n',
    '0.169.0+build.5',
    '0.169',
    '0.169.0.1',
    '00.169.0',
    '0.0169.0',
    '0.169.01',
    '0.158.0-alpha.02',
    '0.158.0-',
    '0.158.0-alpha..2',
    `${Number.MAX_SAFE_INTEGER + 2}.0.0`,
    'v0.169.0',
    '',
  ];
  for (const text of rejected) assert.equal(parseCodexVersion(text), null, JSON.stringify(text));
});

test('requireCodexVersion accepts the minimum or newer, with prerelease ordering', () => {
  const accepted: Array<[string, string | undefined]> = [
    ['0.156.0', undefined],
    ['0.169.0', undefined],
    ['0.157.0-alpha.1', undefined], // a prerelease of a newer release
    ['1.0.0', undefined],
    ['0.170.0', '0.170.0'],
    ['0.171.0-beta', '0.170.0'],
  ];
  for (const [version, minimum] of accepted) {
    assert.equal(requireCodexVersion(version, minimum).text, version, `${version} >= ${minimum ?? 'default'}`);
  }
  const below: Array<[string, string | undefined, string]> = [
    ['0.155.9', undefined, '0.156.0'],
    ['0.156.0-alpha.9', undefined, '0.156.0'], // a prerelease of the minimum itself is older
    ['0.156.0-rc.1', undefined, '0.156.0'],
    ['0.169.0', '0.170.0', '0.170.0'],
  ];
  for (const [version, minimum, shown] of below) {
    assert.throws(
      () => requireCodexVersion(version, minimum),
      (err: unknown) => {
        assert.ok(err instanceof CodexVersionUnsupportedError);
        assert.equal(err.reason, 'below_minimum');
        assert.equal(err.version, version);
        assert.equal(err.minimum, shown);
        assert.equal(err.message, `Codex ${version} is older than the required Codex ${shown}`);
        return true;
      },
    );
  }
  for (const version of [undefined, null, '', 'codex-cli 0.169.0', '0.169']) {
    assert.throws(
      () => requireCodexVersion(version),
      (err: unknown) => {
        assert.ok(err instanceof CodexVersionUnsupportedError);
        assert.equal(err.reason, 'unreadable');
        assert.equal(err.version, version ?? null);
        assert.equal(err.message, 'Codex did not report a readable version; Codex 0.156.0 or newer is required');
        return true;
      },
    );
  }
  assert.throws(() => requireCodexVersion('0.169.0', '0.170.0-alpha'), TypeError);
});

test('prerelease identifiers order numerically, then lexically, numeric before alphanumeric, release last', () => {
  const ascending = [
    '1.0.0-1',
    '1.0.0-2',
    '1.0.0-10',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-alpha.beta',
    '1.0.0-beta',
    '1.0.0',
    '1.0.1-0',
  ];
  const parsed = ascending.map((v) => parseCodexVersion(v)!);
  for (let i = 0; i < parsed.length; i++) {
    for (let j = 0; j < parsed.length; j++) {
      assert.equal(
        compareCodexVersions(parsed[i]!, parsed[j]!),
        Math.sign(i - j),
        `${ascending[i]} vs ${ascending[j]}`,
      );
    }
  }
});

test('readCodexVersionOutput takes the release after the program name of `codex --version`', () => {
  assert.equal(readCodexVersionOutput('codex-cli 0.169.0\n').version?.text, '0.169.0');
  assert.equal(readCodexVersionOutput('0.153.4').version?.text, '0.153.4');
  assert.deepEqual(readCodexVersionOutput('  codex-cli   nightly \n'), { text: 'nightly', version: null });
});
