// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of runRound, the one round runner, with FAKE in-process turns (async generators standing in for an agent's
// turn): the answer and its cap, exactly one end, a turn without one, a throwing turn, close always running, and the
// first stop winning over what the agent reports afterwards. The real agents run through it in test/core, test/e2e/hub
// and test/e2e/provider.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent } from '../../src/agents/agent.ts';
import { DeadlineExceededError } from '../../src/core/deadlines.ts';
import { runRound } from '../../src/core/round.ts';
import { Gate } from '../mock-models/server.ts';

/** A turn that yields `events`, after `gate` (if any) opens or the round's signal aborts. */
function turn(events: AgentEvent[], gate?: Gate) {
  return (signal: AbortSignal) =>
    (async function* () {
      if (gate) {
        await Promise.race([
          gate.promise,
          new Promise((r) => (signal.aborted ? r(undefined) : signal.addEventListener('abort', r))),
        ]);
      }
      if (signal.aborted) {
        yield { kind: 'end', outcome: 'cancelled', acknowledged: true } as AgentEvent;
        return;
      }
      yield* events;
    })();
}

test('messages form the answer; other events go to onEvent in order; the first end ends the turn', async () => {
  const seen: string[] = [];
  let closed = 0;
  const r = await runRound({
    start: turn([
      { kind: 'status', text: 'working' },
      { kind: 'message', text: 'hel' },
      { kind: 'commentary', text: 'thinking' },
      { kind: 'message', text: 'lo' },
      { kind: 'end', outcome: 'succeeded' },
      { kind: 'status', text: 'after the end' },
      { kind: 'end', outcome: 'failed', error: 'a second end' },
    ]),
    onEvent: (ev) => seen.push(ev.kind),
    close: async () => {
      closed++;
    },
  });
  assert.equal(r.state, 'succeeded');
  assert.equal(r.text, 'hello');
  assert.deepEqual(seen, ['status', 'commentary'], 'nothing after the first end is read');
  assert.equal(closed, 1);
});

test('the agent decides without a stop: failed with its error, cancelled', async () => {
  const failed = await runRound({ start: turn([{ kind: 'end', outcome: 'failed', error: 'boom' }]) });
  assert.deepEqual([failed.state, failed.error], ['failed', 'boom']);
  const cancelled = await runRound({ start: turn([{ kind: 'end', outcome: 'cancelled' }]) });
  assert.equal(cancelled.state, 'cancelled');
});

test('a turn without an end, or one that throws, fails the round; close still runs', async () => {
  const silent = await runRound({ start: turn([{ kind: 'message', text: 'partial' }]), label: 'Fake' });
  assert.deepEqual(
    [silent.state, silent.error, silent.text],
    ['failed', 'Fake ended the turn without a result', 'partial'],
  );
  let closed = false;
  const thrown = await runRound({
    start: () => {
      throw new Error('could not start');
    },
    close: async () => {
      closed = true;
    },
  });
  assert.deepEqual([thrown.state, thrown.error], ['failed', 'could not start']);
  assert.ok(thrown.thrown instanceof Error);
  assert.equal(closed, true);
});

test('an answer over the cap is dropped whole and stops the round, whatever the agent reports then', async () => {
  let stopped: unknown;
  const r = await runRound({
    maxResultBytes: 10,
    start: (signal) =>
      (async function* () {
        yield { kind: 'message', text: '12345' } as AgentEvent;
        yield { kind: 'message', text: '678901' } as AgentEvent;
        stopped = signal.aborted;
        yield { kind: 'message', text: 'more' } as AgentEvent;
        yield { kind: 'end', outcome: 'succeeded' } as AgentEvent;
      })(),
  });
  assert.equal(stopped, true, 'the turn was asked to stop');
  assert.equal(r.state, 'failed');
  assert.equal(r.stop, 'too_large');
  assert.equal(r.text, '');
  assert.equal(r.error, 'output too large: the final result exceeded 10 bytes and was discarded');
});

test("a caller's cancel is cancelled even when the agent then reports success; the agent's end is kept", async () => {
  const cancel = new AbortController();
  const gate = new Gate();
  const running = runRound({ signal: cancel.signal, start: turn([{ kind: 'end', outcome: 'succeeded' }], gate) });
  cancel.abort();
  const r = await running;
  assert.equal(r.state, 'cancelled');
  assert.equal(r.stop, 'cancel');
  assert.deepEqual(r.end, { kind: 'end', outcome: 'cancelled', acknowledged: true });
});

test('an expired deadline fails the round with its reason, is told at once, and a later cancel does not change it', async () => {
  const cancel = new AbortController();
  const told: DeadlineExceededError[] = [];
  const r = await runRound({
    hardMs: 20,
    signal: cancel.signal,
    onDeadline: (err) => {
      told.push(err);
      cancel.abort();
    },
    start: turn([{ kind: 'end', outcome: 'succeeded' }], new Gate()),
  });
  assert.equal(r.state, 'failed');
  assert.equal(r.stop, 'deadline');
  assert.match(r.error ?? '', /hard deadline/);
  assert.equal(told.length, 1);
  assert.ok(r.deadline instanceof DeadlineExceededError);
});

test('abandoned() stops reading a turn the caller already settled', async () => {
  let settled = false;
  const seen: string[] = [];
  const r = await runRound({
    abandoned: () => settled,
    onEvent: (ev) => {
      seen.push(ev.kind);
      settled = true;
    },
    start: turn([
      { kind: 'status', text: 'one' },
      { kind: 'status', text: 'two' },
      { kind: 'end', outcome: 'succeeded' },
    ]),
  });
  assert.deepEqual(seen, ['status']);
  assert.equal(r.state, 'failed', 'no end was read');
});

test('live text: message text until a preview arrives, then only previews; the answer is the messages', async () => {
  const live: string[] = [];
  const plain = await runRound({
    start: turn([
      { kind: 'message', text: 'a' },
      { kind: 'message', text: 'b' },
      { kind: 'end', outcome: 'succeeded' },
    ]),
    onMessage: (text) => live.push(text),
  });
  assert.equal(plain.text, 'ab');
  assert.deepEqual(live, ['a', 'b'], 'an agent that streams its answer as messages shows them live');

  live.length = 0;
  const previewed = await runRound({
    start: turn([
      { kind: 'preview', text: 'dra' },
      { kind: 'preview', text: 'ft' },
      { kind: 'message', text: 'final' },
      { kind: 'end', outcome: 'succeeded' },
    ]),
    onMessage: (text) => live.push(text),
    maxResultBytes: 4,
  });
  assert.deepEqual(live, ['dra'], 'previews are live text, bounded by the cap; the final message is not repeated');
  assert.equal(previewed.state, 'failed', 'the answer itself is still capped');
});
