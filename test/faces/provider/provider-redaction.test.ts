// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// SE-1 on the provider faces' own output paths, with a FAKE in-process agent (no process is spawned): a provider job's
// commentary, status phases, error and verdict, and the progress notifications of a blocking call, all carry agent text
// to the caller and all come out redacted. The real agents reach these paths in test/e2e/provider/.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Agent, AgentEvent, AgentSession } from '../../../src/agents/agent.ts';
import { JobTable } from '../../../src/core/jobs.ts';
import { progressSender } from '../../../src/faces/provider/stdio-server.ts';
import { REDACTED } from '../../../src/lib/redact.ts';

const KEY = 'sk-ant-api03-Pl4nt3dK3y0123456789abcdefghijkLMNOP';

function fakeAgent(events: AgentEvent[]): Agent {
  return {
    name: 'fake',
    kind: 'fake',
    probe: async () => ({ name: 'fake', kind: 'fake', available: true }),
    openSession: async (): Promise<AgentSession> => ({
      id: undefined,
      async *turn() {
        yield* events;
      },
      close: async () => {},
    }),
  };
}

test('a provider job redacts commentary, phases, error and verdict', async () => {
  const table = new JobTable();
  const run = async (events: AgentEvent[]) => {
    const { jobId, cursor } = table.start({
      agent: fakeAgent(events),
      prompt: 'p',
      cwd: '/tmp',
      sandbox: 'read-only',
      label: 'Fake',
    });
    let view = await table.status(jobId, cursor, 5_000);
    const seen = [JSON.stringify(view)];
    while (!view.done) {
      view = await table.status(jobId, view.cursor, 5_000);
      seen.push(JSON.stringify(view));
    }
    seen.push(JSON.stringify(table.commentary(jobId)));
    if (view.state === 'completed') seen.push(JSON.stringify(table.result(jobId)));
    return { view, seen: seen.join('\n'), commentary: table.commentary(jobId).text };
  };
  const ok = await run([
    { kind: 'status', text: `using ${KEY}` },
    { kind: 'commentary', text: `reading .env: ${KEY}\n` },
    { kind: 'message', text: `the key is ${KEY}` },
    { kind: 'end', outcome: 'succeeded' },
  ]);
  assert.equal(ok.view.state, 'completed');
  assert.equal(ok.commentary, `reading .env: ${REDACTED}\n`);
  assert.equal(ok.seen.includes(KEY), false, ok.seen);
  const failed = await run([
    { kind: 'error', message: `401 for ${KEY}` },
    { kind: 'end', outcome: 'failed', error: `upstream refused ${KEY}` },
  ]);
  assert.equal(failed.view.state, 'failed');
  assert.equal(failed.seen.includes(KEY), false, failed.seen);
  assert.ok(failed.seen.includes(REDACTED));
});

test('progress notifications are redacted', () => {
  const sent: string[] = [];
  const progress = progressSender('tok', (p) => sent.push(p.message));
  progress.send(`step: export OPENAI_API_KEY=${KEY}`);
  progress.stop();
  assert.deepEqual(sent, [`step: export OPENAI_API_KEY=${REDACTED}`]);
});
