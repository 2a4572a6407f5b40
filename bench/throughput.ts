// 16 short tasks in flight on a git repository: tasks per second through the hub vs the direct ACP client running the
// same 16 at once, and the CPU each spends per task — the hub daemon's own CPU time (its process only, not the agents
// it starts) vs this process's CPU time while it drives the 16 agents directly.
import { join } from 'node:path';
import {
  delegate,
  directAcp,
  expectText,
  makeGitRepo,
  SCRIPTED_AGENT_COMMAND,
  SHORT_ANSWER,
  SHORT_PROMPT,
  scriptedHub,
} from './common.ts';
import {
  atLeast,
  atMost,
  type BenchOptions,
  type Cleanup,
  cpuMs,
  interleave,
  ratioOfMedians,
  type Section,
  series,
  stats,
} from './harness.ts';

const IN_FLIGHT = 16;

export async function throughput(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const git = makeGitRepo(join(dir, 'git'));
  const { hub, client } = await scriptedHub(cleanup, dir, [git]);
  const hubPid = hub.group.child.pid!;
  const hubCpu: number[] = [];
  const directCpu: number[] = [];
  const batch = async (one: () => Promise<void>, cpuOf: () => number, cpuSamples: number[]) => {
    const cpu0 = cpuOf();
    const start = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, one));
    const seconds = (performance.now() - start) / 1000;
    cpuSamples.push((cpuOf() - cpu0) / IN_FLIGHT);
    return IN_FLIGHT / seconds;
  };
  const ownCpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const notes = [
    'CPU: /proc/<hub pid>/stat utime+stime of the daemon process alone (its agents excluded) vs process.cpuUsage() of this bench process while it drives the same agents; 10 ms clock ticks.',
  ];
  const s = await interleave(
    opts.runs,
    {
      hub: () =>
        batch(
          async () => expectText((await delegate(client, SHORT_PROMPT, git)).text, SHORT_ANSWER),
          () => cpuMs(hubPid),
          hubCpu,
        ),
      direct: () =>
        batch(
          async () => expectText(await directAcp(SCRIPTED_AGENT_COMMAND, git, SHORT_PROMPT), SHORT_ANSWER),
          ownCpu,
          directCpu,
        ),
    },
    { ms: 80_000, notes },
  );
  await hub.stop();
  // The first sample of each is the warm-up.
  const hubCpuRuns = hubCpu.slice(1);
  const directCpuRuns = directCpu.slice(1);
  return {
    name: 'throughput',
    title: `${IN_FLIGHT} short tasks in flight on a git repo: hub vs direct ACP client`,
    series: [
      series('hub throughput', 'tasks/s', s.hub!),
      series('direct throughput', 'tasks/s', s.direct!),
      series('hub daemon CPU per task', 'ms', hubCpuRuns),
      series('direct client CPU per task', 'ms', directCpuRuns),
    ],
    checks: [
      atLeast('hub / direct throughput (median)', ratioOfMedians(s.hub!, s.direct!), 0.8),
      atMost('hub CPU / direct CPU per task (median)', stats(hubCpuRuns).median / stats(directCpuRuns).median, 2),
    ],
    notes,
  };
}
