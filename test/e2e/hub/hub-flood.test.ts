// Floods: an agent emitting 10,000 events is written in batches off the request path, so another caller's
// requests keep being answered meanwhile, and every one of the flood's events is stored.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, connectCaller, startHub } from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const FLOOD = 10_000;

interface StatusPage {
  state: string;
  events: { seq: number; kind: string; text?: string }[];
  nextCursor: number;
  hasMore: boolean;
}

test('an agent flooding 10,000 events does not starve another caller, and every event is stored', async (t) => {
  const dir = tempDir(t, 'baton-flood-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  const bobTask = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: 'hello',
    cwd: work,
    idempotencyKey: 'bob-1',
  });
  const flood = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ flood: FLOOD }, { reply: 'flooded' }]),
    cwd: work,
    idempotencyKey: 'flood-1',
  });

  // Bob keeps asking while the flood runs; each of his requests must be answered.
  let answered = 0;
  let floodState = 'queued';
  let floodSeen = 0;
  while (floodState !== 'succeeded' && floodState !== 'failed') {
    const mine = await call<{ taskId: string }>(bob, 'agent_status', { taskId: bobTask.taskId, limit: 1 });
    assert.equal(mine.taskId, bobTask.taskId);
    const list = await call<{ tasks: { taskId: string }[] }>(bob, 'agent_list', {});
    assert.deepEqual(
      list.tasks.map((x) => x.taskId),
      [bobTask.taskId],
    );
    answered += 2;
    const f = await call<StatusPage>(alice, 'agent_status', { taskId: flood.taskId, limit: 1 });
    floodState = f.state;
    floodSeen = Math.max(floodSeen, f.nextCursor);
  }
  assert.equal(floodState, 'succeeded');
  assert.ok(answered >= 2);

  // Every event of the flood is there, in order.
  const texts: string[] = [];
  let after = 0;
  for (;;) {
    const page = await call<StatusPage>(alice, 'agent_status', { taskId: flood.taskId, after, limit: 500 });
    for (const e of page.events) if (e.kind === 'status') texts.push(String(e.text));
    after = page.nextCursor;
    if (!page.hasMore) break;
  }
  assert.equal(texts.length, FLOOD);
  assert.equal(texts[0], 'flood 1');
  assert.equal(texts[FLOOD - 1], `flood ${FLOOD}`);
  const result = await call<{ text: string }>(alice, 'agent_result', { taskId: flood.taskId });
  assert.equal(result.text, 'flooded');
});
