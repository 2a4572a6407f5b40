// Probe processes: an agent whose `--version` hangs is stopped when the preflight's probe deadline passes,
// and a hub killed (SIGKILL) while such a probe hangs leaves it recorded, so the next start reaps it.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { spawnGroup } from '../../../src/lib/process-group.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import { batonHome, isolatedEnv, startHub, writeHubConfig } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

/** Running, as opposed to gone or a zombie nobody reaped yet (a reparented child may stay one in a container). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    if (existsSync('/proc/self/stat')) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** Probe groups the hub recorded in its store (read through a second, read-only connection). */
function recordedProbes(dbPath: string): number[] {
  if (!existsSync(dbPath)) return [];
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    return (db.prepare("SELECT pgid FROM workers WHERE task_id = 'probe'").all() as { pgid: number }[]).map((r) =>
      Number(r.pgid),
    );
  } catch {
    return [];
  } finally {
    db.close();
  }
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a hung --version probe is stopped at its deadline, and a killed hub leaves it for the next start to reap', async (t) => {
  const dir = tempDir(t, 'baton-probe-');
  const work = join(dir, 'work');
  mkdirSync(work);
  // TEST FIXTURE: a fake agent binary named like one baton asks for --version (`dsh`). Asked for --version it records
  // its pid and sleeps forever (exec keeps the pid), as a hung CLI would.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const pids = join(dir, 'probe-pids');
  // Every pid read is remembered: the temp dir (and the pid file) is removed before this test's own after hook runs.
  const seen = new Set<number>();
  const probePids = () => {
    const list = existsSync(pids) ? readFileSync(pids, 'utf8').trim().split('\n').map(Number) : [];
    for (const p of list) seen.add(p);
    return list;
  };
  writeFileSync(
    join(bin, 'dsh'),
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo $$ >> '${pids}'; exec sleep 100000; fi\nexit 1\n`,
  );
  chmodSync(join(bin, 'dsh'), 0o755);
  const env = { PATH: `${bin}:${process.env.PATH}` };
  // Whatever happens to the assertions, no fixture process outlives the test.
  t.after(() => {
    probePids();
    for (const pid of seen) {
      try {
        // Only our fixture's sleep: never a process that reused the pid.
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\x080000\0') process.kill(pid, 'SIGKILL');
      } catch {}
    }
  });
  const setup = { dir, roots: [work], agents: { hung: { kind: 'acp', command: ['dsh'] } } };
  const configPath = writeHubConfig(setup);
  const setProbeTimeout = (ms: number) => {
    const c = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, JSON.stringify({ ...c, limits: { ...c.limits, probeTimeoutMs: ms } }));
  };
  // 1. The preflight's deadline passes: the hung probe is stopped before the hub listens.
  setProbeTimeout(1_000);
  const first = await startHub(t, setup, env);
  const [p1] = probePids();
  assert.ok(p1, 'the probe ran');
  assert.equal(running(p1), false, 'the hung probe is gone once the preflight is over');
  await first.stop();

  // 2. A hub killed while its probe hangs: the probe survives it (its own process group)...
  setProbeTimeout(600_000);
  const killed = spawnGroup(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'serve'], {
    env: isolatedEnv(dir, env),
    stdio: 'ignore',
  });
  t.after(() => killed.stop(1_000));
  await until('the second probe', () => probePids().length >= 2);
  const p2 = probePids()[1]!;
  // The probe may print its pid before the hub has committed its record: wait for the record, as a crash after it
  // is the case under test.
  await until('the hub to record the probe', () =>
    recordedProbes(join(batonHome(dir), 'state', 'baton.db')).includes(p2),
  );
  killed.child.kill('SIGKILL');
  await killed.exited;
  assert.equal(running(p2), true, 'the probe outlived the killed hub');

  // 3. ...until the next start, whose recovery reaps it; its own probe is stopped at the deadline again.
  setProbeTimeout(1_000);
  const third = await startHub(t, setup, env);
  assert.equal(running(p2), false, 'the killed hub’s probe was reaped at start');
  const p3 = probePids()[2];
  assert.ok(p3);
  assert.equal(running(p3), false);
  assert.match(third.output(), /stopped a worker process group left by a previous daemon/);
});
