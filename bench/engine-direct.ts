// Where the hub's CPU per task goes before MCP: the engine (store, git snapshots, locks, the ACP adapter) driven in
// this process, without HTTP or the MCP SDK, against the direct ACP client driving the same scripted agent from this
// same process. 16 tasks in flight, one per git repository, the two sides alternated (the order flips each round,
// after two warm-up rounds); CPU per task from process.cpuUsage(), so both sides pay for the same process size when
// they fork their agents. The throughput measure's daemon figure minus this engine figure is, roughly, what the
// MCP calls cost.
//
//   node bench/engine-direct.ts [--rounds N] [--only engine|direct]
//
// --only runs one side, for a profiler: `perf record -g node --perf-basic-prof bench/engine-direct.ts --only engine`
// next to the same with `--only direct` gives a differential profile (bench/README.md, "Where the rest goes, measured per statement and without MCP").
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcpAgent } from '../src/agents/acp/agent.ts';
import { acpConfigSchema } from '../src/agents/acp/config.ts';
import { silentLogger } from '../src/lib/log.ts';
import { engineFor, settle } from '../test/support/engine.ts';
import { directAcp, expectText, makeGitRepo, SCRIPTED_AGENT_COMMAND, SHORT_ANSWER, SHORT_PROMPT } from './common.ts';
import { ownCpu, stats } from './harness.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const ROUNDS = Number(arg('--rounds') ?? '16');
const only = arg('--only');
if (only !== undefined && only !== 'engine' && only !== 'direct') throw new Error('--only takes engine or direct');
const IN_FLIGHT = 16;

const dir = mkdtempSync(join(tmpdir(), 'baton-engine-direct-'));
const repos = Array.from({ length: IN_FLIGHT }, (_, i) => makeGitRepo(join(dir, `git-${i}`)));
const stateDir = join(dir, 'state');
mkdirSync(stateDir, { mode: 0o700 });
const agent = new AcpAgent('bench', acpConfigSchema.parse({ command: SCRIPTED_AGENT_COMMAND }), {
  logger: silentLogger,
});
/** What the test helper would run after a test: closing the engine and its store. */
const closers: (() => unknown)[] = [];
const { engine } = engineFor(
  { after: (fn) => void closers.push(fn as () => unknown) },
  {
    agents: { bench: agent },
    roots: repos,
    stateDir,
  },
);

let keys = 0;
const sides = {
  engine: async (cwd: string) => {
    const task = await engine.run('bench', { prompt: SHORT_PROMPT, cwd, idempotencyKey: `k${keys++}` });
    const end = await settle(engine, 'bench', task.taskId);
    if (end.state !== 'succeeded') throw new Error(`task ${task.taskId} ended ${end.state}`);
  },
  direct: async (cwd: string) => expectText(await directAcp(SCRIPTED_AGENT_COMMAND, cwd, SHORT_PROMPT), SHORT_ANSWER),
};
const names = only ? [only as keyof typeof sides] : (Object.keys(sides) as (keyof typeof sides)[]);
const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
try {
  for (let r = -2; r < ROUNDS; r++) {
    for (const name of r % 2 ? names : [...names].reverse()) {
      const used = ownCpu();
      await Promise.all(repos.map(sides[name]));
      if (r >= 0) samples[name]!.push(used() / IN_FLIGHT);
    }
  }
} finally {
  // The snapshot runners are unreferenced (they never keep a hub alive): this timer keeps the loop up while they end.
  const keepAlive = setInterval(() => {}, 1_000);
  for (const close of closers) await close();
  clearInterval(keepAlive);
  rmSync(dir, { recursive: true, force: true });
}
console.log(`CPU per task, ${IN_FLIGHT} in flight, ${ROUNDS} rounds:       min  median    p90  (ms)`);
for (const [name, xs] of Object.entries(samples)) {
  const s = stats(xs);
  console.log(
    `  ${name.padEnd(44)} ${s.min.toFixed(2).padStart(5)} ${s.median.toFixed(2).padStart(7)} ${s.p90.toFixed(2).padStart(6)}`,
  );
}
if (samples.engine && samples.direct)
  console.log(
    `  engine / direct (medians): ${(stats(samples.engine).median / stats(samples.direct).median).toFixed(2)}x`,
  );
