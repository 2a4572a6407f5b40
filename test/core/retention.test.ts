// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of the one retention rule shared by the job table and attach dispatches, on an injected clock: the
// working limit, the kept limit with eviction of the record that finished first, and expiry after the retention.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetentionTable } from '../../src/core/retention.ts';

interface Rec {
  id: string;
  finishedAt?: number;
}

function table(limits: { maxActive?: number; maxKept: number; retentionMs: number }) {
  const clock = { now: 1_000 };
  const t = new RetentionTable<Rec>({ ...limits, finishedAt: (r) => r.finishedAt, clock: () => clock.now });
  const add = (id: string) => {
    const refused = t.admit();
    if (refused) return refused;
    const r: Rec = { id };
    t.add(id, r);
    return r;
  };
  return { t, clock, add };
}

const ids = (t: RetentionTable<Rec>) => t.values().map((r) => r.id);

test('no more than maxActive records work at once; a finished one frees a place', () => {
  const { t, clock, add } = table({ maxActive: 2, maxKept: 5, retentionMs: 60_000 });
  const a = add('a') as Rec;
  add('b');
  assert.equal(add('c'), 'too_many_active');
  assert.deepEqual(ids(t), ['a', 'b'], 'a refused admission adds nothing');
  a.finishedAt = clock.now;
  assert.equal(t.activeCount, 1);
  assert.equal((add('c') as Rec).id, 'c');
});

test('at maxKept the record that finished first is evicted, never a working one', () => {
  const { t, clock, add } = table({ maxKept: 3, retentionMs: 60_000 });
  const a = add('a') as Rec;
  const b = add('b') as Rec;
  add('c');
  b.finishedAt = clock.now;
  clock.now += 10;
  a.finishedAt = clock.now;
  add('d');
  assert.deepEqual(ids(t), ['a', 'c', 'd'], 'b finished before a, so b made room');
  add('e');
  assert.deepEqual(ids(t), ['c', 'd', 'e']);
  assert.equal(add('f'), 'too_many_active', 'all three are working: nothing is evicted, the new one is refused');
  assert.equal(t.size, 3);
});

test('without a separate working limit a full table of working records refuses as too many active', () => {
  const { add } = table({ maxKept: 2, retentionMs: 60_000 });
  add('a');
  add('b');
  assert.equal(add('c'), 'too_many_active');
});

test('a table whose working limit exceeds its size refuses as full when nothing finished', () => {
  const { add } = table({ maxActive: 5, maxKept: 2, retentionMs: 60_000 });
  add('a');
  add('b');
  assert.equal(add('c'), 'full');
});

test('a finished record stays readable for retentionMs, then expires; working records never expire', () => {
  const { t, clock, add } = table({ maxKept: 10, retentionMs: 60_000 });
  const a = add('a') as Rec;
  add('b');
  a.finishedAt = clock.now;
  clock.now += 60_000 - 1;
  assert.equal(t.get('a')?.id, 'a');
  clock.now += 1;
  assert.equal(t.get('a'), undefined);
  clock.now += 10 * 60_000;
  assert.equal(t.get('b')?.id, 'b');
  assert.equal(t.size, 1);
});

test('clear forgets every record and returns their ids', () => {
  const { t, add } = table({ maxKept: 10, retentionMs: 60_000 });
  add('a');
  add('b');
  assert.deepEqual(t.clear(), ['a', 'b']);
  assert.equal(t.size, 0);
});
