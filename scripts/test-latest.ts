// `npm run test:latest`: the adapter suites against the registry's newest release of each agent CLI, to catch an
// upstream change the week it ships. Each agent is installed alone into a scratch prefix and its suites run with
// BATON_TEST_AGENTS_DIR pointing there (test/support/bins.ts), so a failure belongs to that agent; the other agents stay
// the pinned copies. Needs the npm registry, so it is not part of `npm test`. Prints one line per agent: name, version,
// pass or FAIL (with the log's path). Logs are kept in tmp/test-latest/.
//
//   node scripts/test-latest.ts [agent …]      (agents: codex, claude-code, gemini-cli, opencode)
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const LOGS = join(ROOT, 'tmp', 'test-latest');
/** Bound of one `npm install` and of one agent's suites. */
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const SUITES_TIMEOUT_MS = 20 * 60_000;

const AGENTS: Record<string, { pkg: string; files: string[] }> = {
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
};

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const chosen = process.argv.slice(2);
for (const name of chosen)
  if (!Object.hasOwn(AGENTS, name)) {
    console.error(`unknown agent "${name}"; choose from ${Object.keys(AGENTS).join(', ')}`);
    process.exit(2);
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
    if (chosen.length && !chosen.includes(name)) continue;
    const log = join(LOGS, `${name}.log`);
    const where = relative(process.cwd(), log);
    let version: string;
    try {
      version = execFileSync(npm, ['view', agent.pkg, 'version'], { encoding: 'utf8', timeout: 60_000 }).trim();
    } catch (err) {
      failed = true;
      lines.push(
        `${name.padEnd(12)} ?          FAIL: npm view ${agent.pkg} failed: ${(err as Error).message.split('\n')[0]}`,
      );
      continue;
    }
    const prefix = join(scratch, name);
    mkdirSync(prefix);
    writeFileSync(join(prefix, 'package.json'), '{"private":true}\n');
    const install = spawnSync(
      npm,
      ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel', 'error', `${agent.pkg}@${version}`],
      { cwd: prefix, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS },
    );
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
// DeepSeek Harness has no release that installs from the registry (docs/agents-acp.md), so it has no line here.
console.log(lines.join('\n'));
process.exitCode = failed ? 1 : 0;
