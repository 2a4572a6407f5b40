// Status / wait / list latency on a finished task whose answer is 10 MiB vs one whose answer is 400 B (each owned by
// its own caller, so agent_list lists just that task), and reading the 10 MiB answer page by page to the end.

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call, connectCaller, followToEnd, startHub } from '../test/support/hub.ts';
import { hubEnv, makePlainDir } from './common.ts';
import {
  atMost,
  type BenchOptions,
  type Cleanup,
  interleave,
  meanMs,
  ratioOfMedians,
  type Section,
  series,
  stats,
} from './harness.ts';

const BIG = 10 * 1024 * 1024;
const SMALL = 400;
const SIZED_AGENT = fileURLToPath(new URL('./sized-reply-agent.ts', import.meta.url));
/** Calls whose mean makes one latency sample. */
const CALLS_PER_SAMPLE = 10;
/** Paging the big answer is repeated at most this long (one read could take 40-140 s when reads cost in proportion to the answer's size). */
const PAGING_BUDGET_MS = 20_000;

interface Finished {
  client: Client;
  taskId: string;
  cursor: number;
}

async function finishedTask(client: Client, cwd: string, size: number): Promise<Finished> {
  const run = await call<{ taskId: string }>(client, 'agent_run', {
    prompt: String(size),
    cwd,
    idempotencyKey: `sized-${size}`,
  });
  const end = await followToEnd(client, run.taskId);
  if (end.state !== 'succeeded') throw new Error(`the ${size}-character task ended ${end.state}`);
  return { client, taskId: run.taskId, cursor: end.last.nextCursor as number };
}

interface PagedRead {
  ms: number;
  pages: number;
  complete: boolean;
}

/** Reads the answer page by page from offset 0; gives up at `deadline` (performance.now()) and says how far it got. */
async function pageAll(t: Finished, expected: number, deadline: number): Promise<PagedRead> {
  const start = performance.now();
  let offset = 0;
  let chars = 0;
  let pages = 0;
  for (;;) {
    const page = await call<{ text: string; nextOffset: number; done: boolean }>(t.client, 'agent_result', {
      taskId: t.taskId,
      offset,
    });
    pages++;
    chars += page.text.length;
    offset = page.nextOffset;
    if (page.done) break;
    if (performance.now() > deadline) return { ms: performance.now() - start, pages, complete: false };
  }
  if (chars !== expected) throw new Error(`paged ${chars} characters, expected ${expected}`);
  return { ms: performance.now() - start, pages, complete: true };
}

export async function bigResult(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const work = makePlainDir(join(dir, 'work'));
  const hub = await startHub(
    cleanup,
    {
      dir,
      roots: [work],
      agents: { sized: { kind: 'acp', command: [process.execPath, SIZED_AGENT] } },
    },
    hubEnv(),
  );
  const big = await finishedTask(await connectCaller(cleanup, hub, 'alice'), work, BIG);
  const small = await finishedTask(await connectCaller(cleanup, hub, 'bob'), work, SMALL);
  // Each sample is the mean of CALLS_PER_SAMPLE calls in a row: one call takes 1-5 ms here, and a single call's time
  // is mostly where the scheduler happened to put the two processes, which swung a ratio of medians by ±20%.
  const sampled = (fn: () => Promise<unknown>) => () => meanMs(CALLS_PER_SAMPLE, fn);
  const status = (t: Finished) => sampled(() => call(t.client, 'agent_status', { taskId: t.taskId }));
  const wait = (t: Finished) =>
    sampled(() => call(t.client, 'agent_wait', { taskId: t.taskId, after: t.cursor, timeoutMs: 0 }));
  // From cursor 0 a page holds the streamed answer's first message events: bounded by text (rule: event-pages).
  const waitFrom0 = (t: Finished) =>
    sampled(() => call(t.client, 'agent_wait', { taskId: t.taskId, after: 0, timeoutMs: 0 }));
  const list = (t: Finished) => sampled(() => call(t.client, 'agent_list', {}));
  const notes: string[] = [`status, wait and list: each sample is the mean of ${CALLS_PER_SAMPLE} calls in a row.`];
  const s = await interleave(
    opts.runs,
    {
      statusBig: status(big),
      statusSmall: status(small),
      waitBig: wait(big),
      waitSmall: wait(small),
      waitFrom0Big: waitFrom0(big),
      waitFrom0Small: waitFrom0(small),
      listBig: list(big),
      listSmall: list(small),
    },
    { ms: 30_000, notes },
  );
  const totalPages = Math.ceil(BIG / 32_768);
  const paging: number[] = [];
  notes.unshift(`agent_result pages are 32,768 code points: ${totalPages} calls per read.`);
  const deadline = performance.now() + PAGING_BUDGET_MS;
  let cut = false;
  while (paging.length < opts.runs && (paging.length === 0 || performance.now() < deadline)) {
    const read = await pageAll(big, BIG, deadline);
    if (read.complete) {
      paging.push(read.ms);
      continue;
    }
    // Too slow to finish within the bench's budget: the first read is extrapolated from the pages it did.
    if (paging.length === 0) {
      cut = true;
      paging.push((read.ms * totalPages) / read.pages);
      notes.push(
        `paging cut at ${PAGING_BUDGET_MS / 1000} s after ${read.pages}/${totalPages} pages; time extrapolated.`,
      );
    }
    break;
  }
  if (paging.length < opts.runs && !cut)
    notes.push(`paging: ${paging.length} read(s) within the ${PAGING_BUDGET_MS / 1000} s budget.`);
  await hub.stop();
  return {
    name: 'big-result',
    title: 'Latency on a finished task with a 10 MiB answer vs a 400 B one; paging the 10 MiB answer',
    series: [
      series('agent_status, 10 MiB', 'ms', s.statusBig!),
      series('agent_status, 400 B', 'ms', s.statusSmall!),
      series('agent_wait (at end), 10 MiB', 'ms', s.waitBig!),
      series('agent_wait (at end), 400 B', 'ms', s.waitSmall!),
      series('agent_wait (from 0), 10 MiB', 'ms', s.waitFrom0Big!),
      series('agent_wait (from 0), 400 B', 'ms', s.waitFrom0Small!),
      series('agent_list, 10 MiB', 'ms', s.listBig!),
      series('agent_list, 400 B', 'ms', s.listSmall!),
      series('agent_result, all pages of 10 MiB', 'ms', paging),
    ],
    checks: [
      atMost('status: 10 MiB / 400 B (median)', ratioOfMedians(s.statusBig!, s.statusSmall!), 1.2),
      atMost('wait: 10 MiB / 400 B (median)', ratioOfMedians(s.waitBig!, s.waitSmall!), 1.2),
      atMost('wait from 0: 10 MiB / 400 B (median)', ratioOfMedians(s.waitFrom0Big!, s.waitFrom0Small!), 1.2),
      atMost('list: 10 MiB / 400 B (median)', ratioOfMedians(s.listBig!, s.listSmall!), 1.2),
      atMost('paging 10 MiB to the end (median)', stats(paging).median / 1000, 1, ' s'),
    ],
    notes,
  };
}
