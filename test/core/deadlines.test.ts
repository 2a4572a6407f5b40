// The two deadlines of a round (rule: two-deadlines): activity moves the idle one and never the hard one, and a
// cleared deadline stays cleared whatever activity comes after. Timers are node:test's mock timers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deadline, type DeadlineExceededError } from '../../src/core/deadlines.ts';

test('activity moves the idle deadline, never the hard one; a cleared deadline stays cleared', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const expired: string[] = [];
  const onExpire = (err: DeadlineExceededError) => expired.push(err.kind);

  const idle = new Deadline({ idleMs: 100, onExpire });
  t.mock.timers.tick(60);
  idle.touch();
  t.mock.timers.tick(60);
  assert.deepEqual(expired, [], 'the touch at 60 ms moved the idle deadline to 160 ms');
  t.mock.timers.tick(40);
  assert.deepEqual(expired, ['idle']);

  expired.length = 0;
  const hard = new Deadline({ idleMs: 100, hardMs: 150, onExpire });
  for (let i = 0; i < 3; i++) {
    t.mock.timers.tick(50);
    hard.touch();
  }
  assert.deepEqual(expired, ['hard'], 'touches every 50 ms kept it from going idle, not past its hard bound');

  expired.length = 0;
  const cleared = new Deadline({ idleMs: 100, hardMs: 1_000, onExpire });
  cleared.clear();
  cleared.touch();
  t.mock.timers.tick(2_000);
  assert.deepEqual(expired, [], 'a touch after clear() arms nothing');
});
