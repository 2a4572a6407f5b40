// `npm run bench`: what baton costs next to the same work done without it, measured side by side in one run and
// printed as ratios against their goals (never as timed tests). `npm run bench` builds dist/ first
// (prebench), since every hub and provider here is the compiled `baton` a user runs.
//
//   npm run bench [-- --runs N] [-- --only acp,codex,throughput,big-result,startup,memory,mcp-eras,mcp-call,targets,ssh] [-- --json]
//
// --runs N   interleaved runs per side after one warm-up (default 20; paging and the memory run are bounded by time)
// --only     run just these measures
// --json     one JSON document on stdout (machine info, every series' min/median/p90, every check) instead of tables
//
// Each measure runs in a process of its own (this script again, told which one by BATON_BENCH_SECTION), as each of a
// user's clients is its own program: a client process carries its heap and collector state from one measure to the
// next. After the throughput section this process's young generation had shrunk and its old-space limit sat just above
// a heap that section left behind, so the big-result section's client ran a full collection every 120-200 ms while
// paging (six per 10 MiB read) and its CPU per read rose from 0.36-0.52 s to 0.83-0.94 s; the same read in a fresh
// process was back at the former.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acpDelegation } from './acp-delegation.ts';
import { bigResult } from './big-result.ts';
import { codexDelegation } from './codex-delegation.ts';
import { type BenchOptions, Cleanup, formatSection, machine, parseArgs, type Section } from './harness.ts';
import { mcpCall } from './mcp-call.ts';
import { mcpEras } from './mcp-eras.ts';
import { memory } from './memory.ts';
import { ssh } from './ssh.ts';
import { startup } from './startup.ts';
import { targets } from './targets.ts';
import { throughput } from './throughput.ts';

type Measure = (opts: BenchOptions, dir: string, cleanup: Cleanup) => Promise<Section>;

const MEASURES: Record<string, Measure> = {
  acp: acpDelegation,
  codex: codexDelegation,
  throughput,
  'big-result': bigResult,
  startup,
  memory,
  'mcp-eras': mcpEras,
  'mcp-call': mcpCall,
  targets,
  ssh,
};

let opts: BenchOptions;
try {
  opts = parseArgs(process.argv.slice(2), Object.keys(MEASURES));
} catch (err) {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(2);
}
/** Set in a measure's own process: the name of the one measure it runs and writes as JSON on its fd 3. */
const SECTION_ENV = 'BATON_BENCH_SECTION';

async function runSection(name: string, measure: Measure): Promise<Section> {
  const dir = mkdtempSync(join(tmpdir(), `baton-bench-${name}-`));
  const cleanup = new Cleanup();
  const t0 = performance.now();
  try {
    const section = await measure(opts, dir, cleanup);
    section.notes.push(`took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    return section;
  } finally {
    await cleanup.run();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs one measure in a fresh process of its own, which answers on fd 3; its errors reach this process's stderr. */
function sectionInItsOwnProcess(name: string): Section {
  const child = spawnSync(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--runs', String(opts.runs)],
    {
      env: { ...process.env, [SECTION_ENV]: name },
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const answer = child.output[3];
  if (child.status !== 0 || !answer)
    throw new Error(`the ${name} measure failed (exit ${child.status ?? child.signal})`);
  return JSON.parse(answer) as Section;
}

const only = process.env[SECTION_ENV];
if (only !== undefined) {
  const measure = MEASURES[only];
  if (!measure) throw new Error(`${SECTION_ENV}: no measure "${only}"`);
  writeSync(3, JSON.stringify(await runSection(only, measure)));
  process.exit(0);
}

const before = machine(availableParallelism());
const log = (line: string) => {
  // With --json, stdout carries only the document; progress goes to stderr.
  (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
};
log(
  `baton bench: ${before.node}, ${before.cpus} CPUs, load average ${before.loadavg.join(' ')}, ${opts.runs} interleaved runs per side after one warm-up`,
);
if (before.noisy)
  log(
    `WARNING: load average ${before.loadavg[0]} > 2 on ${before.cpus} CPUs: other work shares this machine, numbers are noisy; compare ratios, not absolute times.`,
  );

const sections: Section[] = [];
const started = performance.now();
for (const name of Object.keys(MEASURES)) {
  if (opts.only && !opts.only.has(name)) continue;
  const section = sectionInItsOwnProcess(name);
  sections.push(section);
  log(`\n${formatSection(section)}`);
}
const after = machine(availableParallelism());
const checks = sections.flatMap((s) => s.checks.filter((c) => c.met !== null));
const missed = checks.filter((c) => !c.met);
log(
  `\n${checks.length - missed.length}/${checks.length} goals met in ${((performance.now() - started) / 1000).toFixed(0)} s; load average at the end ${after.loadavg.join(' ')}`,
);
if (opts.json) {
  process.stdout.write(`${JSON.stringify({ machine: { before, after }, runs: opts.runs, sections }, null, 2)}\n`);
}
