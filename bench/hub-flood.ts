// `npm run bench:flood`: how responsive the hub stays while an agent floods it with events. A real hub
// daemon runs the scripted ACP agent emitting 10,000 plan updates; meanwhile /healthz is polled back to back and its
// latencies are reported (p50, p99, max). The target is p99 under 50 ms on a quiet machine; this prints, it does not
// assert.
//
//   node bench/hub-flood.ts [--events N]
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, connectCaller, startHub } from '../test/support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../test/support/scripted-agent.ts';
import { hubEnv } from './common.ts';

const eventsArg = process.argv.indexOf('--events');
const EVENTS = eventsArg > 0 ? Number(process.argv[eventsArg + 1]) : 10_000;

const cleanups: Array<() => unknown> = [];
const t = { after: (fn: () => unknown) => cleanups.push(fn) };
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-flood-'));
const work = join(dir, 'work');
mkdirSync(work);

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

try {
  const hub = await startHub(
    t,
    {
      dir,
      roots: [work],
      agents: { flood: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
    },
    hubEnv(),
  );
  const client = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(client, 'agent_run', {
    prompt: JSON.stringify({ steps: [{ flood: EVENTS }, { reply: 'done' }] }),
    cwd: work,
    idempotencyKey: 'flood',
  });
  const latencies: number[] = [];
  let state = 'queued';
  let polls = 0;
  const started = performance.now();
  while (state !== 'succeeded' && state !== 'failed') {
    const t0 = performance.now();
    const res = await fetch(`${hub.url}/healthz`);
    await res.arrayBuffer();
    latencies.push(performance.now() - t0);
    if (++polls % 20 === 0)
      state = (await call<{ state: string }>(client, 'agent_status', { taskId: run.taskId, limit: 1 })).state;
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(`flood of ${EVENTS} events: task ${state} in ${seconds.toFixed(1)} s`);
  console.log(
    `/healthz during the flood: ${latencies.length} requests, p50 ${pct(latencies, 50).toFixed(1)} ms, ` +
      `p99 ${pct(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms (target p99 < 50 ms)`,
  );
} finally {
  for (const fn of cleanups.reverse()) await fn();
  rmSync(dir, { recursive: true, force: true });
}
