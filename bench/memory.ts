// Hub daemon RSS: idle (listening, one caller connected, nothing run yet) and after a 200-task run (16 in flight, git
// repo, scripted ACP agent). Each reading lets the hub sit idle for a moment first, then takes the median of a few
// /proc samples, so a transient peak during the run is not what is compared.

import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { delegate, expectText, makeGitRepo, SHORT_ANSWER, SHORT_PROMPT, scriptedHub } from './common.ts';
import { atMost, type BenchOptions, type Cleanup, rssMiB, type Section, series, stats } from './harness.ts';

const TASKS = 200;
const IN_FLIGHT = 16;
/** The run stops starting tasks after this long, so a slow hub keeps the bench to a few minutes. */
const RUN_BUDGET_MS = 75_000;
const SETTLE_MS = 2_000;

async function settledRss(pid: number): Promise<{ median: number; samples: number[] }> {
  await sleep(SETTLE_MS);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMiB(pid));
    await sleep(200);
  }
  return { median: stats(samples).median, samples };
}

export async function memory(_opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const git = makeGitRepo(join(dir, 'git'));
  const { hub, client } = await scriptedHub(cleanup, dir, [git]);
  const pid = hub.group.child.pid!;
  await client.listTools();
  const idle = await settledRss(pid);
  let started = 0;
  let peak = idle.median;
  const runStart = performance.now();
  const worker = async () => {
    while (started < TASKS && performance.now() - runStart < RUN_BUDGET_MS) {
      started++;
      expectText((await delegate(client, SHORT_PROMPT, git)).text, SHORT_ANSWER);
      peak = Math.max(peak, rssMiB(pid));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const runSeconds = (performance.now() - runStart) / 1000;
  const after = await settledRss(pid);
  await hub.stop();
  const notes = [`${started} tasks in ${runSeconds.toFixed(1)} s; peak RSS seen between tasks ${peak.toFixed(0)} MiB.`];
  if (started < TASKS) notes.push(`the run was cut at ${RUN_BUDGET_MS / 1000} s before reaching ${TASKS} tasks.`);
  return {
    name: 'memory',
    title: `Hub daemon RSS: idle, and after a ${TASKS}-task run (${IN_FLIGHT} in flight, git repo)`,
    series: [
      series('hub RSS idle', 'MiB', idle.samples),
      series(`hub RSS after ${started} tasks`, 'MiB', after.samples),
    ],
    checks: [
      atMost('hub idle RSS (median)', idle.median, 90, ' MiB'),
      atMost('RSS after the run / idle (median)', after.median / idle.median, 1.1),
    ],
    notes,
  };
}
