// Runs the test files (default: test/**/*.test.ts) with node:test, longest first. On a two-core machine most of the
// suite's time is spent in a few files that drive real agent CLIs; started last, one of them runs alone at the end
// while the cores idle. Node's own `--test` sorts files by name, so this script hands node:test the files in order:
// by the wall time each file took in the last run here (kept next to the compile cache in TMPDIR), else by the
// hint list below, then by name. Order only schedules; every file still runs in its own process, and each file's
// report is printed as one block when it ends.
//
// Four files at a time on two cores: the files that drive agents spend about half their wall time waiting (for a
// child to start, a grace or idle budget to pass), so with three the cores idle; a model of the measured per-file
// CPU and wall times (taken on a loaded machine) gave ~245 s at three, ~195 s at four, ~175 s at five. A fixed
// number still leaves the cores idle whenever the four files running all wait at once, so up to two more start while
// the CPU measured idle (see the scheduler below); under load nothing extra starts. --concurrency N runs exactly N.
//
// The pure unit files marked process-safe run together in one test process (scripts/test-one-process.ts), one test at a
// time: each spawns nothing and changes no process-wide state, and a process of its own would cost more CPU than its
// tests (a bare test process, then the same src/ modules imported again).
//
// With --prepare (what `npm test` runs) the build comes first, with the process-safe files beside it (they need no
// dist/), then `npm run check`'s type check and linters run beside the tests instead of before them: the tests need
// only dist/, and on two cores the checks fill the gaps the test files leave. The build skips its own type check
// (--noCheck) because the type check covers src and everything else; its JavaScript is the same either way. A failed
// build stops the run at once; failed checks are printed as soon as they end, and the run fails at the end whatever
// the tests did, saying so on its last line.
//
//   node scripts/test.ts [--prepare] [--concurrency N] [--timeout MS] [file or glob …] ['!glob' to leave out …]
import { spawn } from 'node:child_process';
import { existsSync, globSync, readFileSync, writeFileSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { parseArgs } from 'node:util';
import { prereqProblem } from './prereqs.mjs';

// Files known to take longest (real agents, Chromium, npm pack), for a first run with no recorded times. A name that
// no longer exists is ignored; a new slow file simply runs in name order until its time is recorded.
const SLOW_HINT = [
  'test/e2e/connect/connect-clients.test.ts',
  'test/e2e/provider/codex-legacy.test.ts',
  'test/e2e/browser/browser-provider.test.ts',
  'test/e2e/hub/hub-acp-real.test.ts',
  'test/e2e/attach/opencode-user-server.test.ts',
  'test/e2e/provider/claude-provider.test.ts',
  'test/e2e/hub/ux-dashboard.test.ts',
  'test/e2e/package/pack-install.test.ts',
  'test/e2e/agents/acp-real.test.ts',
  'test/e2e/connect/connect-cli.test.ts',
  'test/e2e/hub/operator-cli.test.ts',
  'test/e2e/provider/codex-job-limits.test.ts',
  'test/e2e/provider/codex-liveness.test.ts',
  'test/e2e/hub/hub-restart-clients.test.ts',
  'test/e2e/hub/user-config.test.ts',
];

// Run in one process (see above): a file whose header has a line starting `// process-safe:` (MARKER). Only a file that
// spawns no process and leaves process.env, the cwd, process methods and V8 flags as they were may say so. Secrets the
// code under test registers (src/lib/redact.ts) stay registered for the files after it, so each such file plants
// secrets of its own: a redaction test must not pass on a secret another file registered.
const MARKER = /^\/\/ process-safe:/m;

/** Whether a test file's header (its leading comment lines) marks it process-safe. */
function processSafe(file: string): boolean {
  const text = readFileSync(resolve(root, file), 'utf8');
  const header = text.slice(0, text.search(/^(?!\/\/|\s*$)/m) >>> 0);
  return MARKER.test(header);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    concurrency: { type: 'string' },
    timeout: { type: 'string', default: '300000' },
    prepare: { type: 'boolean', default: false },
  },
});

// `npm test` on a machine without the system packages the suite drives stops here, in one line with the command that
// installs them, not deep inside a test with a stack trace (the list: scripts/prereqs.mjs).
if (values.prepare) {
  const problem = prereqProblem();
  if (problem) {
    console.error(`npm test: ${problem}`);
    process.exit(1);
  }
}

/** Runs the commands one after another (npm puts node_modules/.bin first on PATH); resolves to their output and
 * whether all passed. Output is held back so the two chains never interleave. */
