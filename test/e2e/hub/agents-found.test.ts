// Agents are found where users have them: the user's PATH and the usual install places, never baton's own
// node_modules/.bin (which npm scripts put first); doctor's preflight table names the binary it found; the service
// unit carries the PATH it was installed with; and a refused /mcp request is logged with caller and reason, never the
// token.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { HubConfig } from '../../../src/faces/hub/config.ts';
import { serviceFiles } from '../../../src/faces/hub/service.ts';
import { agentSearchPath, findAgentBinary } from '../../../src/lib/agent-path.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { startHub, TEST_CALLERS } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);
const OWN_BIN = join(REPO_ROOT, 'node_modules', '.bin');

test('the search path drops the package and its ancestors’ node_modules/.bin and appends the usual install places', (t) => {
  const dir = tempDir(t, 'baton-path-');
  const root = join(dir, 'proj', 'node_modules', 'baton-mcp');
  const home = join(dir, 'home');
  const path = agentSearchPath(
    [join(root, 'node_modules', '.bin'), join(dir, 'proj', 'node_modules', '.bin'), '/usr/bin', 'relative/bin'].join(
      delimiter,
    ),
    { root, home, env: {} },
  ).split(delimiter);
  assert.equal(path[0], '/usr/bin', 'the user PATH comes first, without baton’s own dirs or relative entries');
  assert.ok(!path.some((d) => d.includes('node_modules/.bin')));
  for (const usual of ['.local/bin', '.opencode/bin', '.npm-global/bin'])
    assert.ok(path.includes(join(home, usual)), `${usual} is searched`);
  assert.ok(path.includes('/usr/local/bin'));

  // A checkout's own devDependency copy of an agent is never chosen, even first on PATH.
  assert.ok(existsSync(join(OWN_BIN, 'codex')), 'the checkout has a codex in node_modules/.bin');
  const userBin = join(dir, 'user-bin');
  mkdirSync(userBin);
  symlinkSync(bins.codex(), join(userBin, 'codex'));
  assert.equal(findAgentBinary('codex', [OWN_BIN, userBin].join(delimiter)), join(userBin, 'codex'));
});

test('init and doctor find the user’s codex, not the checkout’s; service install writes that PATH', async (t) => {
  const dir = tempDir(t, 'baton-found-');
  const userBin = join(dir, 'user-bin');
  const project = join(dir, 'project');
  mkdirSync(userBin);
  mkdirSync(project);
  symlinkSync(bins.codex(), join(userBin, 'codex'));
  const cfg = join(dir, 'cfg', 'config.json');
  // As under `npm run`: baton's own node_modules/.bin first, then the user's dirs.
  const PATH = [OWN_BIN, userBin, '/usr/bin', '/bin'].join(delimiter);
  const env = { PATH, HOME: join(dir, 'home'), LANG: 'C.UTF-8' };
  const baton = (args: string[]) =>
    run(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', cfg, ...args], {
      cwd: dir,
      env,
    }).catch((e: { code: number; stdout: string; stderr: string }) => e);

  const init = await baton(['init', '--root', project]);
  assert.match(init.stdout, /agents found: .*\bcodex\b/);
  const config = JSON.parse(readFileSync(cfg, 'utf8'));
  assert.deepEqual(config.agents.codex, { kind: 'codex' });

  const doctor = await baton(['doctor']);
  const lines = doctor.stdout.split('\n');
  assert.match(lines[0]!, /^status\s+agent\s+kind\s+binary\s+version\s+login\s+result$/);
  const codexRow = lines.find((l) => /^\S+\s+codex\s+codex\s/.test(l));
  assert.ok(codexRow, doctor.stdout);
  assert.ok(codexRow.includes(join(userBin, 'codex')), `doctor names the user's binary:\n${doctor.stdout}`);
  assert.match(codexRow, /\b\d+\.\d+\.\d+\b/, 'and its version');
  assert.ok(!doctor.stdout.includes(OWN_BIN), 'nothing from baton’s own node_modules/.bin');

  const dry = await baton(['service', 'install', '--dry-run']);
  const line = dry.stdout.split('\n').find((l) => l.startsWith('Environment='));
  assert.ok(line, dry.stdout);
  const unitPath = line.replace(/^Environment="?PATH=/, '').replace(/"$/, '');
  assert.ok(unitPath.startsWith([userBin, '/usr/bin', '/bin'].join(delimiter)), line);
  assert.ok(!unitPath.includes(OWN_BIN), 'the unit does not carry baton’s own node_modules/.bin');
});

test('the launchd plist carries the PATH too (EnvironmentVariables)', () => {
  const cfg = { path: '/home/u/.config/baton/config.json', stateDirPath: '/home/u/.local/state/baton' } as HubConfig;
  const plan = serviceFiles(cfg, '/usr/local/bin/baton', { platform: 'darwin', pathEnv: '/opt/homebrew/bin:/a&b' });
  const plist = plan.install[0]!.describe;
  assert.match(
    plist,
    /<key>EnvironmentVariables<\/key>\s*<dict>\s*<key>PATH<\/key><string>\/opt\/homebrew\/bin:\/a&amp;b<\/string>/,
  );
  const unit = serviceFiles(cfg, '/usr/local/bin/baton', { platform: 'linux', pathEnv: '/x y:/100%' }).install[0]!;
  assert.match(unit.describe, /^Environment="PATH=\/x y:\/100%%"$/m);
});

test('a refused /mcp request is logged with the caller and the reason, never the token', async (t) => {
  const dir = tempDir(t, 'baton-401-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, { dir, roots: [work], agents: {} });
  const wrongToken = 'wrong-token-0123456789abcdef0123456789abcdef';
  const cases: Array<{ caller: string; authorization?: string; reason: string }> = [
    { caller: 'alice', reason: 'missing authorization header' },
    { caller: 'alice', authorization: 'Bearer', reason: 'not a Bearer header' },
    { caller: 'alice', authorization: `Bearer ${'$'}{BATON_TOKEN_ALICE}`, reason: 'unexpanded env-var placeholder' },
    { caller: 'alice', authorization: `Bearer ${wrongToken}`, reason: 'wrong token' },
    { caller: 'alice', authorization: `Bearer ${TEST_CALLERS.bob}`, reason: 'wrong token' },
    { caller: 'zed', authorization: `Bearer ${TEST_CALLERS.alice}`, reason: 'unknown caller' },
  ];
  for (const c of cases) {
    const res = await fetch(`${hub.url}/mcp/${c.caller}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(c.authorization ? { authorization: c.authorization } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(res.status, 401);
    await res.body?.cancel();
  }
  // The hub writes the log line before it answers, so the state-dir log already holds all of them.
  const log = readFileSync(join(hub.stateDir, 'baton.log'), 'utf8');
  const refused = log
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.msg === 'unauthorized request');
  assert.deepEqual(
    refused.map((e) => ({ caller: e.caller, reason: e.reason, endpoint: e.endpoint, level: e.level })),
    cases.map((c) => ({ caller: c.caller, reason: c.reason, endpoint: 'mcp', level: 'warn' })),
  );
  for (const secret of [wrongToken, TEST_CALLERS.alice, TEST_CALLERS.bob])
    assert.ok(!log.includes(secret) && !hub.output().includes(secret), 'no token in the log');
});
