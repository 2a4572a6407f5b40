// AG-8: signalling a process group. A group that is gone answers false (the round's end asks that of every agent it
// stopped), and asking leaves the process's Error.stackTraceLimit as it found it: the dropped ESRCH error is made
// without a stack trace, and a caller's own limit must survive the call whatever it was.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isGroupAlive, signalGroup, spawnGroup } from '../../src/lib/process-group.ts';

test('signalGroup answers false for a gone group and leaves Error.stackTraceLimit as it was', async (t) => {
  const group = spawnGroup(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  t.after(() => group.stop(0));
  assert.equal(isGroupAlive(group.pgid), true);
  assert.equal(signalGroup(group.pgid, 0), true);

  await group.stop(1_000);
  const before = Error.stackTraceLimit;
  for (const limit of [before, 3, Number.POSITIVE_INFINITY]) {
    Error.stackTraceLimit = limit;
    assert.equal(signalGroup(group.pgid, 'SIGTERM'), false);
    assert.equal(isGroupAlive(group.pgid), false);
    assert.equal(Error.stackTraceLimit, limit);
  }
  Error.stackTraceLimit = before;
  // Errors made after the call still carry their stacks.
  assert.match(new Error('after').stack ?? '', /process-group\.test\.ts/);
});

test('signalGroup never signals pid 0, 1 or a negative id', () => {
  for (const pgid of [-5, 0, 1]) assert.equal(signalGroup(pgid, 0), false);
});
