// Output bounds: an agent that prints one huge line, or whose answer is huge, fails at once with a clear
// `output too large` error (not an idle deadline later), and the hub goes on serving.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, connectCaller, followToEnd, startHub } from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

test('a huge line and a huge result each fail the task with "output too large"', async (t) => {
  const dir = tempDir(t, 'baton-bounds-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
    // Far beyond the test's own timeout: a round that waited for the idle deadline could not pass.
    limits: { idleTimeoutMs: 3_600_000 },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const cases = {
    line: [{ bigFrame: 5 * 1024 * 1024 }, { reply: 'never read' }],
    result: [{ bigReply: 11 * 1024 * 1024 }],
  };
  for (const [name, steps] of Object.entries(cases)) {
    const run = await call<{ taskId: string }>(alice, 'agent_run', {
      agent: 'scripted',
      prompt: acpScript(steps),
      cwd: work,
      idempotencyKey: name,
    });
    const end = await followToEnd(alice, run.taskId);
    assert.equal(end.state, 'failed', name);
    assert.match(String(end.last.error), /output too large/, name);
    assert.doesNotMatch(String(end.last.error), /idle/, name);
  }
  const ok = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: 'still here',
    cwd: work,
    idempotencyKey: 'after',
  });
  assert.equal((await followToEnd(alice, ok.taskId)).state, 'succeeded');
});
