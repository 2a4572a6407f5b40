// The long-poll waiters (rule: event-cursor): a lifecycle wake answers at once, other news after a linger, and only
// waiters present when the news came linger for it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Waiters } from '../../src/core/waiters.ts';

const LONG = 10 * 60_000;

test('a lifecycle wake answers a waiter that is lingering on news at once', async () => {
  const waiters = new Waiters(LONG);
  const waiting = waiters.wait('t', LONG);
  waiters.nudge('t');
  waiters.wake('t');
  // Resolving at all proves it: the linger and the bound are ten minutes.
  assert.equal(await waiting, true);
});

test('news wakes the waiters present when it came; a waiter that starts later is not woken by it', async () => {
  const waiters = new Waiters(1);
  const present = waiters.wait('t', LONG);
  waiters.nudge('t');
  const later = waiters.wait('t', 200);
  assert.equal(await present, true, 'woken by the news after its linger');
  assert.equal(await later, false, 'not woken by news from before it started: it times out');
});

test('news for one key leaves waiters on other keys alone; a fan-in wait wakes on any key', async () => {
  const waiters = new Waiters(1);
  const other = waiters.wait('b', 200);
  const any = waiters.waitAny(['a', 'b'], LONG);
  waiters.nudge('a');
  assert.equal(await any, true);
  assert.equal(await other, false);
});
