// Where one paging read of a 10 MiB answer spends its time ("paging a 10 MiB result ≤ 1 s"): the same 320
// agent_result calls through each official client (SDK v1 `Client` on a 2025 session, SDK v2 `Client` on a 2025
// session and stateless 2026-07-28), interleaved, with wall time, the bench process's own CPU and the hub daemon's CPU
// (from /proc) per read. Not part of `npm run bench`; run it directly:
//
//   npm run build && node bench/paging.ts [reads per client, default 5]
//
// Profiling: BENCH_HUB_NODE_OPTIONS as for the bench (the hub's profile); `node --cpu-prof bench/paging.ts` for the
// clients' side.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectCaller, startHub } from '../test/support/hub.ts';
import { connectV2, type ToolCaller, v1Caller, v2Caller, waitToEnd } from '../test/support/mcp-v2.ts';
import { hubEnv, makePlainDir } from './common.ts';
import { Cleanup, stats } from './harness.ts';

const BIG = 10 * 1024 * 1024;
const SMALL = 400;
const PAGES = Math.ceil(BIG / 32_768);
const SIZED_AGENT = fileURLToPath(new URL('./sized-reply-agent.ts', import.meta.url));
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** CPU seconds (user + system) `pid` has used, from /proc. */
function procCpu(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces; the fields after it are space-separated (utime and stime are fields 14 and 15).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / TICKS, system: Number(fields[12]) / TICKS };
}

function ownCpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

interface Read {
  wall: number;
  client: number;
  hub: number;
  hubSystem: number;
}

/** Reads the whole answer page by page (or, with `small`, the first page of a 400 B answer as many times). */
async function pageAll(callTool: ToolCaller, taskId: string, hubPid: number, small?: string): Promise<Read> {
  const wall0 = performance.now();
  const own0 = ownCpu();
  const hub0 = procCpu(hubPid);
  let offset = 0;
  let chars = 0;
  for (let calls = 1; ; calls++) {
    if (small) {
      const page = await callTool('agent_result', { taskId: small });
      chars += (page.text as string).length;
      if (calls === PAGES) break;
      continue;
    }
    const page = await callTool('agent_result', { taskId, offset });
    chars += (page.text as string).length;
    offset = page.nextOffset as number;
    if (page.done) break;
  }
  const hub1 = procCpu(hubPid);
  const read = {
    wall: (performance.now() - wall0) / 1000,
    client: ownCpu() - own0,
    hub: hub1.user + hub1.system - hub0.user - hub0.system,
    hubSystem: hub1.system - hub0.system,
  };
  const want = small ? SMALL * PAGES : BIG;
  if (chars !== want) throw new Error(`paged ${chars} characters, expected ${want}`);
  return read;
}

const reads = Number(process.argv[2] ?? 5);
const cleanup = new Cleanup();
const dir = mkdtempSync(join(tmpdir(), 'baton-paging-'));
try {
  const work = makePlainDir(join(dir, 'work'));
  const hub = await startHub(
    cleanup,
    { dir, roots: [work], agents: { sized: { kind: 'acp', command: [process.execPath, SIZED_AGENT] } } },
    hubEnv(),
  );
  const hubPid = hub.group.child.pid!;
  const v1 = v1Caller(await connectCaller(cleanup, hub, 'alice'));
  const { taskId } = await v1('agent_run', { prompt: String(BIG), cwd: work, idempotencyKey: 'paging-10MiB' });
  const end = await waitToEnd(v1, taskId as string);
  if (end.state !== 'succeeded') throw new Error(`the task ended ${end.state}`);
  const small = await v1('agent_run', { prompt: String(SMALL), cwd: work, idempotencyKey: 'paging-400B' });
  if ((await waitToEnd(v1, small.taskId as string)).state !== 'succeeded') throw new Error('the 400 B task failed');
  const clients: Record<string, ToolCaller> = {
    'SDK v1 Client, 2025 session': v1,
    'SDK v2 Client, 2025 session': v2Caller(await connectV2(cleanup, hub, 'alice', 'legacy')),
    'SDK v2 Client, 2026-07-28': v2Caller(await connectV2(cleanup, hub, 'alice', 'modern')),
  };
  // The same number of calls on a 400 B answer: what a call costs apart from the page's size.
  const runs: Record<string, () => Promise<Read>> = {};
  for (const [n, c] of Object.entries(clients)) {
    runs[n] = () => pageAll(c, taskId as string, hubPid);
    if (n.startsWith('SDK v1'))
      runs[`${n}, 400 B x${PAGES}`] = () => pageAll(c, taskId as string, hubPid, small.taskId as string);
  }
  const names = Object.keys(runs);
  const got = new Map<string, Read[]>(names.map((n) => [n, []]));
  // One warm-up read each, then interleaved reads (the order rotates every round).
  for (const n of names) await runs[n]!();
  for (let r = 0; r < reads; r++)
    for (let i = 0; i < names.length; i++) {
      const n = names[(i + r) % names.length]!;
      got.get(n)!.push(await runs[n]!());
    }
  console.log(
    `paging 10 MiB (320 agent_result calls), ${reads} reads per client, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log('median s per read:                        wall    client CPU   hub CPU  (of which system)');
  for (const n of names) {
    const rs = got.get(n)!;
    const m = (f: (r: Read) => number) => stats(rs.map(f)).median.toFixed(3).padStart(8);
    console.log(
      `${n.padEnd(40)} ${m((r) => r.wall)}   ${m((r) => r.client)}   ${m((r) => r.hub)}   ${m((r) => r.hubSystem)}`,
    );
  }
  await hub.stop();
} finally {
  await cleanup.run();
  rmSync(dir, { recursive: true, force: true });
}
