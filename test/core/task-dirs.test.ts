// A task's directory and its caller's authorisation are checked when its work starts, not only when it was asked for
// (rules: roots-only, hub-tools, workspace-locks): a queued task whose dir was swapped for a link (here to baton's state
// dir, by the delegated agent ahead of it on the same lock) or whose root was withdrawn fails with the reason and
// starts no agent; a continue on an agent the caller may no longer reach is refused. Worktrees live outside the state
// dir, the roots and baton's dirs; one left at the old place inside the state dir is moved out when its task continues;
// a full disk during `git worktree add` says so and leaves no branch behind.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createAgent } from '../../src/agents/registry.ts';
import type { Engine } from '../../src/core/engine.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { isWithin } from '../../src/lib/paths.ts';
import { ensurePrivateDir } from '../../src/lib/private-fs.ts';
import { engineFor, settle } from '../support/engine.ts';
import { git } from '../support/git.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';

function setup(dir: string) {
  const root = join(dir, 'root');
  mkdirSync(join(root, 'x', 'sub'), { recursive: true });
  const stateDir = ensurePrivateDir(join(dir, 'state'));
  const record = join(dir, 'record.jsonl');
  const agentState = ensurePrivateDir(join(dir, 'agent-state'));
  const agent = createAgent(
    'scripted',
    {
      kind: 'acp',
      command: [process.execPath, SCRIPTED_ACP_AGENT],
      env: { ACP_TEST_AGENT_RECORD: record, ACP_TEST_AGENT_STATE: agentState },
      cancelGraceMs: 1_000,
    },
    { stateDir, logger: silentLogger },
  );
  const sessions = () =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { event: string; params?: { cwd?: string } })
          .filter((e) => e.event === 'session/new' || e.event === 'session/load')
      : [];
  return { root, stateDir, agent, sessions };
}

/** A task on `<root>/x` that waits for `<root>/x/go` and then runs `then` with its shell. */
async function holder(engine: Engine, root: string, then: string) {
  return engine.run('alice', {
    prompt: acpScript([{ waitFor: 'go' }, { sh: then }]),
    cwd: join(root, 'x'),
    idempotencyKey: 'holder',
  });
}

test("a queued task's dir swapped for a link to baton's state dir: the round fails, no agent starts", async (t) => {
  const dir = tempDir(t);
  const { root, stateDir, agent, sessions } = setup(dir);
  const { engine } = engineFor(t, { agents: { scripted: agent }, roots: [root], stateDir });
  const a = await holder(engine, root, `rm -rf sub && ln -s '${stateDir}' sub && echo swapped`);
  const b = await engine.run('alice', {
    prompt: acpScript([{ writeFile: { name: 'escaped.txt', content: 'x' } }]),
    cwd: join(root, 'x', 'sub'),
    idempotencyKey: 'queued',
  });
  assert.equal(b.state, 'queued', 'B waits behind A on the same lock');
  writeFileSync(join(root, 'x', 'go'), '');
  assert.equal((await settle(engine, 'alice', a.taskId)).state, 'succeeded');
  const done = await settle(engine, 'alice', b.taskId);
  assert.equal(done.state, 'failed');
  assert.match(String(done.error), /changed since the task was admitted|baton's own files/);
  assert.equal(existsSync(join(stateDir, 'escaped.txt')), false);
  assert.deepEqual(
    sessions().map((s) => s.params?.cwd),
    [join(root, 'x')],
    'only A started an agent',
  );
  assert.ok(!engine.status('alice', b.taskId).events.some((e) => e.kind === 'lifecycle' && e.state === 'running'));

  // A continue of a task whose dir is now such a link is refused at once.
  await assert.rejects(
    engine
      .continue('alice', { taskId: a.taskId, prompt: 'again', idempotencyKey: 'again' })
      .then(() => engine.continue('alice', { taskId: b.taskId, prompt: 'again', idempotencyKey: 'again-b' })),
    /baton's own files|changed since/,
  );
});

test('a queued task whose root was withdrawn fails with the reason', async (t) => {
  const dir = tempDir(t);
  const { root, stateDir, agent, sessions } = setup(dir);
  let roots = [root];
  const { engine } = engineFor(t, { agents: { scripted: agent }, roots: () => roots, stateDir });
  const a = await holder(engine, root, 'echo done');
  const b = await engine.run('alice', { prompt: 'hello', cwd: join(root, 'x', 'sub'), idempotencyKey: 'b' });
  roots = [];
  writeFileSync(join(root, 'x', 'go'), '');
  await settle(engine, 'alice', a.taskId);
  const done = await settle(engine, 'alice', b.taskId);
  assert.equal(done.state, 'failed');
  assert.match(String(done.error), /no project roots are authorised/);
  assert.equal(sessions().length, 1);
});

test('agent_continue is refused once the caller may no longer reach the task’s agent', async (t) => {
  const dir = tempDir(t);
  const { root, stateDir, agent } = setup(dir);
  let reach = ['scripted', 'other'];
  const { engine } = engineFor(t, {
    agents: { scripted: agent, other: agent },
    roots: [root],
    stateDir,
    reachable: () => reach,
  });
  const run = await engine.run('bob', { agent: 'scripted', prompt: 'hi', cwd: root, idempotencyKey: 'r' });
  assert.equal((await settle(engine, 'bob', run.taskId)).state, 'succeeded');
  reach = ['other'];
  await assert.rejects(
    engine.continue('bob', { taskId: run.taskId, prompt: 'more', idempotencyKey: 'c' }),
    (err: Error & { code?: string }) =>
      err.code === 'forbidden' && /agent "scripted" is not reachable for caller "bob"/.test(err.message),
  );
  assert.equal(engine.status('bob', run.taskId).rounds.length, 1, 'no round was added');
});

function repo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'f.txt'), 'x\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'init');
  return dir;
}

