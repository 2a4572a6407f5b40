// Snapshot runners (rule: snapshot-runners) against real repositories and real shells: the same answers as a shell per
// snapshot, more requests than runners, a runner killed or timed out mid-request, an output over the cap, a dir the
// line protocol cannot carry, and no process or private dir left after close or after the daemon dies.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { snapshot } from '../../src/core/git.ts';
import { gitEnv, SnapshotRunners, statusAndNumstat } from '../../src/core/snapshot-runners.ts';
import { REPO_ROOT } from '../support/bins.ts';
import { git } from '../support/git.ts';
import { pidAlive, until } from '../support/poll.ts';
import { tempDir } from '../support/tmp.ts';

/** A repository with committed files, then modified, staged, renamed, deleted and untracked paths. */
function dirtyRepo(dir: string, salt = ''): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'a b.txt'), `one${salt}\n`);
  writeFileSync(join(dir, 'old name'), 'moved\n');
  writeFileSync(join(dir, 'gone'), 'bye\n');
  writeFileSync(join(dir, 'line\nbreak'), 'x\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  writeFileSync(join(dir, 'a b.txt'), `one${salt}\ntwo\n`);
  git(dir, 'mv', 'old name', 'new name');
  git(dir, 'rm', '-q', 'gone');
  writeFileSync(join(dir, 'line\nbreak'), 'z\n');
  mkdirSync(join(dir, 'sub dir'));
  writeFileSync(join(dir, 'sub dir', `u${salt}.txt`), 'u\n');
  return dir;
}

function unbornRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'trunk');
  writeFileSync(join(dir, 'new file.txt'), 'x\n');
  return dir;
}

/**
 * Runners whose `git` is a stand-in that blocks (after noting its pid) in any dir named `*block*` (the dir after -C);
 * the config lookup of the repository's filter drivers passes through.
 */
function blockingGit(base: string) {
  const bin = join(base, 'bin');
  mkdirSync(bin);
  const pids = join(base, 'git-pids');
  writeFileSync(
    join(bin, 'git'),
    '#!/bin/sh\nd=; c=; for a in "$@"; do [ "$c" = 1 ] && d=$a; c=; [ "$a" = -C ] && c=1; done\n' +
      `case " $* " in *" config "*) ;; *) case "$d" in *block*) echo $$ >> "${pids}"; exec sleep 600;; esac;; esac\n` +
      'PATH="$REAL_PATH" exec git "$@"\n',
  );
  chmodSync(join(bin, 'git'), 0o755);
  const blocked = join(base, 'block');
  mkdirSync(blocked);
  const env = () => ({ ...gitEnv(), REAL_PATH: process.env.PATH, PATH: `${bin}:${process.env.PATH}` });
  /** The pids of both gits of the blocked request, once both have started. */
  const gitPids = () =>
    until(() => (existsSync(pids) ? readFileSync(pids, 'utf8').trim().split('\n').map(Number) : []), {
      what: 'both gits of the blocked request to start',
      ok: (p) => p.length === 2,
    });
  return { env, blocked, gitPids };
}

test('a runner answers what a shell per snapshot answers: dirty repo, unborn repo, not a repo', async (t) => {
  const base = tempDir(t);
  const parentDir = join(base, 'state');
  mkdirSync(parentDir, { mode: 0o700 });
  const runners = new SnapshotRunners({ parentDir });
  t.after(() => runners.close());
  const plain = join(base, 'plain');
  mkdirSync(plain);
  for (const dir of [dirtyRepo(join(base, 'dirty')), unbornRepo(join(base, 'unborn')), plain]) {
    assert.deepEqual(await runners.run(dir), await statusAndNumstat(dir), dir);
    assert.deepEqual(await snapshot(dir, runners), await snapshot(dir), dir);
  }
  assert.equal((await runners.run(plain)).ok, false);
  // One request at a time from one caller: one runner, in its own private dir.
  assert.equal(runners.pids().length, 1);
  const [own] = readdirSync(parentDir);
  assert.equal(statSync(join(parentDir, own!)).mode & 0o777, 0o700);
});

test('more requests than runners wait their turn and each gets its own answer', async (t) => {
  const base = tempDir(t);
  const runners = new SnapshotRunners({ parentDir: base, size: 2 });
  t.after(() => runners.close());
  const repos = [0, 1, 2, 3].map((i) => dirtyRepo(join(base, `r${i}`), String(i).repeat(i + 1)));
  repos.push(unbornRepo(join(base, 'unborn')));
  const expected = await Promise.all(repos.map((dir) => statusAndNumstat(dir)));
  const asked = Array.from({ length: 15 }, (_, i) => i % repos.length);
  const answers = asked.map((i) => runners.run(repos[i]!));
  assert.equal(runners.pids().length, 2, 'no more runners than the pool size');
  const got = await Promise.all(answers);
  for (const [k, i] of asked.entries()) assert.deepEqual(got[k], expected[i], `request ${k} (${repos[i]})`);
  assert.equal(runners.pids().length, 2);
});

