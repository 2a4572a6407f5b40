// `baton store check|backup|restore` and the hub's scheduled online backups, through the real CLI and a
// real hub: a hub refuses to start on a store that lost its database, names the file and the recovery commands, and
// `baton store restore` brings the tasks back from a backup.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from '../support/bins.ts';
import { call, connectCaller, followToEnd, isolatedEnv, startHub, writeHubConfig } from '../support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';

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
  assert.match(check.stdout, /ok \(hub running\): quick_check passed, 1 task/);
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
  assert.match(healthy.stdout, /ok: quick_check passed, 1 task/);

  const again = await startHub(t, setup);
  const alice2 = await connectCaller(t, again, 'alice');
  const status = await call<{ state: string }>(alice2, 'agent_status', { taskId: run.taskId });
  assert.equal(status.state, 'succeeded', 'the restored store has the task');
});