async function chain(
  commands: string[][],
  opts: { background?: boolean } = {},
): Promise<{ ok: boolean; output: string }> {
  let output = '';
  for (const [cmd, ...args] of commands) {
    output += `> ${[cmd, ...args].join(' ')}\n`;
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    // Checks run beside the tests at the lowest priority (npm's children inherit it): they only fill idle time, and a
    // test waiting on a cold agent binary's first start under a bound is not made to share the cores with tsc.
    if (opts.background && child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        // Not permitted here: the checks then compete as equals, which only makes the run slower.
      }
    }
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    const code = await new Promise<number | null>((resolve) => {
      child.once('error', (err) => {
        output += `${err.message}\n`;
        resolve(1);
      });
      child.once('close', resolve);
    });
    if (code !== 0) return { ok: false, output };
  }
  return { ok: true, output };
}

const root = process.cwd();
// A pattern starting with `!` leaves out what it matches (`'!test/e2e/**'`: every suite but the end-to-end ones).
const excluded = positionals.filter((p) => p.startsWith('!')).map((p) => p.slice(1));
const included = positionals.filter((p) => !p.startsWith('!'));
const patterns = included.length > 0 ? included : ['test/**/*.test.ts'];
const files = [
  ...new Set(patterns.flatMap((p) => globSync(p, { exclude: excluded })).map((f) => relative(root, resolve(f)))),
];
if (files.length === 0) {
  console.error(`no test files match ${patterns.join(' ')}`);
  process.exit(1);
}

const timesFile = join(process.env.TMPDIR || tmpdir(), 'baton-test-durations.json');
let recorded: Record<string, number> = {};
try {
  recorded = JSON.parse(readFileSync(timesFile, 'utf8')) as Record<string, number>;
} catch {
  // No earlier run here (or an unreadable record): the hint list orders this run.
}
const hintRank = (f: string) => {
  const i = SLOW_HINT.indexOf(f);
  return i === -1 ? SLOW_HINT.length : i;
};
const hasTimes = files.some((f) => recorded[f] !== undefined);
files.sort((a, b) =>
  hasTimes
    ? (recorded[b] ?? 0) - (recorded[a] ?? 0) || a.localeCompare(b)
    : hintRank(a) - hintRank(b) || a.localeCompare(b),
);

// Times of files not run this time are kept (a run of a few files keeps the rest), unless the file is gone.
const durations = Object.fromEntries(Object.entries(recorded).filter(([f]) => existsSync(resolve(root, f))));
const started = performance.now();
const timeout = Number(values.timeout);
// --concurrency N runs exactly N files at a time; by default four, and up to EXTRA_FILES more on idle CPU (below).
const concurrency = Number(values.concurrency ?? 4);
const shared = files.filter(processSafe);
const isolated = files.filter((f) => !shared.includes(f));