test('worktrees live outside the state dir, the roots and baton dirs; an old one is moved out on continue', async (t) => {
  const dir = tempDir(t);
  const { root, stateDir, agent, sessions } = setup(dir);
  const project = repo(join(root, 'project'));
  const { engine, store } = engineFor(t, { agents: { scripted: agent }, roots: [root], stateDir });
  const run = await engine.run('alice', {
    prompt: 'hi',
    cwd: project,
    isolation: 'worktree',
    idempotencyKey: 'w',
  });
  assert.equal((await settle(engine, 'alice', run.taskId)).state, 'succeeded');
  const workdir = store.getTask(run.taskId)!.workdir;
  assert.equal(workdir, join(dir, 'state-worktrees', run.taskId));
  for (const d of [stateDir, root]) assert.ok(!isWithin(d, workdir), `${workdir} is outside ${d}`);

  // A task from before: its worktree inside the state dir.
  const old = join(stateDir, 'worktrees', run.taskId);
  mkdirSync(join(stateDir, 'worktrees'));
  git(project, 'worktree', 'move', workdir, old);
  store.setWorkdir(run.taskId, old);
  const again = await engine.continue('alice', { taskId: run.taskId, prompt: 'again', idempotencyKey: 'c' });
  assert.equal((await settle(engine, 'alice', again.taskId)).state, 'succeeded');
  assert.equal(store.getTask(run.taskId)!.workdir, workdir, 'moved out of the state dir');
  assert.equal(existsSync(old), false);
  assert.equal(sessions().at(-1)?.params?.cwd, workdir);
});

test('a full disk during git worktree add says disk full and leaves no branch', {
  skip: process.getuid?.() === 0 ? false : 'mounting a tmpfs needs root',
}, async (t) => {
  const dir = tempDir(t);
  const { root, stateDir, agent, sessions } = setup(dir);
  const project = repo(join(root, 'project'));
  // Enough files that the checkout cannot fit in the small file system.
  for (let i = 0; i < 40; i++) writeFileSync(join(project, `big${i}.bin`), Buffer.alloc(64 * 1024, i));
  git(project, 'add', '.');
  git(project, 'commit', '-q', '-m', 'big');
  const worktrees = join(dir, 'full');
  mkdirSync(worktrees, { mode: 0o700 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0700', 'tmpfs', worktrees]);
  try {
    const { engine } = engineFor(t, { agents: { scripted: agent }, roots: [root], stateDir, worktreesDir: worktrees });
    const run = await engine.run('alice', { prompt: 'hi', cwd: project, isolation: 'worktree', idempotencyKey: 'f' });
    const done = await settle(engine, 'alice', run.taskId);
    assert.equal(done.state, 'failed');
    assert.match(String(done.error), /disk full/);
    assert.equal(git(project, 'branch', '--list', `baton/${run.taskId}`), '');
    assert.equal(existsSync(join(worktrees, run.taskId)), false);
    assert.equal(sessions().length, 0);
    await engine.close();
  } finally {
    spawnSync('umount', ['-l', worktrees]);
  }
});
