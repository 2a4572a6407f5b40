// The repository is untrusted input (rule: repo-code-off): the gits baton runs itself (snapshots, through a shell of
// their own or a runner, the toplevel lookup and `git worktree add`) run none of the commands a repository's own config
// or files name — an fsmonitor, hooks, clean/smudge/process filters, textconv and external diff drivers — and the
// environment they hand on carries no baton secret. The escape form has a delegated ACP agent plant all of them with
// its shell during a round, then the hub snapshots that dir and adds a worktree of that repository.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { createAgent } from '../../src/agents/registry.ts';
import { addWorktree, gitToplevel, snapshot } from '../../src/core/git.ts';
import { gitEnv, SnapshotRunners } from '../../src/core/snapshot-runners.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { ensurePrivateDir } from '../../src/lib/private-fs.ts';
import { engineFor, settle } from '../support/engine.ts';
import { git } from '../support/git.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';

const SECRET = 'baton-secret-token-0123456789abcdef';

/** Plants a caller token and baton's home in this process's env (as a shell that sourced tokens.env would). */
function plantSecrets(t: Pick<TestContext, 'after'>, extra: Record<string, string> = {}): void {
  const planted = { BATON_TOKEN_ALICE: SECRET, BATON_HOME: '/planted/baton-home', ...extra };
  const saved = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]));
  Object.assign(process.env, planted);
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

/** A committed repository whose attributes name a filter and diff driver for *.txt and a process filter for *.dat. */
function repoWithAttributes(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'a.txt'), 'one\n');
  writeFileSync(join(dir, 'b.dat'), 'data\n');
  writeFileSync(join(dir, 'c.usr'), 'user\n');
  writeFileSync(join(dir, '.gitattributes'), '*.txt filter=evil diff=evil\n*.dat filter=longrun\n*.usr filter=userf\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  return dir;
}

/**
 * What a hostile agent (or a cloned repository) does: every command git could be made to run writes its environment
 * to `<markers>/ran-<name>`; then two tracked files are changed, so a status or diff must look inside them.
 */
function plantScript(markers: string): string {
  const bin = join(markers, 'bin');
  const names = ['fsmonitor', 'post-checkout', 'reference-transaction', 'clean', 'smudge', 'process', 'textconv'];
  return [
    `mkdir -p '${bin}'`,
    ...names.map(
      (n) =>
        `printf '#!/bin/sh\\nenv > "${markers}/ran-$(basename "$0")"\\nexec cat "$@" 2>/dev/null\\n' > '${bin}/${n}'`,
    ),
    `chmod +x '${bin}'/*`,
    `git config core.fsmonitor '${bin}/fsmonitor'`,
    `git config filter.evil.clean '${bin}/clean'`,
    `git config filter.evil.smudge '${bin}/smudge'`,
    'git config filter.evil.required true',
    `git config filter.longrun.process '${bin}/process'`,
    `git config diff.evil.textconv '${bin}/textconv'`,
    `git config diff.evil.command '${bin}/textconv'`,
    `cp '${bin}/post-checkout' .git/hooks/post-checkout`,
    `cp '${bin}/reference-transaction' .git/hooks/reference-transaction`,
    'echo two >> a.txt',
    'echo more >> b.dat',
    'echo ok',
  ].join('\n');
}

function ran(markers: string): string[] {
  return existsSync(markers) ? readdirSync(markers).filter((f) => f.startsWith('ran-')) : [];
}

/**
 * A user-level filter (the user's own ~/.gitconfig, like Git LFS) stays on; it shows the environment baton's gits
 * hand on. HOME points at a fake home for this test.
 */
function userFilterHome(t: Pick<TestContext, 'after'>, dir: string, markers: string): void {
  const home = join(dir, 'home');
  mkdirSync(home);
  const bin = join(markers, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'userclean'), `#!/bin/sh\nenv > "${markers}/user-filter-env"\nexec cat\n`, { mode: 0o755 });
  writeFileSync(join(home, '.gitconfig'), `[filter "userf"]\n\tclean = ${join(bin, 'userclean')}\n`);
  const saved = process.env.HOME;
  process.env.HOME = home;
  t.after(() => {
    process.env.HOME = saved;
  });
}

test("baton's own gits run no command the repository names, and hand on no baton secret", async (t) => {
  const dir = tempDir(t);
  const markers = join(dir, 'markers');
  const repo = repoWithAttributes(join(dir, 'repo'));
  execFileSync('/bin/sh', ['-c', plantScript(markers)], { cwd: repo });
  userFilterHome(t, dir, markers);
  writeFileSync(join(repo, 'c.usr'), 'user changed\n');
  plantSecrets(t);

  const direct = await snapshot(repo);
  const runners = new SnapshotRunners({ parentDir: ensurePrivateDir(join(dir, 'runners')) });
  t.after(() => runners.close());
  const pooled = await snapshot(repo, runners);
  for (const s of [direct, pooled]) {
    assert.ok(s.git);
    assert.deepEqual(s.dirty.map((d) => d.path).sort(), ['a.txt', 'b.dat', 'c.usr']);
    assert.equal(s.diffstat.files, 3);
  }
  assert.equal(await gitToplevel(repo), repo);
  const wt = join(dir, 'wt');
  await addWorktree(repo, wt, 'baton/probe');
  assert.equal(readFileSync(join(wt, 'a.txt'), 'utf8'), 'one\n', 'checked out without the smudge filter');
  assert.deepEqual(ran(markers), []);

  // The user's own filter ran (the snapshot of c.usr), in an environment without baton's secrets or settings.
  const env = readFileSync(join(markers, 'user-filter-env'), 'utf8');
  assert.ok(!env.includes(SECRET), 'the caller token is not handed on');
  assert.doesNotMatch(env, /^BATON_/m);
  assert.match(env, /^PATH=/m);
  assert.deepEqual(
    Object.keys(gitEnv()).filter((k) => k.startsWith('BATON_')),
    [],
  );
});

test('escape: a delegated agent plants an fsmonitor, hooks and filters; the hub runs none of them', async (t) => {
  const dir = tempDir(t);
  const markers = join(dir, 'markers');
  const repo = repoWithAttributes(join(dir, 'root', 'repo'));
  const stateDir = ensurePrivateDir(join(dir, 'state'));
  plantSecrets(t);
  const agent = createAgent(
    'scripted',
    { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], cancelGraceMs: 1_000 },
    { stateDir, logger: silentLogger },
  );
  const { engine } = engineFor(t, { agents: { scripted: agent }, roots: [join(dir, 'root')], stateDir });

  const plant = await engine.run('alice', {
    prompt: acpScript([{ sh: plantScript(markers) }]),
    cwd: repo,
    idempotencyKey: 'plant',
  });
  const planted = await settle(engine, 'alice', plant.taskId);
  assert.equal(planted.state, 'succeeded', String(planted.error));
  // The after-snapshot still sees what the agent changed.
  const after = engine.status('alice', plant.taskId).rounds[0]!.gitAfter as { dirty: { path: string }[] };
  assert.deepEqual(after.dirty.map((d) => d.path).sort(), ['a.txt', 'b.dat']);

  // A worktree of the planted repository, snapshotted before and after its round.
  const isolated = await engine.run('alice', {
    prompt: acpScript([{ reply: 'in a worktree' }]),
    cwd: repo,
    isolation: 'worktree',
    idempotencyKey: 'worktree',
  });
  const done = await settle(engine, 'alice', isolated.taskId);
  assert.equal(done.state, 'succeeded', String(done.error));
  assert.deepEqual(ran(markers), []);
});