// Each run ends with its own totals (diagnostics "tests N", "pass N", …); they are summed into one set at the end.
const TOTALS = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/;
const totals = { tests: 0, suites: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
const report = new PassThrough({ objectMode: true });
const specOut = report.compose(spec);
const printed = new Promise((r) => specOut.once('end', r));

/** Collects a run's events (one file, or the process-safe files) and resolves to them when it ends; the totals and
 * durations are taken as they come. Each run is printed as one block, so files that end together never interleave. */
function collect(stream: Readable): Promise<unknown[]> {
  const held: unknown[] = [];
  stream.on('data', (event: { type: string; data: Record<string, unknown> }) => {
    const { type, data } = event;
    if (type === 'test:fail') process.exitCode = 1;
    if (type === 'test:summary' && !data.file) {
      const s = data as unknown as { success: boolean; counts: Record<string, number> };
      if (!s.success || s.counts.cancelled! > 0) process.exitCode = 1;
      totals.tests += s.counts.tests!;
      totals.suites += s.counts.suites!;
      totals.pass += s.counts.passed!;
      totals.fail += s.counts.failed!;
      totals.cancelled += s.counts.cancelled!;
      totals.skipped += s.counts.skipped!;
      totals.todo += s.counts.todo!;
      return;
    }
    if (type === 'test:summary' && typeof data.file === 'string') {
      durations[relative(root, data.file)] = Math.round(data.duration_ms as number);
    }
    if (type === 'test:diagnostic' && data.nesting === 0 && !data.file && TOTALS.test(String(data.message))) return;
    held.push(event);
  });
  return new Promise((resolve, reject) => {
    stream.once('end', () => resolve(held));
    stream.once('error', reject);
  });
}

// Each run's report, written as one block when it ends. The report reaches stdout only once the build's output is
// out (below); what is written before then waits in the stream.
const reported: Promise<void>[] = [];
const print = (events: Promise<unknown[]>) =>
  reported.push(
    events.then((held) => {
      for (const event of held) report.write(event);
    }),
  );

/**
 * The machine's CPU time over the last IDLE_WINDOW_MS, from /proc/stat (Linux; elsewhere no samples, and no file starts
 * beyond `concurrency`): the share that was idle with nothing to run, and the share idle while waiting on the disk.
 */
const IDLE_WINDOW_MS = 2_000;
const samples: Array<{ at: number; idle: number; iowait: number; total: number }> = [];
const sampleCpu = () => {
  let fields: number[];
  try {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice", summed over all cores.
    fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return;
  }
  const at = performance.now();
  samples.push({ at, idle: fields[3]!, iowait: fields[4]!, total: fields.reduce((a, b) => a + b, 0) });
  while (samples.length > 2 && samples[1]!.at <= at - IDLE_WINDOW_MS) samples.shift();
};
const cpuShares = () => {
  const first = samples[0];
  const last = samples.at(-1);
  const total = (last?.total ?? 0) - (first?.total ?? 0);
  if (!first || !last || last.at - first.at < IDLE_WINDOW_MS / 2 || total <= 0) return { idle: 0, iowait: 1 };
  return { idle: (last.idle - first.idle) / total, iowait: (last.iowait - first.iowait) / total };
};

// The isolated files, `concurrency` at a time, longest first. Many of them wait much of their time (a child's start,
// an idle or grace deadline, a long-poll), and then the cores idle while every slot is taken; so while at least
// FILL_IDLE of the CPU time went idle over the last two seconds, and no file started in them, one more file starts, up
// to EXTRA_FILES over `concurrency`. Only idle CPU starts one: under load (other work on the machine, or files busy
// with their own CPU) nothing extra starts, so the files never pile up beyond what the cores leave free. Nor while
// the disk holds things up (more than MAX_IOWAIT of the time idle waiting on it): on a fresh clone the first starts of
// Chromium and the agent CLIs read their binaries from a cold disk, and a file started then would only slow them.
const EXTRA_FILES = values.concurrency === undefined ? 2 : 0;
const FILL_IDLE = 0.35;
const MAX_IOWAIT = 0.05;
const queue = [...isolated];
let running = 0;
let lastStart = Number.NEGATIVE_INFINITY;
let allDone: () => void = () => {};
const done = new Promise<void>((r) => (allDone = r));
const startNext = () => {
  running += 1;
  lastStart = performance.now();
  const events = collect(run({ files: [resolve(root, queue.shift()!)], timeout }));
  print(events);
  void events
    .catch(() => {})
    .finally(() => {
      running -= 1;
      pump();
      if (running === 0 && queue.length === 0) allDone();
    });
};
// Called only once the build is done (the sampler below starts after it).
const pump = () => {
  while (queue.length > 0 && running < concurrency) startNext();
  if (queue.length > 0 && running < concurrency + EXTRA_FILES && performance.now() - lastStart >= IDLE_WINDOW_MS) {
    const { idle, iowait } = cpuShares();
    if (idle >= FILL_IDLE && iowait <= MAX_IOWAIT) startNext();
  }
};
// The process-safe files need no dist/: they start at once, beside the build, which keeps one core busy with tsc. Their
// process takes no slot (about two CPU seconds in all).
let oneProcess: Promise<unknown[]> = Promise.resolve([]);
if (shared.length) {
  const argv = shared.map((f) => resolve(root, f));
  oneProcess = collect(run({ files: [resolve(root, 'scripts', 'test-one-process.ts')], timeout, argv }));
  print(oneProcess);
}

let checks: Promise<boolean> | undefined;
if (values.prepare) {
  const build = await chain([['npm', 'run', '-s', 'build', '--', '--noCheck']]);
  process.stdout.write(build.output);
  if (!build.ok) {
    console.error('the build failed; no tests run');
    process.exit(1);
  }
  checks = Promise.all([
    chain([['npm', 'run', '-s', 'typecheck']], { background: true }),
    chain([['npm', 'run', '-s', 'lint']], { background: true }),
  ]).then((results) => {
    const ok = results.every((r) => r.ok);
    const output = results.map((r) => r.output).join('');
    process.stdout.write(ok ? output : `\n✖ npm run check FAILED; the tests go on, the run will fail:\n${output}\n`);
    return ok;
  });
}
specOut.pipe(process.stdout);

let sampler: NodeJS.Timeout | undefined;
if (queue.length > 0) {
  sampleCpu();
  sampler = setInterval(() => {
    sampleCpu();
    pump();
  }, 250);
  pump();
} else allDone();
await Promise.all([done, oneProcess]);
clearInterval(sampler);
await Promise.all(reported);

for (const [name, n] of [
  ...Object.entries(totals),
  ['duration_ms', Math.round(performance.now() - started)] as const,
]) {
  report.write({ type: 'test:diagnostic', data: { nesting: 0, message: `${name} ${n}`, level: 'info' } });
}
report.end();
try {
  writeFileSync(timesFile, `${JSON.stringify(durations)}\n`);
} catch {
  // The record only orders the next run; failing to keep it changes no result.
}
if (checks && !(await checks)) {
  await printed;
  process.exitCode = 1;
  console.error('✖ npm run check failed (its output is above): this run fails whatever the tests did');
}
