// End to end through `baton doctor`: an agent binary outside the tested range is refused in one line naming the version,
// the range and the fix — no stack trace, no hang. The binaries are tiny scripts that only print a version for
// `--version` (the verdict itself is unit-tested in test/agents/tested-versions.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/bins.ts';
import { isolatedEnv, writeHubConfig } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);

function fakeBinary(dir: string, name: string, version: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\nif [ "$1" = --version ]; then echo '${version}'; exit 0; fi\nexit 3\n`, {
    mode: 0o755,
  });
  return path;
}

test('doctor refuses a too-old Codex and an OpenCode 2 in one line each and exits 1', async (t) => {
  const dir = tempDir(t, 'baton-version-gate-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const configPath = writeHubConfig({
    dir,
    roots: [work],
    agents: {
      oldcodex: { kind: 'codex', command: [fakeBinary(dir, 'codex', 'codex-cli 0.150.0')] },
      newopencode: { kind: 'opencode', binary: fakeBinary(dir, 'opencode', '2.0.1') },
    },
  });
  const res = await run(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'doctor'], {
    cwd: dir,
    env: isolatedEnv(dir),
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
  assert.equal(res.code, 1, res.stdout);
  assert.match(
    res.stdout,
    /^FAIL\s+oldcodex\s+codex\s.*Codex 0\.150\.0 is older than baton supports \(tested 0\.153\.4 – 0\.171\.x\): upgrade it \(npm i -g @openai\/codex@0\.171\)$/m,
  );
  assert.match(
    res.stdout,
    /^FAIL\s+newopencode\s+opencode\s.*OpenCode 2\.0\.1 is not supported yet \(tested 1\.18\.33 – 1\.18\.x; 2\.0\.0 and later changed what baton relies on\): install a supported release \(npm i -g opencode-ai@1\)$/m,
  );
  assert.doesNotMatch(`${res.stdout}${res.stderr}`, /\n\s+at /, 'no stack trace');
});
