// LB-2: Codex's Unix socket alias checks against fixtures the test builds (the real-binary derivation is proven in
// app-server-client.test.ts). Nothing here is created, removed or connected to by the functions under test.
import assert from 'node:assert/strict';
import { chmodSync, lchownSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { codexUnixSocketTarget, observeCodexUnixSocket } from '../../src/index.ts';
import { tempDir } from '../support/tmp.ts';

const NOT_ALIAS = 'Codex Unix socket path is not the alias Codex publishes';
const UNSAFE_PARENT = 'Codex Unix socket parent directory lets other users replace its entries';
const STALE = 'Codex Unix socket alias has no socket behind it';
const NOT_PRIVATE = 'Codex Unix socket directory is not private to the current user';
const NOT_OWNED = 'Codex Unix socket is not a socket owned by the current user';
const OTHER_UID = 65534;

async function listen(path: string, t: { after: (fn: () => unknown) => void }): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  t.after(() => new Promise((r) => server.close(r)));
  return server;
}

/** A daemon directory (0700) and a link directory (0700) like Codex's own layout. */
function layout(t: { after: (fn: () => unknown) => void }) {
  const root = tempDir(t, 'baton-sock-');
  const daemonDirectory = join(root, 'daemon');
  const links = join(root, 'links');
  mkdirSync(daemonDirectory, { mode: 0o700 });
  mkdirSync(links, { mode: 0o700 });
  return { root, daemonDirectory, links, socketPath: join(links, 'codex.sock') };
}

test('path and option validation use the exact messages', async () => {
  const bad = ['relative/sock', '/a/../b', '/a/./b', '/a//b', '/a/b/', '/', '/a/b\0c'];
  for (const path of bad) {
    await assert.rejects(observeCodexUnixSocket(path), {
      message: 'Codex Unix socket path must be a normalized absolute file path',
    });
    await assert.rejects(codexUnixSocketTarget(path), {
      message: 'Codex Unix socket path must be a normalized absolute file path',
    });
  }
  for (const daemonDirectory of ['rel', '/a/../b', '/a/']) {
    await assert.rejects(observeCodexUnixSocket('/tmp/x.sock', { daemonDirectory }), {
      message: 'Codex daemon socket directory must be a normalized absolute path',
    });
  }
  const geteuid = process.geteuid;
  Object.defineProperty(process, 'geteuid', { value: undefined, configurable: true, writable: true });
  try {
    await assert.rejects(observeCodexUnixSocket('/tmp/x.sock'), {
      message: 'Codex Unix socket inspection requires a POSIX effective user id',
    });
  } finally {
    Object.defineProperty(process, 'geteuid', { value: geteuid, configurable: true, writable: true });
  }
});

test('the target is the SHA-256 of the path with its parent canonicalised, in the per-user directory', async (t) => {
  const { root, daemonDirectory, links } = layout(t);
  symlinkSync(links, join(root, 'via-link'));
  const direct = await codexUnixSocketTarget(join(links, 'a.sock'), { daemonDirectory });
  assert.equal(await codexUnixSocketTarget(join(root, 'via-link', 'a.sock'), { daemonDirectory }), direct);
  assert.match(direct, new RegExp(`^${daemonDirectory}/[0-9a-f]{64}$`));
  assert.match(await codexUnixSocketTarget(join(links, 'a.sock')), new RegExp(`/codex-daemon-${process.geteuid!()}/`));
  // The parent must exist.
  await assert.rejects(codexUnixSocketTarget(join(root, 'missing', 'a.sock')), { code: 'ENOENT' });
});

