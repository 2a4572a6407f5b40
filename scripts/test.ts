// Runs the test files (default: test/**/*.test.ts) with node:test, longest first. On a two-core machine most of the
// suite's time is spent in a few files that drive real agent CLIs; started last, one of them runs alone at the end
// while the cores idle. Node's own `--test` sorts files by name, so this script hands node:test an ordered list:
// by the wall time each file took in the last run here (kept next to the compile cache in TMPDIR), else by the
// hint list below, then by name. Order only schedules; every file still runs in its own process.
//
// Four files at a time on two cores: the files that drive agents spend about half their wall time waiting (for a
// child to start, a grace or idle budget to pass), so with three the cores idle; a model of the measured per-file
// CPU and wall times (taken on a loaded machine) gave ~245 s at three, ~195 s at four, ~175 s at five.
//
// With --prepare (what `npm test` runs) `npm run check` and the build come first, as two chains side by side, one per
// core: check's type check alone, and check's linters then the build. The build skips its own type check (--noCheck)
// because the first chain checks src and everything else; its JavaScript is the same either way. Tests start only
// when both chains passed.
//
//   node scripts/test.ts [--prepare] [--concurrency N] [--timeout MS] [file or glob …]
import { spawn } from 'node:child_process';
import { existsSync, globSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { parseArgs } from 'node:util';

// Files known to take longest (real agents, Chromium, npm pack), for a first run with no recorded times. A name that
// no longer exists is ignored; a new slow file simply runs in name order until its time is recorded.
const SLOW_HINT = [
  'test/provider/codex-legacy.test.ts',
  'test/browser/browser-provider.test.ts',
  'test/hub/hub-acp-real.test.ts',
  'test/attach/opencode-agent.test.ts',
  'test/attach/opencode-user-server.test.ts',
  'test/hub/ux-dashboard.test.ts',
  'test/package/pack-install.test.ts',
  'test/agents/acp-opencode.test.ts',
  'test/connect/connect-cli.test.ts',
  'test/provider/claude-provider.test.ts',
  'test/connect/connect-opencode.test.ts',
  'test/hub/operator-cli.test.ts',
  'test/provider/codex-job-limits.test.ts',
  'test/connect/connect-gemini.test.ts',
  'test/connect/connect-claude.test.ts',
  'test/provider/claude-agent.test.ts',
  'test/hub/user-config.test.ts',
];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    concurrency: { type: 'string', default: '4' },
    timeout: { type: 'string', default: '300000' },
    prepare: { type: 'boolean', default: false },
  },
});

/** Runs the commands one after another (npm puts node_modules/.bin first on PATH); resolves to their output and
 * whether all passed. Output is held back so the two chains never interleave. */
async function chain(commands: string[][]): Promise<{ ok: boolean; output: string }> {
  let output = '';
  for (const [cmd, ...args] of commands) {
    output += `> ${[cmd, ...args].join(' ')}\n`;
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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

if (values.prepare) {
  const results = await Promise.all([
    chain([['npm', 'run', '-s', 'typecheck']]),
    chain([
      ['npm', 'run', '-s', 'lint'],
      ['npm', 'run', '-s', 'build', '--', '--noCheck'],
    ]),
  ]);
  for (const r of results) process.stdout.write(r.output);
  if (!results.every((r) => r.ok)) {
    console.error('checks or build failed; no tests run');
    process.exit(1);
  }
}

const root = process.cwd();
const patterns = positionals.length > 0 ? positionals : ['test/**/*.test.ts'];
const files = [...new Set(patterns.flatMap((p) => globSync(p)).map((f) => relative(root, resolve(f))))];
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
const stream = run({
  files: files.map((f) => resolve(root, f)),
  concurrency: Number(values.concurrency),
  timeout: Number(values.timeout),
});
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.on('test:summary', (s) => {
  if (s.file) durations[relative(root, s.file)] = Math.round(s.duration_ms);
  else if (!s.success || s.counts.cancelled > 0) process.exitCode = 1;
});
stream.on('end', () => {
  try {
    writeFileSync(timesFile, `${JSON.stringify(durations)}\n`);
  } catch {
    // The record only orders the next run; failing to keep it changes no result.
  }
});
stream.compose(spec).pipe(process.stdout);
