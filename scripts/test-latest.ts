// `npm run test:latest`: the adapter suites against the registry's newest release of each agent CLI, to catch an
// upstream change the week it ships. Each agent is installed alone into a scratch prefix and its suites run with
// BATON_TEST_AGENTS_DIR pointing there (test/support/bins.ts), so a failure belongs to that agent; the other agents stay
// the pinned copies. Needs the npm registry, so it is not part of `npm test`. Prints one line per agent: name, version,
// pass or FAIL (with the log's path). Logs are kept in tmp/test-latest/.
//
//   node scripts/test-latest.ts [agent[@version] …]   (agents: codex, claude-code, gemini-cli, opencode, dsh)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const LOGS = join(ROOT, 'tmp', 'test-latest');
/** Bound of one `npm install` and of one agent's suites. */
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const SUITES_TIMEOUT_MS = 20 * 60_000;

/**
 * `with`: more packages installed beside it at their newest. `peersByName`: the package's own peer dependencies are
 * installed by name at their declared ranges with npm's automatic peer installs off, as docs/agents-acp.md tells a
 * DeepSeek Harness user (its peer ranges stall npm's resolver; the ACP bridge's peers name parts never published).
 */
const AGENTS: Record<string, { pkg: string; with?: string[]; peersByName?: boolean; files: string[] }> = {
  codex: {
    pkg: '@openai/codex',
    files: [
      'test/e2e/codex/adapter.test.ts',
      'test/e2e/codex/sandbox.test.ts',
      'test/e2e/codex/app-server-client.test.ts',
      'test/e2e/codex/engine-codex.test.ts',
      'test/e2e/codex/cancel-commands.test.ts',
      'test/e2e/provider/codex-appserver.test.ts',
      'test/e2e/attach/attach-codex.test.ts',
    ],
  },
  'claude-code': {
    pkg: '@anthropic-ai/claude-code',
    files: ['test/e2e/provider/claude-provider.test.ts', 'test/e2e/provider/claude-code-stdio.test.ts'],
  },
  'gemini-cli': {
    pkg: '@google/gemini-cli',
    files: ['test/e2e/agents/acp-real.test.ts', 'test/e2e/provider/gemini-provider.test.ts'],
  },
  opencode: {
    pkg: 'opencode-ai',
    files: [
      'test/e2e/agents/acp-real.test.ts',
      'test/e2e/attach/opencode-user-server.test.ts',
      'test/e2e/hub/targets-real.test.ts',
    ],
  },
  dsh: {
    pkg: '@deepseek-ai/dsh',
    with: ['@deepseek-ai/dsh-acp'],
    peersByName: true,
    files: ['test/e2e/agents/acp-dsh.test.ts'],
  },
};

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// `name` or `name@version` (a release to try instead of the newest).
const pinnedTo = new Map<string, string | undefined>();
for (const arg of process.argv.slice(2)) {
  const [name = '', version] = arg.split('@');
  if (!Object.hasOwn(AGENTS, name)) {
    console.error(`unknown agent "${name}"; choose from ${Object.keys(AGENTS).join(', ')}`);
    process.exit(2);
  }
  pinnedTo.set(name, version || undefined);
}

mkdirSync(LOGS, { recursive: true });
const build = spawnSync(npm, ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) {
  console.error('the build failed; nothing was run');
  process.exit(1);
}

const scratch = mkdtempSync(join(tmpdir(), 'baton-latest-'));
const lines: string[] = [];
let failed = false;
try {
  for (const [name, agent] of Object.entries(AGENTS)) {
    if (pinnedTo.size && !pinnedTo.has(name)) continue;
    const log = join(LOGS, `${name}.log`);
    const where = relative(process.cwd(), log);
    let version: string;
    try {
      const spec = `${agent.pkg}@${pinnedTo.get(name) ?? 'latest'}`;
      version = execFileSync(npm, ['view', spec, 'version'], { encoding: 'utf8', timeout: 60_000 }).trim();
    } catch (err) {
      failed = true;
      lines.push(`${name.padEnd(12)} ?          FAIL: npm view ${agent.pkg} failed: ${firstLine(err)}`);
      continue;
    }
    const prefix = join(scratch, name);
    mkdirSync(prefix);
    writeFileSync(join(prefix, 'package.json'), '{"private":true}\n');
    const specs = [`${agent.pkg}@${version}`, ...(agent.with ?? [])];
    const flags = ['--no-audit', '--no-fund', '--no-package-lock', '--loglevel', 'error'];
    if (agent.peersByName) {
      try {
        specs.push(...peerSpecs(`${agent.pkg}@${version}`));
      } catch (err) {
        failed = true;
        lines.push(`${name.padEnd(12)} ${version.padEnd(10)} FAIL: npm view of its peers failed: ${firstLine(err)}`);
        continue;
      }
      flags.push('--legacy-peer-deps');
    }
    // One spec per package: the first named wins (the agent, then what goes with it, then peers).
    const byName = new Map<string, string>();
    for (const spec of specs) {
      const at = spec.indexOf('@', 1);
      const pkgName = at === -1 ? spec : spec.slice(0, at);
      if (!byName.has(pkgName)) byName.set(pkgName, spec);
    }
    const install = spawnSync(npm, ['install', ...flags, ...byName.values()], {
      cwd: prefix,
      encoding: 'utf8',
      timeout: INSTALL_TIMEOUT_MS,
    });
    if (install.status !== 0) {
      failed = true;
      writeFileSync(log, `${install.stdout ?? ''}${install.stderr ?? ''}${install.error ? String(install.error) : ''}`);
      lines.push(`${name.padEnd(12)} ${version.padEnd(10)} FAIL: could not install (${where})`);
      continue;
    }
    const run = spawnSync(process.execPath, ['scripts/test.ts', ...agent.files], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: SUITES_TIMEOUT_MS,
      env: { ...process.env, BATON_TEST_AGENTS_DIR: join(prefix, 'node_modules') },
    });
    writeFileSync(log, `${run.stdout ?? ''}${run.stderr ?? ''}${run.error ? String(run.error) : ''}`);
    const counts = /ℹ pass (\d+)[\s\S]*?ℹ fail (\d+)/.exec(run.stdout ?? '');
    const summary = counts ? `${counts[1]} passed, ${counts[2]} failed` : 'no test summary';
    if (run.status === 0) lines.push(`${name.padEnd(12)} ${version.padEnd(10)} pass (${summary})`);
    else {
      failed = true;
      lines.push(`${name.padEnd(12)} ${version.padEnd(10)} FAIL (${summary}; ${where})`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5 });
}
console.log(lines.join('\n'));
process.exitCode = failed ? 1 : 0;

/** `name@range` of each peer dependency a package (a spec npm view takes) declares. */
function peerSpecs(spec: string): string[] {
  const out = execFileSync(npm, ['view', spec, 'peerDependencies', '--json'], { encoding: 'utf8', timeout: 60_000 });
  const peers = (out.trim() ? JSON.parse(out) : {}) as Record<string, string>;
  return Object.entries(peers).map(([name, range]) => `${name}@${range}`);
}

function firstLine(err: unknown): string {
  return (err as Error).message.split('\n')[0] ?? '';
}
