// 16 short tasks in flight: tasks per second through the hub vs the direct ACP client, and the CPU each spends per
// task — the hub daemon's own CPU time (its process only, not the agents it starts) vs this process's CPU time while
// it drives the agents directly.
//
// The goal is measured like for like: 16 git repositories, one task in each, the same repositories on both sides. In
// ONE work tree the hub runs one writer at a time (rule: workspace-locks, SPEC TE-9) — that is its contract, not
// overhead — so the same-repo case is an informational row against a direct client that also runs one at a time, and
// the old figure (hub one at a time vs direct all 16 at once in the same dir) is printed beside it. See README.md.
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
  childrenCpuMs,
  info,
  interleave,
  ownCpu,
  processCpu,
  ratioOfMedians,
  type Section,
  series,
  stats,
} from './harness.ts';

const IN_FLIGHT = 16;
/** Runs of the informational same-repo rows: about 9 s each, so fewer than the goal pair's. */
const SAME_REPO_RUNS = 10;

export async function throughput(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const repos = Array.from({ length: IN_FLIGHT }, (_, i) => makeGitRepo(join(dir, `git-${i}`)));
  const same = repos[0]!;
  const { hub, client } = await scriptedHub(cleanup, dir, repos);
  const hubPid = hub.group.child.pid!;
  const hubCpu: number[] = [];
  const runnerCpu: number[] = [];
  const directCpu: number[] = [];
  /** Tasks per second for IN_FLIGHT tasks, task i in cwds[i]; all at once, or one after another when `serial`. */
  const batch = async (
    one: (cwd: string) => Promise<void>,
    cwds: readonly string[],
    cpu?: { start: () => () => number; samples: number[] },
    serial = false,
  ) => {
    const used = cpu?.start();
    const start = performance.now();
    if (serial) for (const cwd of cwds) await one(cwd);
    else await Promise.all(cwds.map(one));
    const seconds = (performance.now() - start) / 1000;
    if (cpu && used) cpu.samples.push(used() / cwds.length);
    return cwds.length / seconds;
  };
  const viaHub = async (cwd: string) => expectText((await delegate(client, SHORT_PROMPT, cwd)).text, SHORT_ANSWER);
  const direct = async (cwd: string) =>
    expectText(await directAcp(SCRIPTED_AGENT_COMMAND, cwd, SHORT_PROMPT), SHORT_ANSWER);
  const sameRepo = Array.from({ length: IN_FLIGHT }, () => same);
  const notes = [
    `goal rows: ${IN_FLIGHT} git repos, one task in each, all in flight at once on both sides.`,
    'same-repo rows (information): the hub runs one task at a time in one work tree (rule: workspace-locks), so its baseline is the direct client one at a time; "old figure" is the hub in one repo vs the direct client running all 16 at once in that repo, which is not the same work.',
    "CPU (on the goal rows): the daemon process alone (its agents excluded), the sum of its threads' run time from /proc/<hub pid>/task/*/schedstat in ns, vs process.cpuUsage() of this bench process (microseconds) while it drives the same agents.",
    "snapshot runners row (information): the git snapshots the direct client does not take, run by the hub's long-lived `sh` runners (rule: snapshot-runners): their CPU and that of the gits they reaped, outside the daemon's own figure.",
  ];
  // The goal pair runs on its own so that it gets all its runs within the budget (the goal asks for at least 20);
  // the same-repo rows, two of them one task at a time, take most of the time and follow as information.
  const goal = await interleave(
    opts.runs,
    {
      hub: async () => {
        const runners0 = childrenCpuMs(hubPid, 'sh');
        const rate = await batch(viaHub, repos, { start: () => processCpu(hubPid), samples: hubCpu });
        runnerCpu.push((childrenCpuMs(hubPid, 'sh') - runners0) / repos.length);
        return rate;
      },
      direct: () => batch(direct, repos, { start: ownCpu, samples: directCpu }),
    },
    { ms: 150_000, notes },
  );
  const sameRuns = await interleave(
    Math.min(opts.runs, SAME_REPO_RUNS),
    {
      hubSame: () => batch(viaHub, sameRepo),
      directSameSerial: () => batch(direct, sameRepo, undefined, true),
      directSameConcurrent: () => batch(direct, sameRepo),
    },
    { ms: 120_000, notes },
  );
  const s = { ...goal, ...sameRuns };
  await hub.stop();
  // The first sample of each is the warm-up.
  const hubCpuRuns = hubCpu.slice(1);
  const directCpuRuns = directCpu.slice(1);
  return {
    name: 'throughput',
    title: `${IN_FLIGHT} short tasks in flight, one per git repo: hub vs direct ACP client (and one repo, for information)`,
    series: [
      series('hub, 16 repos', 'tasks/s', s.hub!),
      series('direct, 16 repos', 'tasks/s', s.direct!),
      series('hub, 1 repo (one at a time by lock)', 'tasks/s', s.hubSame!),
      series('direct, 1 repo, one at a time', 'tasks/s', s.directSameSerial!),
      series('direct, 1 repo, 16 at once', 'tasks/s', s.directSameConcurrent!),
      series('hub daemon CPU per task', 'ms', hubCpuRuns),
      series('direct client CPU per task', 'ms', directCpuRuns),
      series('hub snapshot runners (sh + git) CPU per task', 'ms', runnerCpu.slice(1)),
    ],
    checks: [
      atLeast('hub / direct throughput, 16 repos (median)', ratioOfMedians(s.hub!, s.direct!), 0.8),
      atMost('hub CPU / direct CPU per task (median)', stats(hubCpuRuns).median / stats(directCpuRuns).median, 2),
      info('1 repo: hub / direct one at a time (median)', ratioOfMedians(s.hubSame!, s.directSameSerial!)),
      info('1 repo, old figure: hub / direct 16 at once (median)', ratioOfMedians(s.hubSame!, s.directSameConcurrent!)),
    ],
    notes,
  };
}