test('a runner killed mid-request fails that request, its gits go too, and the next request succeeds', async (t) => {
  const base = tempDir(t);
  const { env, blocked, gitPids } = blockingGit(base);
  const runners = new SnapshotRunners({ parentDir: base, size: 1, env });
  t.after(() => runners.close());
  const repo = dirtyRepo(join(base, 'repo'));
  const pending = runners.run(blocked);
  const gits = await gitPids();
  const [runner] = runners.pids();
  process.kill(runner!, 'SIGKILL');
  await assert.rejects(pending, /the snapshot runner exited/);
  await until(() => gits.every((pid) => !pidAlive(pid)), { what: 'the killed runner’s gits to be gone' });
  assert.deepEqual(await runners.run(repo), await statusAndNumstat(repo));
  assert.notEqual(runners.pids()[0], runner, 'a new runner took its place');
  assert.equal(pidAlive(runner!), false);
});

test('a request over its time limit fails, its runner and gits are stopped, and the next request succeeds', async (t) => {
  const base = tempDir(t);
  const { env, blocked, gitPids } = blockingGit(base);
  const runners = new SnapshotRunners({ parentDir: base, size: 1, env, timeoutMs: 500 });
  t.after(() => runners.close());
  const repo = dirtyRepo(join(base, 'repo'));
  const first = await runners.run(repo);
  const [runner] = runners.pids();
  const pending = runners.run(blocked);
  const gits = await gitPids();
  await assert.rejects(pending, /git timed out/);
  await until(() => [runner!, ...gits].every((pid) => !pidAlive(pid)), { what: 'the timed-out runner to be gone' });
  assert.deepEqual(await runners.run(repo), first);
  // As the per-snapshot path answers for a failed git.
  assert.deepEqual(await snapshot(blocked, new SnapshotRunners({ parentDir: base, env, timeoutMs: 1 })), {
    git: false,
    reason: 'not a git work tree',
  });
});

test('output over the cap fails that request only', async (t) => {
  const base = tempDir(t);
  const runners = new SnapshotRunners({ parentDir: base, size: 1, maxBytes: 4096 });
  t.after(() => runners.close());
  const big = unbornRepo(join(base, 'big'));
  for (let i = 0; i < 200; i++) writeFileSync(join(big, `untracked-file-with-a-long-name-${i}.txt`), '');
  const small = unbornRepo(join(base, 'small'));
  await assert.rejects(runners.run(big), /over the limit/);
  assert.deepEqual(await runners.run(small), await statusAndNumstat(small));
});

test('a dir with a newline in its name takes the shell-per-snapshot path', async (t) => {
  const base = tempDir(t);
  const runners = new SnapshotRunners({ parentDir: base });
  t.after(() => runners.close());
  const dir = dirtyRepo(join(base, 'two\nlines'));
  const s = await snapshot(dir, runners);
  assert.ok(s.git);
  assert.deepEqual(s, await snapshot(dir));
  assert.equal(runners.pids().length, 0, 'no runner was started for it');
});

test('when no runner can be started, each request takes a shell of its own', async (t) => {
  const base = tempDir(t);
  const runners = new SnapshotRunners({ parentDir: join(base, 'missing') });
  t.after(() => runners.close());
  const repo = dirtyRepo(join(base, 'repo'));
  assert.deepEqual(await runners.run(repo), await statusAndNumstat(repo));
  assert.equal(runners.pids().length, 0);
});

test('close ends every runner and removes their dirs; later requests still get answers', async (t) => {
  const base = tempDir(t);
  const parentDir = join(base, 'state');
  mkdirSync(parentDir);
  const runners = new SnapshotRunners({ parentDir, size: 3 });
  const repos = [0, 1, 2].map((i) => dirtyRepo(join(base, `r${i}`)));
  await Promise.all(repos.map((dir) => runners.run(dir)));
  const pids = runners.pids();
  assert.equal(pids.length, 3);
  await runners.close();
  // Exited and reaped (a zombie would still answer signal 0).
  for (const pid of pids) assert.equal(pidAlive(pid), false, `runner ${pid}`);
  assert.deepEqual(readdirSync(parentDir), []);
  assert.deepEqual(await runners.run(repos[0]!), await statusAndNumstat(repos[0]!));
  assert.equal(runners.pids().length, 0);
});

test('runners exit on their own, dirs removed, when the process that started them dies', async (t) => {
  const base = tempDir(t);
  const parentDir = join(base, 'state');
  mkdirSync(parentDir);
  const repo = dirtyRepo(join(base, 'repo'));
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { SnapshotRunners } from ${JSON.stringify(join(REPO_ROOT, 'src/core/snapshot-runners.ts'))};
       const runners = new SnapshotRunners({ parentDir: ${JSON.stringify(parentDir)}, size: 2 });
       await Promise.all([runners.run(${JSON.stringify(repo)}), runners.run(${JSON.stringify(repo)})]);
       console.log(JSON.stringify(runners.pids()));
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8');
  const pids = await new Promise<number[]>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('\n')) resolve(JSON.parse(out));
    });
    child.once('exit', (code) => reject(new Error(`the child exited (${code}) before naming its runners`)));
  });
  assert.equal(pids.length, 2);
  assert.equal(readdirSync(parentDir).length, 2);
  child.kill('SIGKILL');
  await until(() => pids.every((pid) => !pidAlive(pid)), { what: 'the orphaned runners to exit' });
  await until(() => readdirSync(parentDir).length === 0, { what: 'the runners to remove their dirs' });
});
