// The one small harness every measure in `npm run bench` uses: flags, interleaved sampling, summary statistics, goal
// checks and the printed / JSON report. Measures return a Section; run.ts prints them.
import { readdirSync, readFileSync } from 'node:fs';

export interface BenchOptions {
  /** Interleaved runs per side (after one warm-up each). */
  runs: number;
  /** Measure names to run; undefined = all. */
  only: Set<string> | undefined;
  json: boolean;
}

export function parseArgs(argv: string[], known: readonly string[]): BenchOptions {
  let runs = 20;
  let only: Set<string> | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--json') json = true;
    else if (arg === '--runs') {
      runs = Number(argv[++i]);
      if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs needs a positive integer, got "${argv[i]}"`);
    } else if (arg === '--only') {
      const names = (argv[++i] ?? '').split(',').filter(Boolean);
      const unknown = names.filter((n) => !known.includes(n));
      if (names.length === 0 || unknown.length > 0)
        throw new Error(`--only takes a comma-separated list of: ${known.join(', ')} (got "${argv[i] ?? ''}")`);
      only = new Set(names);
    } else throw new Error(`unknown flag "${arg}"; flags: --runs N, --only ${known.join('|')}, --json`);
  }
  return { runs, only, json };
}

export interface Stats {
  n: number;
  min: number;
  median: number;
  p90: number;
}

export function stats(xs: number[]): Stats {
  if (xs.length === 0) throw new Error('no samples');
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  // Nearest-rank p90.
  const p90 = s[Math.min(s.length - 1, Math.ceil(0.9 * s.length) - 1)]!;
  return { n: s.length, min: s[0]!, median, p90 };
}

/**
 * One warm-up of every side, then `runs` rounds in which each side runs once; the order flips every round so drift on
 * a shared machine lands on all sides alike. Each side returns its own measurement (ms, tasks/s, ...). Past
 * `budgetMs` no new round starts (a loaded machine can be many times slower than a quiet one); `notes` then says so.
 */
export async function interleave(
  runs: number,
  sides: Record<string, () => Promise<number>>,
  budget: { ms: number; notes: string[] },
): Promise<Record<string, number[]>> {
  const names = Object.keys(sides);
  const start = performance.now();
  for (const name of names) await sides[name]!();
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  let done = 0;
  while (done < runs && (done === 0 || performance.now() - start < budget.ms)) {
    const order = done % 2 ? [...names].reverse() : names;
    for (const name of order) samples[name]!.push(await sides[name]!());
    done++;
  }
  if (done < runs)
    budget.notes.push(`stopped after ${done} of ${runs} runs: the ${budget.ms / 1000} s budget ran out.`);
  return samples;
}

/** Wall time of `fn` in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Mean wall time in ms of `calls` runs of `fn` one after another: one sample of a call too short to time alone. */
export async function meanMs(calls: number, fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < calls; i++) await fn();
  return (performance.now() - start) / calls;
}

export interface Series {
  label: string;
  unit: string;
  stats: Stats;
}

export interface Check {
  what: string;
  value: number;
  /** How the value is written (e.g. '×', ' MiB', ' s'). */
  unit: string;
  goal: string;
  /** null: a figure printed for context, with no goal. */
  met: boolean | null;
}

export interface Section {
  name: string;
  title: string;
  series: Series[];
  checks: Check[];
  notes: string[];
}

export function series(label: string, unit: string, xs: number[]): Series {
  return { label, unit, stats: stats(xs) };
}

/** value ≤ limit (ratios where lower is better). */
export function atMost(what: string, value: number, limit: number, unit = '×'): Check {
  return { what, value, unit, goal: `≤ ${limit}${unit}`, met: value <= limit };
}

/** value ≥ limit (ratios where higher is better). */
export function atLeast(what: string, value: number, limit: number, unit = '×'): Check {
  return { what, value, unit, goal: `≥ ${limit}${unit}`, met: value >= limit };
}

/** A figure with no goal of its own, printed beside the checks for context. */
export function info(what: string, value: number, unit = '×'): Check {
  return { what, value, unit, goal: '—', met: null };
}

export function ratioOfMedians(a: number[], b: number[]): number {
  return stats(a).median / stats(b).median;
}

const fmt = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));

function table(rows: string[][], rightAligned: boolean[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((c, i) => (rightAligned[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  '))
    .map((line) => `  ${line.trimEnd()}`)
    .join('\n');
}

export function formatSection(s: Section): string {
  const out = [`## ${s.title}  [--only ${s.name}]`];
  if (s.series.length > 0) {
    const rows = [['', 'n', 'min', 'median', 'p90', 'unit']];
    for (const x of s.series)
      rows.push([x.label, String(x.stats.n), fmt(x.stats.min), fmt(x.stats.median), fmt(x.stats.p90), x.unit]);
    out.push(table(rows, [false, true, true, true, true, false]));
  }
  if (s.checks.length > 0) {
    const rows = [['check', 'value', 'goal', 'met']];
    for (const c of s.checks)
      rows.push([c.what, `${fmt(c.value)}${c.unit}`, c.goal, c.met === null ? '' : c.met ? 'yes' : 'NO']);
    out.push(table(rows, [false, true, false, false]));
  }
  for (const n of s.notes) out.push(`  note: ${n}`);
  return out.join('\n');
}

export interface MachineInfo {
  node: string;
  cpus: number;
  loadavg: number[];
  noisy: boolean;
}

export function machine(cpus: number): MachineInfo {
  const loadavg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  return { node: process.version, cpus, loadavg, noisy: loadavg[0]! > 2 };
}

/** RSS of a process in MiB, from /proc (Linux). */
export function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

/** User + system CPU time of one process (not its children) in ms, from /proc/<pid>/stat: in 10 ms clock ticks. */
function cpuMs(pid: number): number {
  const { fields } = procStat(String(pid));
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/**
 * Starts measuring the CPU time of one process (not its children); the function returned gives the ms used since.
 * Read as the sum of its threads' run time (/proc/<pid>/task/<tid>/schedstat, in ns), the same time /proc/<pid>/stat
 * counts in 10 ms ticks: divided over a sample of 16 tasks a tick is 0.6 ms a task, coarser than the differences
 * measured. A thread that ended in between would take its time out of that sum, so then (and where schedstat is
 * missing) the ticks are used.
 */
export function processCpu(pid: number): () => number {
  const before = threadsCpu(pid);
  const ticksBefore = cpuMs(pid);
  return () => {
    const after = threadsCpu(pid);
    if (before && after && after.tids === before.tids) return after.ms - before.ms;
    return cpuMs(pid) - ticksBefore;
  };
}

/** processCpu for this process, from process.cpuUsage() (microseconds). */
export function ownCpu(): () => number {
  const before = process.cpuUsage();
  return () => {
    const u = process.cpuUsage(before);
    return (u.user + u.system) / 1000;
  };
}

function threadsCpu(pid: number): { ms: number; tids: string } | undefined {
  try {
    const tids = readdirSync(`/proc/${pid}/task`).sort();
    let ns = 0;
    for (const tid of tids) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? { ms: ns / 1e6, tids: tids.join(' ') } : undefined;
  } catch {
    return undefined;
  }
}

/** /proc/<pid>/stat: the command name, and the fields after it (utime and stime are fields[11] and [12]). */
function procStat(pid: string): { comm: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const close = stat.lastIndexOf(')');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
}

/**
 * CPU ms of the live children of `parentPid` named `comm`, with what they reaped (cutime, cstime): for the hub's
 * snapshot runner shells and the gits they run, which the daemon's own figure leaves out.
 */
export function childrenCpuMs(parentPid: number, comm: string): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: { comm: string; fields: string[] };
    try {
      stat = procStat(entry);
    } catch {
      continue;
    }
    const f = stat.fields;
    if (stat.comm !== comm || Number(f[1]) !== parentPid) continue;
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** sysconf(_SC_CLK_TCK) is 100 on every Linux Node supports. */
const CLOCK_TICKS = 100;

/** Cleanups run in reverse order at the end (test/support helpers take a `{ after }` like node:test's context). */
export class Cleanup {
  private readonly fns: Array<() => unknown> = [];
  after = (fn: () => unknown): void => {
    this.fns.push(fn);
  };
  async run(): Promise<void> {
    for (const fn of this.fns.reverse()) await fn();
    this.fns.length = 0;
  }
}
