// `baton store check|backup|restore` and the hub's scheduled online backups, through the real CLI and a
// real hub: a hub refuses to start on a store that lost its database, names the file and the recovery commands, and
// `baton store restore` brings the tasks back from a backup.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Store } from '../../../src/core/store.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  batonHome,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  startHub,
  writeHubConfig,
} from '../../support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

function baton(dir: string, configPath: string, ...args: string[]) {
  return spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, ...args], {
    env: isolatedEnv(dir),
    encoding: 'utf8',
    timeout: 60_000,
  });
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('store check, backup and restore; a start on a store that lost baton.db is refused until restored', async (t) => {
  const dir = tempDir(t, 'baton-store-cli-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const setup = {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
  };
  const configPath = writeHubConfig(setup);
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  // Scheduled backups every 0.5 s in this test; the newest 2 are kept.
  writeFileSync(configPath, JSON.stringify({ ...config, backups: { intervalHours: 0.5 / 3600, keep: 2 } }));

  const hub = await startHub(t, setup);
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: 'hello',
    cwd: work,
    idempotencyKey: 'k1',
  });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  const backups = join(hub.stateDir, 'backups');
  await until('three scheduled backups', () => (hub.output().match(/"backup written"/g) ?? []).length >= 3);
  const kept = readdirSync(backups);
  assert.equal(kept.length, 2, `only the newest 2 are kept: ${kept}`);
  for (const f of kept) assert.equal((statSync(join(backups, f)).mode & 0o777).toString(8), '600');

  // While the hub runs: check reads through a second connection, backup works, restore is refused.
  const check = baton(dir, hub.configPath, 'store', 'check');
  assert.equal(check.status, 0, check.stderr);
  assert.match(check.stdout, /ok \(hub running\): integrity_check passed, every row matches its checksum, 1 task/);
  const backup = baton(dir, hub.configPath, 'store', 'backup');
  assert.equal(backup.status, 0, backup.stderr);
  const written = /(\/\S+\/backups\/baton-[^ ]+\.db)/.exec(backup.stdout)?.[1];
  assert.ok(written, backup.stdout);
  // The schedule keeps pruning to 2: keep this copy outside the backups dir to restore it by path.
  const copy = join(dir, 'manual-copy.db');
  copyFileSync(written, copy);
  const busy = baton(dir, hub.configPath, 'store', 'restore', copy);
  assert.notEqual(busy.status, 0);
  assert.match(busy.stderr, /a hub is running.*baton stop/);

  await hub.stop();
  const db = join(hub.stateDir, 'baton.db');
  rmSync(db);
  const refused = baton(dir, hub.configPath, 'serve');
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, new RegExp(`${db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is missing`));
  assert.match(refused.stderr, /baton store check/);
  assert.match(refused.stderr, /baton store restore/);
  assert.equal(existsSync(db), false, 'the refused start created no empty store');

  const damaged = baton(dir, hub.configPath, 'store', 'check');
  assert.equal(damaged.status, 1);
  assert.match(damaged.stdout, /is missing/);

  const name = readdirSync(backups).sort().at(-1)!;
  const restore = baton(dir, hub.configPath, 'store', 'restore', name);
  assert.equal(restore.status, 0, restore.stderr);
  assert.match(restore.stdout, /restored .*: 1 task/);
  assert.equal((statSync(db).mode & 0o777).toString(8), '600');
  const healthy = baton(dir, hub.configPath, 'store', 'check');
  assert.equal(healthy.status, 0, healthy.stdout);
  assert.match(healthy.stdout, /ok: integrity_check passed, every row matches its checksum, 1 task/);

  const again = await startHub(t, setup);
  const alice2 = await connectCaller(t, again, 'alice');
  const status = await call<{ state: string }>(alice2, 'agent_status', { taskId: run.taskId });
  assert.equal(status.state, 'succeeded', 'the restored store has the task');
});

