// The hub's idle memory release: a last-resort collection returns the young generation's pages, which an ordinary
// collection leaves committed (that is what kept the idle hub 12-15 MiB above what it holds).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { releaseIdleMemory, youngGenerationBytes } from '../../src/lib/idle-memory.ts';

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
