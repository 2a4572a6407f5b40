// Git snapshots against real repositories: what `git status --porcelain=v2 -z` reports is parsed into the snapshot
// callers read (renames with two paths, paths with spaces and newlines, untracked files, unborn and detached HEADs).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { findWorkTree, gitToplevel, snapshot } from '../../src/core/git.ts';
import { git } from '../support/git.ts';
import { tempDir } from '../support/tmp.ts';

test('snapshot: not a work tree, then an unborn branch', async (t) => {
  const dir = tempDir(t);
  assert.deepEqual(await snapshot(dir), { git: false, reason: 'not a git work tree' });
  git(dir, 'init', '-q', '-b', 'trunk');
  writeFileSync(join(dir, 'new file.txt'), 'x\n');
  assert.deepEqual(await snapshot(dir), {
    git: true,
    head: null,
    branch: 'trunk',
    dirty: [{ path: 'new file.txt', status: '??' }],
    dirtyCount: 1,
    diffstat: { files: 0, insertions: 0, deletions: 0 },
  });
});

test('snapshot: modified, staged, renamed, deleted and untracked paths, spaces and newlines included', async (t) => {
  const dir = tempDir(t);
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'a b.txt'), 'one\n');
  writeFileSync(join(dir, 'old name'), 'moved\n');
  writeFileSync(join(dir, 'gone'), 'bye\n');
  writeFileSync(join(dir, 'line\nbreak'), 'x\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  const head = git(dir, 'rev-parse', 'HEAD').trim();

  writeFileSync(join(dir, 'a b.txt'), 'one\ntwo\n');
  git(dir, 'mv', 'old name', 'new name');
  git(dir, 'rm', '-q', 'gone');
  writeFileSync(join(dir, 'line\nbreak'), 'y\n');
  git(dir, 'add', 'line\nbreak');
  writeFileSync(join(dir, 'line\nbreak'), 'z\n');
  mkdirSync(join(dir, 'sub dir'));
  writeFileSync(join(dir, 'sub dir', 'u.txt'), 'u\n');

  const s = await snapshot(dir);
  assert.ok(s.git);
  assert.equal(s.head, head);
  assert.equal(s.branch, 'main');
  assert.deepEqual(
    [...s.dirty].sort((x, y) => x.path.localeCompare(y.path)),
    [
      { path: 'a b.txt', status: 'M' },
      { path: 'gone', status: 'D' },
      { path: 'line\nbreak', status: 'MM' },
      { path: 'new name', status: 'R' },
      { path: 'sub dir/u.txt', status: '??' },
    ],
  );
  assert.equal(s.dirtyCount, 5);
  // a b.txt +1, gone -1, line\nbreak +1 -1, and the rename as a file with no changed lines.
  assert.deepEqual(s.diffstat, { files: 4, insertions: 2, deletions: 2 });

  git(dir, 'checkout', '-q', '--detach');
  const detached = await snapshot(dir);
  assert.ok(detached.git);
  assert.equal(detached.branch, null);
  assert.equal(detached.head, head);
});

test('findWorkTree names the work tree git names: root, subdir, linked worktree, submodule-like gitfile, none', async (t) => {
  const base = tempDir(t);
  const repo = join(base, 'repo $(x) `y`');
  mkdirSync(join(repo, 'a', 'b'), { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'a', 'f.txt'), 'x\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'init');
  const linked = join(base, 'linked');
  git(repo, 'worktree', 'add', '-q', '-b', 'side', linked);
  mkdirSync(join(linked, 'deep'), { recursive: true });
  // A `.git` dir that is no repository (no HEAD) is passed over, as git passes over it.
  mkdirSync(join(repo, 'a', 'fake', '.git'), { recursive: true });
  const plain = join(base, 'plain');
  mkdirSync(plain);
  for (const dir of [repo, join(repo, 'a', 'b'), join(repo, 'a', 'fake'), linked, join(linked, 'deep'), plain]) {
    assert.equal(findWorkTree(dir), await gitToplevel(dir), dir);
  }
  assert.equal(findWorkTree(plain), null);
  assert.equal(findWorkTree(linked), linked);
  // The snapshot script gets a dir whose name a shell would expand if it were not passed as an argument.
  const s = await snapshot(join(repo, 'a'));
  assert.ok(s.git);
  assert.equal(s.branch, 'main');
});
