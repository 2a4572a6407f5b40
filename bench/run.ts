// `npm run bench`: what delegating through the hub costs compared with driving the same agent directly.
// Baseline: the ACP adapter used in-process (open session → one turn → close), the floor any delegation pays.
// Measured: the same prompt through a real hub daemon over Streamable HTTP with the official MCP SDK client
// (agent_run → agent_wait until terminal → agent_result). Both use the scripted ACP test agent, so no model is involved;
// the ratio is the hub's own overhead (HTTP, SQLite commits, scheduling, git snapshots) on this machine.
//
//   node bench/run.ts [--runs N]
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcpAgent } from '../src/agents/acp/agent.ts';
import { acpConfigSchema } from '../src/agents/acp/config.ts';
import { silentLogger } from '../src/lib/log.ts';
import { call, connectCaller, followToEnd, startHub } from '../test/support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../test/support/scripted-agent.ts';

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 15;
const PROMPT = JSON.stringify({ steps: [{ chunks: ['bench ', 'answer'] }] });

const cleanups: Array<() => unknown> = [];
const t = { after: (fn: () => unknown) => cleanups.push(fn) };
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
const work = join(dir, 'work');
mkdirSync(work);
const agentEntry = { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function direct(): Promise<number> {
  const agent = new AcpAgent('bench', acpConfigSchema.parse({ command: agentEntry.command }), { logger: silentLogger });
  const start = performance.now();
  const session = await agent.openSession({
    cwd: work,
    sandbox: 'workspace-write',
    signal: new AbortController().signal,
  });
  let text = '';
  for await (const ev of session.turn(PROMPT, { signal: new AbortController().signal })) {
    if (ev.kind === 'message') text += ev.text;
  }
  await session.close();
  if (text !== 'bench answer') throw new Error(`unexpected answer ${text}`);
  return performance.now() - start;
}

try {
  const hub = await startHub(t, { dir, roots: [work], agents: { bench: agentEntry } });
  const client = await connectCaller(t, hub, 'alice');
  const directMs: number[] = [];
  const hubMs: number[] = [];
  // One warm-up each, then interleave so machine noise hits both sides alike.
  await direct();
  for (let i = -1; i < RUNS; i++) {
    const start = performance.now();
    const run = await call<{ taskId: string }>(client, 'agent_run', {
      prompt: PROMPT,
      cwd: work,
      idempotencyKey: `b${i}`,
    });
    const end = await followToEnd(client, run.taskId);
    const result = await call<{ text: string }>(client, 'agent_result', { taskId: run.taskId });
    if (end.state !== 'succeeded' || result.text !== 'bench answer') throw new Error(`hub run failed: ${end.state}`);
    if (i >= 0) hubMs.push(performance.now() - start);
    if (i >= 0) directMs.push(await direct());
  }
  const d = median(directMs);
  const h = median(hubMs);
  console.log(`runs: ${RUNS} (medians)`);
  console.log(`direct ACP adapter, one round: ${d.toFixed(1)} ms`);
  console.log(`through the hub over MCP:      ${h.toFixed(1)} ms`);
  console.log(`ratio hub/direct: ${(h / d).toFixed(2)}x (overhead ${(h - d).toFixed(1)} ms per task)`);
} finally {
  for (const fn of cleanups.reverse()) await fn();
  rmSync(dir, { recursive: true, force: true });
}
