// The Codex provider reads an npm-installed Codex's version from its package.json instead of starting it with
// --version: for both installed Codex packages the answer must equal what `codex --version` prints, and
// anything that is not the npm launcher must be left to the --version probe.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readCodexVersionOutput } from '../../../src/codex/version.ts';
import { codexArgv, npmCodexVersion } from '../../../src/faces/provider/codex/index.ts';
import { bins, NODE_CACHE_ENV } from '../../support/bins.ts';
import { tempDir } from '../../support/tmp.ts';

for (const [label, bin] of [
  ['current Codex', bins.codex],
  ['legacy Codex', bins.codexLegacy],
] as const) {
  test(`${label}: the version read from the npm package is the one \`codex --version\` prints`, (t) => {
    const home = tempDir(t);
    const printed = execFileSync(process.execPath, [bin(), '--version'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: home, ...NODE_CACHE_ENV },
    });
    const expected = readCodexVersionOutput(printed).version;
    assert.ok(expected, `codex --version printed a version (${printed.trim()})`);
    assert.deepEqual(npmCodexVersion(codexArgv(bin())), expected);
  });
}

test('a bare command on PATH that links to the npm launcher is read too; anything else is left to --version', (t) => {
  const dir = tempDir(t);
  const binDir = join(dir, 'bin');
  mkdirSync(binDir);
  symlinkSync(bins.codex(), join(binDir, 'codex'));
  const saved = process.env.PATH;
  process.env.PATH = `${binDir}:${saved ?? ''}`;
  t.after(() => {
    process.env.PATH = saved;
  });
  assert.equal(npmCodexVersion(['codex'])?.text, npmCodexVersion(codexArgv(bins.codex()))?.text);

  // A script at <pkg>/bin/codex.js of some other package, a fake elsewhere, a launcher run with extra arguments.
  const other = join(dir, 'other');
  mkdirSync(join(other, 'bin'), { recursive: true });
  writeFileSync(join(other, 'package.json'), JSON.stringify({ name: 'not-codex', version: '9.9.9' }));
  writeFileSync(join(other, 'bin', 'codex.js'), 'console.log("codex-cli 9.9.9")\n');
  assert.equal(npmCodexVersion(codexArgv(join(other, 'bin', 'codex.js'))), null);
  const fake = join(dir, 'fake-codex.mjs');
  writeFileSync(fake, 'console.log("codex-cli 0.153.4")\n');
  assert.equal(npmCodexVersion(codexArgv(fake)), null);
  assert.equal(npmCodexVersion([process.execPath, bins.codex(), '--flag']), null);
  assert.equal(npmCodexVersion(['/usr/bin/env', bins.codex()]), null);
  assert.equal(npmCodexVersion([join(dir, 'missing')]), null);
});