test('absent, published, and every refusal', async (t) => {
  const { root, daemonDirectory, links, socketPath } = layout(t);
  const opts = { daemonDirectory };
  assert.equal(await observeCodexUnixSocket(socketPath, opts), 'absent');

  const target = await codexUnixSocketTarget(socketPath, opts);
  await listen(target, t);
  symlinkSync(target, socketPath);
  assert.equal(await observeCodexUnixSocket(socketPath, opts), 'published');

  // A regular file and a socket bound directly at the path are not the alias.
  const file = join(links, 'file.sock');
  writeFileSync(file, '');
  await assert.rejects(observeCodexUnixSocket(file, opts), { message: NOT_ALIAS });
  const direct = join(links, 'direct.sock');
  await listen(direct, t);
  await assert.rejects(observeCodexUnixSocket(direct, opts), { message: NOT_ALIAS });

  // A link to any other target (even a real socket of ours) is foreign.
  const foreign = join(links, 'foreign.sock');
  symlinkSync(direct, foreign);
  await assert.rejects(observeCodexUnixSocket(foreign, opts), { message: NOT_ALIAS });

  // Stale: Codex's own link text, nothing behind it.
  const stale = join(links, 'stale.sock');
  symlinkSync(await codexUnixSocketTarget(stale, opts), stale);
  await assert.rejects(observeCodexUnixSocket(stale, opts), { message: STALE });

  // Unsafe parent: group/world-writable without the sticky bit; sticky makes it acceptable (like /tmp).
  const shared = join(root, 'shared');
  mkdirSync(shared, { mode: 0o700 });
  const sharedSock = join(shared, 'codex.sock');
  const sharedTarget = await codexUnixSocketTarget(sharedSock, opts);
  await listen(sharedTarget, t);
  symlinkSync(sharedTarget, sharedSock);
  chmodSync(shared, 0o777);
  await assert.rejects(observeCodexUnixSocket(sharedSock, opts), { message: UNSAFE_PARENT });
  chmodSync(shared, 0o1777);
  assert.equal(await observeCodexUnixSocket(sharedSock, opts), 'published');
  chmodSync(shared, 0o770);
  await assert.rejects(observeCodexUnixSocket(sharedSock, opts), { message: UNSAFE_PARENT });
  chmodSync(shared, 0o700);

  // The daemon directory must be the user's own 0700 directory.
  chmodSync(daemonDirectory, 0o750);
  await assert.rejects(observeCodexUnixSocket(socketPath, opts), { message: NOT_PRIVATE });
  chmodSync(daemonDirectory, 0o700);

  // The target must be a socket: a regular file in its place is refused.
  const notSocket = join(links, 'not-socket.sock');
  const notSocketTarget = await codexUnixSocketTarget(notSocket, opts);
  writeFileSync(notSocketTarget, '');
  symlinkSync(notSocketTarget, notSocket);
  await assert.rejects(observeCodexUnixSocket(notSocket, opts), { message: NOT_OWNED });

  if (process.geteuid!() === 0) {
    // Ownership checks need another uid, which only root can give a fixture.
    lchownSync(socketPath, OTHER_UID, OTHER_UID);
    await assert.rejects(observeCodexUnixSocket(socketPath, opts), { message: NOT_ALIAS });
    lchownSync(socketPath, 0, 0);
    lchownSync(target, OTHER_UID, OTHER_UID);
    await assert.rejects(observeCodexUnixSocket(socketPath, opts), { message: NOT_OWNED });
    lchownSync(target, 0, 0);
    lchownSync(daemonDirectory, OTHER_UID, OTHER_UID);
    await assert.rejects(observeCodexUnixSocket(socketPath, opts), { message: NOT_PRIVATE });
    lchownSync(daemonDirectory, 0, 0);
    lchownSync(links, OTHER_UID, OTHER_UID);
    await assert.rejects(observeCodexUnixSocket(socketPath, opts), { message: UNSAFE_PARENT });
    lchownSync(links, 0, 0);
  }
  assert.equal(await observeCodexUnixSocket(socketPath, opts), 'published');
  unlinkSync(socketPath);
  assert.equal(await observeCodexUnixSocket(socketPath, opts), 'absent');
});
