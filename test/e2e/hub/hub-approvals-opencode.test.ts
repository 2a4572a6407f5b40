// Approvals for OpenCode (rule: approvals) with the real `opencode serve` on the chat-completions mock: a read outside
// the task's directory makes OpenCode ask its external_directory permission. With the `ask` policy the round parks and
// its view says what it waits for (the permission's name, never the path); allow → OpenCode reads the file and its
// contents reach the model; deny → the tool fails and the model is told it was refused.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { opencodeEnv, startChatMock } from '../../mock-models/chat-completions.ts';
import { bins } from '../../support/bins.ts';
import { call, connectCaller, followToEnd, startHub, TEST_CALLERS, waitForEvent } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

const OUTSIDE_TEXT = 'ledger-owl-73 lives outside the project';

interface Waiting {
  requestId: string;
  kind: string;
  what: string;
  options: string[];
}

test('ask with the real OpenCode: its permission request waits; allow lets the read through, deny refuses it', async (t) => {
  const dir = tempDir(t, 'baton-approvals-opencode-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const outside = join(dir, 'outside-secret-name.txt');
  writeFileSync(outside, `${OUTSIDE_TEXT}\n`);
  const mock = await startChatMock({ type: 'text', chunks: ['fallback'] });
  t.after(() => mock.close());
  const env = Object.fromEntries(
    Object.entries(opencodeEnv(join(dir, 'opencode-scratch'), mock)).filter(([k]) => k.startsWith('OPENCODE_')),
  );
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { opencode: { kind: 'opencode', binary: bins.opencode(), model: 'mock/mock-model', env } },
    callers: { alice: { token: TEST_CALLERS.alice, approvals: { opencode: 'ask' } } },
  });
  const alice = await connectCaller(t, hub, 'alice');

  const ask = async (key: string, decision: 'allow' | 'deny') => {
    mock.script.push(
      { type: 'toolCall', name: 'read', args: { filePath: outside } },
      { type: 'text', chunks: [`after the ${decision}`] },
    );
    const run = await call<{ taskId: string }>(alice, 'agent_run', {
      prompt: 'read it',
      cwd: work,
      idempotencyKey: key,
    });
    await waitForEvent(alice, run.taskId, (e) => e.kind === 'approval_requested');
    const view = await call<{ state: string; waiting?: Waiting }>(alice, 'agent_status', { taskId: run.taskId });
    assert.equal(view.state, 'running');
    assert.deepEqual(
      { ...view.waiting, requestId: undefined, expiresAt: undefined },
      {
        requestId: undefined,
        expiresAt: undefined,
        kind: 'other',
        what: 'external_directory',
        options: ['allow', 'allow_always', 'deny'],
      },
    );
    assert.equal(JSON.stringify(view).includes('outside-secret-name'), false, 'never the path');
    const calls = mock.mainCalls().length;
    await call(alice, 'agent_respond', { taskId: run.taskId, requestId: view.waiting!.requestId, decision });
    const end = await followToEnd(alice, run.taskId);
    assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
    const result = await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId });
    assert.equal(result.text, `after the ${decision}`);
    const all = await call<{ events: Record<string, unknown>[] }>(alice, 'agent_status', {
      taskId: run.taskId,
      limit: 500,
    });
    // What the model was sent after the answer: the file's text, or OpenCode's report of the refusal.
    const sent = JSON.stringify(
      mock
        .mainCalls()
        .slice(calls)
        .map((r) => r.body),
    );
    return { events: all.events, sent };
  };

  const allowed = await ask('oc-allow', 'allow');
  assert.ok(allowed.sent.includes(OUTSIDE_TEXT), 'the read went through and its text reached the model');
  assert.deepEqual(
    allowed.events.filter((e) => e.kind === 'approval_answered').map((e) => [e.decision, e.by]),
    [['allow', 'caller']],
  );
  assert.deepEqual(
    allowed.events.filter((e) => e.kind === 'permission').map((e) => [e.decision, e.what]),
    [['allowed', 'external_directory']],
  );

  const denied = await ask('oc-deny', 'deny');
  assert.equal(denied.sent.includes(OUTSIDE_TEXT), false, 'nothing was read');
  assert.match(denied.sent, /the permission was refused; continue without it/);
  assert.deepEqual(
    denied.events.filter((e) => e.kind === 'permission').map((e) => [e.decision, e.what]),
    [['denied', 'external_directory']],
  );
});
