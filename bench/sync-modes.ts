// What SQLite's `synchronous` level costs the hub (docs/durability.md): the store writes of one short task,
// in the order the engine makes them (admission; running; worker group; session; before-snapshot; a batch of events
// with commentary; the round's end with its result; worker removed), timed per task on this thread under four
// policies:
//
//   full     every commit synced to the disk (synchronous = FULL, what the store did first)
//   normal   no commit synced (synchronous = NORMAL in WAL: commits reach the OS only; checkpoints still sync)
//   acked    NORMAL, the admission synced on this thread (durableTx) and the round's end synced in the background
//            (syncSoon, in the thread pool): the step between full and group
//   group    NORMAL, the admission committed and its sync asked of the thread pool (commitThenSync; admissions of the
//            same moment share one), the round's end as in acked: what the store does now. Its answers wait for
//            those syncs; this thread does not.
//
// The three run interleaved on one state dir each, in the system temp dir (the disk a hub's state usually lives on
// is the one that matters: pass --dir to measure another). Prints min / median / p90 ms per task and syncs per task.
//
//   node bench/sync-modes.ts [--tasks N] [--rounds N] [--dir DIR]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Store } from '../src/core/store.ts';
import { stats } from './harness.ts';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const TASKS = Number(arg('--tasks', '40'));
const ROUNDS = Number(arg('--rounds', '5'));
const root = mkdtempSync(join(arg('--dir', tmpdir()), 'baton-sync-modes-'));

type Policy = 'full' | 'normal' | 'acked' | 'group';
/** What a commit is: an acknowledged write, a round's end, or progress. */
type Commit = 'ack' | 'end' | 'progress';
const SYNCED_BY_POLICY: Record<Policy, (c: Commit) => boolean> = {
  full: () => true,
  normal: () => false,
  acked: (c) => c === 'ack',
  group: () => false,
};
/** The syncs group's admissions asked for, awaited after each round's timed tasks. */
const pendingSyncs: Promise<void>[] = [];

let ids = 0;
function oneTask(store: Store, policy: Policy): number {
  let syncs = 0;
  const write = (c: Commit, fn: () => void) => {
    if (SYNCED_BY_POLICY[policy](c)) {
      syncs++;
      store.durableTx(fn);
    } else if (policy === 'group' && c === 'ack') pendingSyncs.push(store.commitThenSync(fn));
    else store.tx(fn);
    if ((policy === 'acked' || policy === 'group') && c === 'end') store.syncSoon();
  };
  const id = `t-bench-${++ids}`;
  const at = new Date().toISOString();
  const snap = { git: true, head: 'a'.repeat(40), branch: 'main', dirty: [{ path: 'README.md', status: 'M' }] };
  write('ack', () => {
    store.insertTask({ id, caller: 'alice', agent: 'bench', cwd: root, workdir: root, isolation: 'none', now: at });
    const n = store.insertRound(id, 'prompt');
    store.putIdempotency('alice', id, { payloadHash: 'h', taskId: id, round: n });
    store.appendEvent(id, { time: at, round: n, kind: 'lifecycle', state: 'queued' });
  });
  write('progress', () => {
    store.setTaskState(id, 'running', at);
    store.updateRound(id, 1, { state: 'running', startedAt: at });
    store.appendEvent(id, { time: at, round: 1, kind: 'lifecycle', state: 'running' });
  });
  write('progress', () => store.addWorker({ pgid: 100_000 + ids, taskId: id, leaderStart: '1' }, at));
  write('progress', () => {
    store.setSessionId(id, `s-${id}`);
    store.appendEvent(id, { time: at, round: 1, kind: 'session', sessionId: `s-${id}` });
  });
  write('progress', () => store.updateRound(id, 1, { before: snap }));
  write('progress', () => {
    for (const text of ['bench ', 'answer']) {
      store.appendCommentary(id, text);
      store.appendEvent(id, { time: at, round: 1, kind: 'commentary', text });
    }
  });
  write('end', () => {
    store.updateRound(id, 1, { state: 'succeeded', endedAt: at, after: snap, result: 'bench answer' });
    store.setTaskState(id, 'succeeded', at);
    store.appendEvent(id, { time: at, round: 1, kind: 'lifecycle', state: 'succeeded' });
  });
  write('progress', () => store.removeWorkersOfTask(id));
  return syncs;
}

const policies: Policy[] = ['full', 'normal', 'acked', 'group'];
const stores = Object.fromEntries(policies.map((p) => [p, new Store(join(root, `${p}.db`))])) as Record<Policy, Store>;
const perTask: Record<Policy, number[]> = { full: [], normal: [], acked: [], group: [] };
const syncsPerTask: Record<Policy, number> = { full: 0, normal: 0, acked: 0, group: 0 };
try {
  for (const p of policies) oneTask(stores[p], p); // warm-up
  await Promise.all(pendingSyncs.splice(0));
  for (let r = 0; r < ROUNDS; r++) {
    for (const p of r % 2 ? [...policies].reverse() : policies) {
      for (let t = 0; t < TASKS; t++) {
        const t0 = performance.now();
        syncsPerTask[p] = oneTask(stores[p], p);
        perTask[p].push(performance.now() - t0);
      }
      await Promise.all(pendingSyncs.splice(0));
    }
  }
} finally {
  for (const s of Object.values(stores)) s.close();
  rmSync(root, { recursive: true, force: true });
}
console.log(`store writes of one short task, ${ROUNDS} interleaved rounds of ${TASKS} tasks per policy`);
console.log('policy   syncs/task on this thread    min  median    p90  (ms per task)');
for (const p of policies) {
  const s = stats(perTask[p]);
  console.log(
    `${p.padEnd(8)} ${String(syncsPerTask[p]).padStart(25)} ${s.min.toFixed(2).padStart(6)} ${s.median.toFixed(2).padStart(7)} ${s.p90.toFixed(2).padStart(6)}`,
  );
}
