// Structured logs (UX-3): JSON lines with levels to a private file and stderr, redacted; `--log-level` is checked.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { createLogger } from '../../../src/lib/log.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import { isolatedEnv, writeHubConfig } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

test('logger: level filter, JSON lines in a 0600 file, secrets redacted', (t) => {
  const dir = tempDir(t, 'baton-ux-log-');
  const file = join(dir, 'baton.log');
  const log = createLogger({ level: 'warn', file, stderr: false, component: 'hub' });
  log.info('not written');
  log.warn('agent unavailable', { agent: 'x', detail: 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz0123' });
  log.error('request failed');
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => [l.level, l.component, l.msg]),
    [
      ['warn', 'hub', 'agent unavailable'],
      ['error', 'hub', 'request failed'],
    ],
  );
  assert.ok(!Number.isNaN(Date.parse(lines[0].time)));
  assert.equal(JSON.stringify(lines).includes('sk-abcdefghijklmnopqrstuvwxyz0123'), false);
  assert.equal(statSync(file).mode & 0o777, 0o600);
});

test('baton serve refuses an unknown --log-level before starting', async (t) => {
  const dir = tempDir(t, 'baton-ux-loglevel-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const config = writeHubConfig({ dir, roots: [work], agents: {} });
  const run = promisify(execFile)(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'baton.js'), '--config', config, 'serve', '--log-level', 'loud'],
    { env: isolatedEnv(dir) },
  );
  await assert.rejects(run, (err: { code: number; stderr: string }) => {
    assert.equal(err.code, 2, 'a bad flag value is a usage error');
    assert.match(err.stderr, /--log-level must be debug, info, warn or error/);
    return true;
  });
});