test('a `baton store backup` killed mid-copy leaves no backup: check stays clean, the next backup removes the remains', async (t) => {
  const dir = tempDir(t, 'baton-store-kill-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const configPath = writeHubConfig({ dir, roots: [work], agents: {} });
  const stateDir = join(batonHome(dir), 'state');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  // About 40 MB of results, so the copy takes long enough to be killed while it writes.
  const store = new Store(join(stateDir, 'baton.db'));
  const result = 'r'.repeat(100_000);
  for (let i = 0; i < 400; i++) {
    store.tx(() => {
      store.insertTask({
        id: `t-${i}`,
        caller: 'alice',
        agent: 'a',
        cwd: work,
        workdir: work,
        isolation: 'none',
        now: new Date().toISOString(),
      });
      const n = store.insertRound(`t-${i}`, 'p');
      store.updateRound(`t-${i}`, n, { state: 'succeeded', result: `${i}${result}` });
    });
  }
  store.close();

  const backups = join(stateDir, 'backups');
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'store', 'backup'],
    {
      env: isolatedEnv(dir),
      stdio: 'ignore',
    },
  );
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, signal) => r(signal)));
  const partial = () =>
    existsSync(backups)
      ? readdirSync(backups).find((n) => n.endsWith('.partial') && statSync(join(backups, n)).size > 0)
      : undefined;
  await until('the copy to be half-way written', () => partial() !== undefined);
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
  const left = readdirSync(backups);
  assert.ok(
    left.some((n) => n.endsWith('.partial')),
    `killed while writing: ${left}`,
  );
  assert.deepEqual(
    left.filter((n) => /^baton-.*\.db$/.test(n)),
    [],
    'nothing under a backup name',
  );

  const check = baton(dir, configPath, 'store', 'check');
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.match(check.stdout, /no backups yet|backups in/);
  assert.match(check.stdout, /\.partial: an unfinished copy whose writer is gone/);
  assert.doesNotMatch(check.stdout, /BROKEN/);

  const again = baton(dir, configPath, 'store', 'backup');
  assert.equal(again.status, 0, again.stderr);
  const now = readdirSync(backups);
  assert.equal(now.length, 1, `one backup, the remains removed: ${now}`);
  const healthy = baton(dir, configPath, 'store', 'check');
  assert.equal(healthy.status, 0, healthy.stdout);
  assert.match(healthy.stdout, new RegExp(`${now[0]}: ok, 400 task\\(s\\)`));

  // The CLI refuses a copy that would lose everything, and says so; --force is the way past it.
  const empty = join(dir, 'empty.db');
  writeFileSync(empty, '');
  const refused = baton(dir, configPath, 'store', 'restore', empty);
  assert.equal(refused.status, 1, refused.stdout);
  assert.match(refused.stderr, /not restored: the copy .*empty\.db is empty \(0 bytes\)/);
  assert.match(refused.stderr, /the store holds 400 task\(s\).*loses 400 task\(s\)/is);
  const forced = baton(dir, configPath, 'store', 'restore', '--force', empty);
  assert.equal(forced.status, 0, forced.stderr);
  assert.match(forced.stdout, /forced: the store holds 400 task\(s\).*loses 400 task\(s\)/);
  assert.match(forced.stdout, /restored .*: 0 task\(s\)/);
});

test('a hub on a store with bytes changed inside its records refuses the damaged reads, naming store check and restore', async (t) => {
  const dir = tempDir(t, 'baton-store-rows-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const setup = {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
  };
  writeHubConfig(setup);
  const stateDir = join(batonHome(dir), 'state');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const db = join(stateDir, 'baton.db');
  const store = new Store(db);
  const time = '2026-01-01T00:00:00.000Z';
  const answer = (i: number) => `result ${i} `.repeat(300);
  for (let i = 0; i < 20; i++) {
    store.tx(() => {
      store.insertTask({
        id: `t-${i}`,
        caller: 'alice',
        agent: 'scripted',
        cwd: work,
        workdir: work,
        isolation: 'none',
        now: time,
      });
      const n = store.insertRound(`t-${i}`, `prompt ${i}`);
      store.updateRound(`t-${i}`, n, { state: 'succeeded', endedAt: time, result: answer(i) });
      store.setTaskState(`t-${i}`, 'succeeded', time);
    });
  }
  store.close();
  // 200 bytes of noise inside the records at the end of the last page.
  const fd = openSync(db, 'r+');
  writeSync(fd, Buffer.alloc(200, 0x5a), 0, 200, statSync(db).size - 260);
  closeSync(fd);

  const hub = await startHub(t, setup);
  const alice = await connectCaller(t, hub, 'alice');
  let refused = 0;
  for (let i = 0; i < 20; i++) {
    try {
      const r = await call<{ text: string }>(alice, 'agent_result', { taskId: `t-${i}` });
      assert.equal(r.text, answer(i), `t-${i}: served as stored, never changed`);
    } catch (err) {
      assert.match(
        (err as Error).message,
        /does not match its checksum.*`baton store check`.*`baton store restore <backup>`/s,
      );
      refused++;
    }
  }
  assert.ok(refused > 0, 'the damaged rows are refused');
  const check = baton(dir, hub.configPath, 'store', 'check');
  assert.equal(check.status, 1, check.stdout);
  assert.match(check.stdout, /damaged \(hub running\): damaged rows: \d+ in result_pages/);
});
