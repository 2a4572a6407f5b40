// `npm run bench`: what baton costs next to the same work done without it, measured side by side in one run and
// printed as ratios against the goals of issue 13 (never as timed tests). `npm run bench` builds dist/ first
// (prebench), since every hub and provider here is the compiled `baton` a user runs.
//
//   npm run bench [-- --runs N] [-- --only acp,codex,throughput,big-result,startup,memory,mcp-eras,mcp-call] [-- --json]
//
// --runs N   interleaved runs per side after one warm-up (default 20; paging and the memory run are bounded by time)
// --only     run just these measures
// --json     one JSON document on stdout (machine info, every series' min/median/p90, every check) instead of tables
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acpDelegation } from './acp-delegation.ts';
import { bigResult } from './big-result.ts';
import { codexDelegation } from './codex-delegation.ts';
import { type BenchOptions, Cleanup, formatSection, machine, parseArgs, type Section } from './harness.ts';
import { mcpCall } from './mcp-call.ts';
import { mcpEras } from './mcp-eras.ts';
import { memory } from './memory.ts';
import { startup } from './startup.ts';
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
};

let opts: BenchOptions;
try {
  opts = parseArgs(process.argv.slice(2), Object.keys(MEASURES));
} catch (err) {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(2);
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
for (const [name, measure] of Object.entries(MEASURES)) {
  if (opts.only && !opts.only.has(name)) continue;
  const dir = mkdtempSync(join(tmpdir(), `baton-bench-${name}-`));
  const cleanup = new Cleanup();
  const t0 = performance.now();
  try {
    const section = await measure(opts, dir, cleanup);
    section.notes.push(`took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    sections.push(section);
    log(`\n${formatSection(section)}`);
  } finally {
    await cleanup.run();
    rmSync(dir, { recursive: true, force: true });
  }
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
