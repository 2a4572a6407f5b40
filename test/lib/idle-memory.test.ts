// The hub's idle memory release: a last-resort collection returns the young generation's pages, which an ordinary
// collection leaves committed (that is what kept the idle hub 12-15 MiB above what it holds); the daemon keeping its
// young generation at its starting size and its collections off V8's helper threads; and when the watcher releases.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mock, type TestContext, test } from 'node:test';
import { releaseIdleMemory, watchIdleMemory, youngGenerationBytes } from '../../src/lib/idle-memory.ts';

const IDLE_MEMORY = new URL('../../src/lib/idle-memory.ts', import.meta.url).href;

/**
 * Runs an ES module script in a Node process of its own (V8 flags are process-wide) and returns what it wrote to
 * stdout; the script imports idle-memory.ts from IDLE_MEMORY.
 */
function inChild(script: string): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

/** Intervals and timeouts on node:test's clock for this test. */
function mockTimers(t: TestContext): void {
  mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  t.after(() => mock.timers.reset());
}

test('releaseIdleMemory hands back the young generation a burst of short-lived objects grew', () => {
  // A burst like request handling: many short-lived objects, a few survivors, until the young generation has grown.
  const keep: unknown[] = [];
  for (let i = 0; i < 2_000_000 && youngGenerationBytes() < 8 * 1024 * 1024; i++) {
    const o = { i, text: `event ${i}`, list: [i, i + 1] };
    if (i % 1000 === 0) keep.push(o);
  }
  const grown = youngGenerationBytes();
  assert.ok(grown >= 8 * 1024 * 1024, `the burst grew the young generation (${grown} bytes)`);
  releaseIdleMemory();
  const after = youngGenerationBytes();
  assert.ok(after <= grown / 4, `young generation ${grown} → ${after} bytes`);
  assert.ok(keep.length > 0);
});

test('tuneDaemonHeap stops a burst from growing the young generation (in a process of its own)', () => {
  // A V8 flag is process-wide, so each case runs in a child: the same burst, with and without the call.
  const burst = (keepSmall: boolean) => {
    const script = `
      import { tuneDaemonHeap, youngGenerationBytes } from ${JSON.stringify(IDLE_MEMORY)};
      if (${keepSmall}) tuneDaemonHeap();
      const keep = [];
      let peak = 0;
      for (let i = 0; i < 3_000_000; i++) {
        const o = { i, text: 'event ' + i, list: [i, i + 1] };
        if (i % 1000 === 0) keep.push(o);
        if (i % 10_000 === 0) peak = Math.max(peak, youngGenerationBytes());
      }
      process.stdout.write(String(peak));`;
    return Number(inChild(script));
  };
  const grown = burst(false);
  const kept = burst(true);
  // V8's default lets such a burst take the young generation to 16 MiB semispaces (32 MiB); kept, it peaks at a few.
  assert.ok(grown >= 16 * 1024 * 1024, `without it the burst grows the young generation (${grown} bytes)`);
  assert.ok(kept <= 8 * 1024 * 1024, `with it the young generation stays small (${kept} bytes)`);
});

test("tuneDaemonHeap keeps collections off V8's helper threads (in a process of its own)", () => {
  // Old space filled and emptied over and over, so full collections run; the CPU of the process's other threads is
  // what V8's helpers spent (marking, sweeping, and compiling the loop). process.threadCpuUsage() is the main thread's.
  const churn = (tuned: boolean) => {
    const script = `
      import { tuneDaemonHeap } from ${JSON.stringify(IDLE_MEMORY)};
      if (${tuned}) tuneDaemonHeap();
      const all = process.cpuUsage();
      const main = process.threadCpuUsage();
      const kept = [];
      for (let round = 0; round < 40; round++) {
        const batch = [];
        for (let i = 0; i < 100_000; i++) batch.push({ i, text: 'event ' + i, list: [i] });
        kept.push(batch);
        if (kept.length > 5) kept.shift();
      }
      const a = process.cpuUsage(all);
      const m = process.threadCpuUsage(main);
      process.stdout.write(JSON.stringify({ main: m.user + m.system, others: a.user + a.system - m.user - m.system }));`;
    const { main, others } = JSON.parse(inChild(script)) as { main: number; others: number };
    return others / main;
  };
  const plain = churn(false);
  const tuned = churn(true);
  // Efficiency mode is what takes the helpers out: --single-threaded-gc alone, set after start-up, is not fully applied
  // by V8 (bench/README.md, "Collections off V8's helper threads").
  assert.ok(tuned <= 0.05, `tuned: helper threads used ${tuned.toFixed(2)}× the main thread's CPU`);
  assert.ok(plain > tuned, `untuned, the helpers did more (${plain.toFixed(2)}× against ${tuned.toFixed(2)}×)`);
});

test('watchIdleMemory releases after a quiet half second only once the tenth of a second before it was quiet too', (t) => {
  mockTimers(t);
  // Quiet: under 2% of a core, so under 10 ms of CPU in a half second and under 2 ms in a tenth.
  let cpu = 0;
  let releases = 0;
  const stop = watchIdleMemory({
    busy: () => false,
    cpuMicros: () => cpu,
    worthRelease: () => true,
    release: () => {
      releases++;
      cpu += 30_000; // the collection's own CPU
    },
  });
  t.after(stop);

  cpu += 9_000;
  mock.timers.tick(500);
  assert.equal(releases, 0, 'a quiet half second does not release at once');
  // A burst starts in the tenth of a second after it: 2 ms of CPU.
  cpu += 2_000;
  mock.timers.tick(100);
  assert.equal(releases, 0, 'a burst that began after the quiet half second holds the release back');

  cpu += 20_000; // the burst's half second: busy
  mock.timers.tick(400);
  assert.equal(releases, 0, 'no release while busy');
  mock.timers.tick(500);
  cpu += 1_000;
  mock.timers.tick(100);
  assert.equal(releases, 1, 'a quiet half second and a quiet tenth after it release once');
  // The release's own CPU does not make the next half second busy.
  mock.timers.tick(500);
  mock.timers.tick(100);
  assert.equal(releases, 2);
});

test('watchIdleMemory leaves the heap alone while nothing is worth a release, however quiet', (t) => {
  mockTimers(t);
  let asked = 0;
  let releases = 0;
  const stop = watchIdleMemory({
    busy: () => false,
    cpuMicros: () => 0,
    worthRelease: () => {
      asked++;
      return false;
    },
    release: () => releases++,
  });
  t.after(stop);
  mock.timers.tick(5_000);
  assert.equal(asked, 10, 'looked once per half second');
  assert.equal(releases, 0);
});

test('watchIdleMemory holds the release while work is in flight, however quiet, and releases once it is done', (t) => {
  mockTimers(t);
  let busy = true;
  let releases = 0;
  const stop = watchIdleMemory({
    busy: () => busy,
    cpuMicros: () => 0,
    worthRelease: () => true,
    release: () => releases++,
  });
  t.after(stop);
  // Rounds in flight whose agents think for seconds: the daemon is quiet all along.
  mock.timers.tick(5_000);
  assert.equal(releases, 0, 'no release while a round is in flight');
  // A round admitted in the tenth of a second between the quiet half second and the release holds it back too.
  busy = false;
  mock.timers.tick(500);
  busy = true;
  mock.timers.tick(100);
  assert.equal(releases, 0, 'work that began before the confirmation holds the release back');
  busy = false;
  mock.timers.tick(500);
  mock.timers.tick(100);
  assert.equal(releases, 1, 'idle and quiet: released');
});
