// The hub's idle memory release: a last-resort collection returns the young generation's pages, which an ordinary
// collection leaves committed (that is what kept the idle hub 12-15 MiB above what it holds); and the daemon keeping its
// young generation at its starting size.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { QuietWindows, releaseIdleMemory, youngGenerationBytes } from '../../src/lib/idle-memory.ts';

const IDLE_MEMORY = new URL('../../src/lib/idle-memory.ts', import.meta.url).href;

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
    return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  };
  const grown = burst(false);
  const kept = burst(true);
  // V8's default lets such a burst take the young generation to 16 MiB semispaces (32 MiB); kept, it peaks at a few.
  assert.ok(grown >= 16 * 1024 * 1024, `without it the burst grows the young generation (${grown} bytes)`);
  assert.ok(kept <= 8 * 1024 * 1024, `with it the young generation stays small (${kept} bytes)`);
});

test('QuietWindows: quiet only after a whole run of quiet windows; one busy window, however late, starts it again', () => {
  // Ten windows of 100 ms, busy from 2% of a core: 2 ms of CPU (2,000 µs) in a window.
  const w = new QuietWindows(10, 100, 0.02);
  for (let i = 0; i < 9; i++) w.add(300);
  assert.equal(w.quiet(), false, 'nine quiet windows are not yet a quiet second');
  w.add(1_999);
  assert.equal(w.quiet(), true, 'the tenth, just under the bar, completes it');
  // A burst that began in the newest window: the run is broken at once, whatever came before.
  w.add(2_000);
  assert.equal(w.quiet(), false, 'a window at the bar counts as busy');
  for (let i = 0; i < 9; i++) w.add(0);
  assert.equal(w.quiet(), false, 'the count starts again after a busy window');
  w.add(0);
  assert.equal(w.quiet(), true);
  w.forget();
  assert.equal(w.quiet(), false, 'forget() starts the count again');
});
