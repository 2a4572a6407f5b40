// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// AG-9's write-back rule for a mirrored login file (pure file system, no agent).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { mirrorAuthFile } from '../../src/lib/auth-mirror.ts';
import { tempDir } from '../support/tmp.ts';

function setup(t: Parameters<typeof tempDir>[0], userLogin: string | null) {
  const dir = tempDir(t, 'baton-auth-');
  mkdirSync(join(dir, 'user'));
  const canonical = join(dir, 'user', 'auth.json');
  const isolated = join(dir, 'private', 'auth.json');
  if (userLogin !== null) writeFileSync(canonical, userLogin);
  return { canonical, isolated, mirror: mirrorAuthFile(canonical, isolated) };
}

test('the copy is private and a rotated login is written back', (t) => {
  const { canonical, isolated, mirror } = setup(t, 'login-1');
  assert.equal(readFileSync(isolated, 'utf8'), 'login-1');
  assert.equal(statSync(isolated).mode & 0o777, 0o600);
  assert.equal(mirror.writeBack(), false, 'nothing changed');
  writeFileSync(isolated, 'login-2');
  assert.equal(mirror.writeBack(), true);
  assert.equal(readFileSync(canonical, 'utf8'), 'login-2');
});

test('a stale run never overwrites a login the user changed meanwhile', (t) => {
  const { canonical, isolated, mirror } = setup(t, 'login-1');
  writeFileSync(canonical, 'login-newer');
  writeFileSync(isolated, 'login-2');
  assert.equal(mirror.writeBack(), false);
  assert.equal(readFileSync(canonical, 'utf8'), 'login-newer');
});

test('no user login: no copy, nothing written back', (t) => {
  const { canonical, isolated, mirror } = setup(t, null);
  assert.throws(() => statSync(isolated));
  mkdirSync(join(isolated, '..'), { recursive: true });
  writeFileSync(isolated, 'created by the agent');
  assert.equal(mirror.writeBack(), false);
  assert.throws(() => statSync(canonical));
});
