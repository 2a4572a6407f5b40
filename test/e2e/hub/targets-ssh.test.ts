// The `ssh` target, for real: an OpenSSH server the test starts on a loopback port (test/support/sshd.ts), the hub's
// OpenSSH client with one multiplexed connection, and the scripted ACP agent started on the "remote" host through it.
// The agent proves where it runs by the variables sshd gives a session (SSH_CONNECTION), which the hub has not.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { minimalCodexConfig } from '../../../src/agents/codex/home.ts';
import { SshTarget } from '../../../src/agents/targets/ssh.ts';
import { loadConfig } from '../../../src/faces/hub/config.ts';
import { AnthropicMock } from '../../mock-models/anthropic.ts';
import { reply, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins, binVersions, REPO_ROOT } from '../../support/bins.ts';
import { codexTestDir, startResponsesMock } from '../../support/codex.ts';
import { git } from '../../support/git.ts';
import { call, connectCaller, followToEnd, isolatedEnv, startHub, writeHubConfig } from '../../support/hub.ts';
import { processesWithEnvironment, until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { startSshd } from '../../support/sshd.ts';
import { tempDir } from '../../support/tmp.ts';

/** A test dir with a running sshd, a git work tree as the target's one root, and the scripted agent's entry. */
async function sshSetup(t: Parameters<typeof tempDir>[0], targetExtra: Record<string, unknown> = {}) {
  const dir = tempDir(t, 'baton-ssh-');
  mkdirSync(join(dir, 'sshd'), { mode: 0o700 });
  const sshd = await startSshd(t, join(dir, 'sshd'));
  const scripted = scriptedAgentSetup(dir);
  // A test that fails half way leaves nothing of its agents running on the "host".
  t.after(() => {
    for (const p of processesWithEnvironment({ ACP_TEST_AGENT_RECORD: scripted.record }))
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {}
  });
  git(scripted.work, 'init', '-q', '-b', 'main');
  writeFileSync(join(scripted.work, 'README'), 'hello\n');
  git(scripted.work, 'add', 'README');
  git(scripted.work, 'commit', '-q', '-m', 'first');
  const worktrees = join(dir, 'remote-worktrees');
  const setup = {
    dir,
    // The hub's own roots are this machine's; the target's roots are the remote host's.
    roots: [] as string[],
    agents: { remote: { ...scripted.entry, target: 'box' } },
    targets: { box: { ...sshd.target([scripted.work]), worktreesDir: worktrees, ...targetExtra } },
  };
  return { dir, sshd, setup, worktrees, ...scripted };
}

/**
 * One round on the ssh target that must succeed: an agent_run (given a cwd) or an agent_continue (given a taskId),
 * followed to its end; the task id and the answer.
 */
async function roundOnBox(
  client: Parameters<typeof call>[0],
  args: { prompt: string; idempotencyKey: string } & ({ cwd: string } | { taskId: string }),
): Promise<{ taskId: string; text: string }> {
  let taskId: string;
  if ('taskId' in args) {
    taskId = args.taskId;
    await call(client, 'agent_continue', args);
  } else {
    const run = await call<{ taskId: string; target: string }>(client, 'agent_run', args);
    assert.equal(run.target, 'box');
    taskId = run.taskId;
  }
  const end = await followToEnd(client, taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  return { taskId, text: (await call<{ text: string }>(client, 'agent_result', { taskId })).text };
}

const records = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

test('ssh: a round runs on the host, continues, reports snapshots of the remote tree, and a cancel stops the remote group', async (t) => {
  const s = await sshSetup(t);
  const hub = await startHub(t, s.setup);
  assert.match(hub.output(), /target box \(ssh [^)]*127\.0\.0\.1:\d+\): another machine/);
  const alice = await connectCaller(t, hub, 'alice');
  const metachars = `it's "quoted" $(touch pwned) \`touch pwned2\` ; | & > $HOME \\ *`;
  const run = await call<{ taskId: string; target: string }>(alice, 'agent_run', {
    prompt: acpScript([
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion the remote agent runs
      { sh: 'echo "conn=${SSH_CONNECTION:+yes} pwd=$(pwd)"' },
      { writeFile: { name: 'made.txt', content: 'made remotely\n' } },
      { reply: metachars },
    ]),
    cwd: s.work,
    idempotencyKey: 'ssh-1',
  });
  assert.equal(run.target, 'box');
  const agents = await call<{ agents: Array<{ name: string; target: string; fence: string; version?: string }> }>(
    alice,
    'agent_agents',
    {},
  );
  assert.deepEqual(
    agents.agents.map((a) => [a.name, a.target, a.fence, a.version]),
    [['remote', 'box', 'remote', '9.8.7']],
    'probed on the host',
  );
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  const text = (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text;
  assert.ok(text.includes(`conn=yes pwd=${s.work}`), text);
  assert.ok(text.endsWith(metachars), text);
  assert.equal(existsSync(join(s.work, 'pwned')), false);
  assert.equal(existsSync(join(s.work, 'pwned2')), false);
  // The snapshots were taken on the host, of the remote work tree.
  const status = await call<{
    rounds: Array<{ gitBefore: { git: boolean; branch: string }; gitAfter: { dirty: unknown } }>;
  }>(alice, 'agent_status', { taskId: run.taskId });
  assert.equal(status.rounds[0]!.gitBefore.git, true, JSON.stringify(status.rounds[0]));
  assert.equal(status.rounds[0]!.gitBefore.branch, 'main');
  assert.deepEqual(status.rounds[0]!.gitAfter.dirty, [{ path: 'made.txt', status: '??' }]);

  await call(alice, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ history: true }]),
    idempotencyKey: 'ssh-2',
  });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text, 'history:1');

  await call(alice, 'agent_continue', {
    taskId: run.taskId,
    prompt: acpScript([{ spawnChild: true }, { stall: true }]),
    idempotencyKey: 'ssh-3',
  });
  await until(() => records(s.record).find((r) => r.event === 'grandchild'), { what: 'the remote grandchild' });
  const remoteGroup = () => processesWithEnvironment({ ACP_TEST_AGENT_RECORD: s.record });
  assert.ok(remoteGroup().length >= 2, 'the agent and its grandchild run');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'cancelled');
  assert.deepEqual(remoteGroup(), [], 'the remote group is gone, grandchild included');
  // One connection served every round: the sshd listener has one session process.
  assert.equal(s.sshd.sessions().length, 1, 'one multiplexed connection');
});

test('ssh: isolation worktree adds the worktree on the host, outside the target roots', async (t) => {
  const s = await sshSetup(t);
  const hub = await startHub(t, s.setup);
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([
      { sh: 'pwd; git branch --show-current' },
      { writeFile: { name: 'in-worktree.txt', content: 'x\n' } },
    ]),
    cwd: s.work,
    isolation: 'worktree',
    idempotencyKey: 'wt-1',
  });
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  const path = join(s.worktrees, run.taskId);
  const text = (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text;
  assert.ok(text.includes(`${path}\nbaton/${run.taskId}`), text);
  assert.equal(readFileSync(join(path, 'in-worktree.txt'), 'utf8'), 'x\n');
  assert.equal(existsSync(join(s.work, 'in-worktree.txt')), false, 'the work tree itself is untouched');
  const status = await call<{ workdir: string; rounds: Array<{ gitAfter: { dirty: unknown } }> }>(
    alice,
    'agent_status',
    {
      taskId: run.taskId,
    },
  );
  assert.equal(status.workdir, path);
  assert.deepEqual(status.rounds[0]!.gitAfter.dirty, [{ path: 'in-worktree.txt', status: '??' }]);
});

test('ssh: a wrong host key, a cwd outside the target roots and an unreachable host are refused before anything runs', async (t) => {
  const s = await sshSetup(t);
  const other = join(s.dir, 'other');
  mkdirSync(other);
  const hub = await startHub(t, {
    ...s.setup,
    agents: {
      remote: { ...s.setup.agents.remote },
      spoofed: { ...s.entry, target: 'spoofed' },
      nowhere: { ...s.entry, target: 'nowhere' },
    },
    targets: {
      box: s.setup.targets.box,
      spoofed: { ...s.setup.targets.box, knownHostsFile: s.sshd.wrongKnownHostsFile },
      // A port nothing listens on: the sshd's own, plus one below the ephemeral range is not guaranteed free; use 1.
      nowhere: { ...s.setup.targets.box, port: 1 },
    },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const refused = async (agent: string, cwd: string) => {
    const res = await alice.callTool({
      name: 'agent_run',
      arguments: { agent, prompt: 'hi', cwd, idempotencyKey: agent + cwd },
    });
    assert.equal(res.isError, true, JSON.stringify(res));
    return JSON.stringify(res.content);
  };
  assert.match(
    await refused('spoofed', s.work),
    /target \\"spoofed\\" \(ssh [^)]*\): cannot reach the host: Host key verification failed/,
  );
  assert.match(
    await refused('nowhere', s.work),
    /target \\"nowhere\\" \(ssh [^)]*:1\): cannot reach the host: .*Connection refused/,
  );
  assert.match(await refused('remote', other), /cwd .*other is outside the roots of target \\"box\\"/);
  assert.match(
    await refused('remote', join(s.work, 'missing')),
    /does not exist or is not a directory on target \\"box\\"/,
  );
  assert.deepEqual((await call<{ tasks: unknown[] }>(alice, 'agent_list', {})).tasks, [], 'nothing was recorded');
  assert.deepEqual(
    records(s.record).filter((r) => r.event === 'session/new'),
    [],
    'no agent session was started',
  );
});

test('ssh: the hub SIGKILLed mid-round; the restart reaps the remote group and marks the round interrupted', async (t) => {
  const s = await sshSetup(t);
  // An agent that ignores TERM and its stdin closing: only the remote group stop ends it.
  (s.setup.agents.remote.env as Record<string, string>).ACP_TEST_AGENT_IGNORE_TERM = '1';
  const setup = { ...s.setup, limits: { cancelGraceMs: 500 } };
  const hub1 = await startHub(t, setup);
  const a1 = await connectCaller(t, hub1, 'alice');
  const run = await call<{ taskId: string }>(a1, 'agent_run', {
    prompt: acpScript([{ spawnChild: true }, { ignoreCancel: true }]),
    cwd: s.work,
    idempotencyKey: 'kill-1',
  });
  await until(() => records(s.record).find((r) => r.event === 'grandchild'), { what: 'the remote grandchild' });
  const remoteGroup = () => processesWithEnvironment({ ACP_TEST_AGENT_RECORD: s.record });
  await hub1.kill();
  // Every ssh client of the dead hub, the master included, is killed too: the remote group is left on its own.
  for (const p of processesWithEnvironment({}).filter(
    (p) => p.cmdline.startsWith('ssh ') && p.cmdline.includes(String(s.sshd.port)),
  ))
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {}
  const grandchild = () => remoteGroup().some((p) => p.cmdline.includes('setInterval'));
  assert.equal(grandchild(), true, 'the remote group outlives the killed hub');
  const hub2 = await startHub(t, setup);
  assert.equal(grandchild(), false, 'the restart stopped the remote group');
  assert.deepEqual(remoteGroup(), []);
  const a2 = await connectCaller(t, hub2, 'alice');
  const after = await call<{ state: string }>(a2, 'agent_status', { taskId: run.taskId });
  assert.equal(after.state, 'interrupted');
});

test('ssh: the connection killed mid-round ends the round interrupted, naming the target and the SSH error', async (t) => {
  const s = await sshSetup(t);
  const hub = await startHub(t, s.setup);
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ stall: true }]),
    cwd: s.work,
    idempotencyKey: 'drop-1',
  });
  await until(() => records(s.record).find((r) => r.event === 'stalling'), { what: 'the remote agent to stall' });
  // The sshd processes serving the connection go: the master and every session on it lose it at once.
  s.sshd.dropConnections();
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'interrupted', JSON.stringify(end.last));
  const status = await call<{ error: string }>(alice, 'agent_status', { taskId: run.taskId });
  assert.match(
    status.error,
    /the SSH connection to target "box" \([^)]*127\.0\.0\.1[^)]*\) was lost during this round: \S/,
  );
});

test('ssh: a connection that goes silent mid-round ends the round interrupted through the keepalive, not a hang', async (t) => {
  const s = await sshSetup(t);
  const hub = await startHub(t, s.setup);
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ stall: true }]),
    cwd: s.work,
    idempotencyKey: 'silent-1',
  });
  await until(() => records(s.record).find((r) => r.event === 'stalling'), { what: 'the remote agent to stall' });
  // Nothing answers on the connection any more, yet it is never closed: only the client's keepalive (every 5 s, given
  // up after 3 unanswered) can tell. The frozen sshd processes are killed before anything else stops.
  const frozen = s.sshd.freezeConnections();
  try {
    const end = await followToEnd(alice, run.taskId);
    assert.equal(end.state, 'interrupted', JSON.stringify(end.last));
    const status = await call<{ error: string }>(alice, 'agent_status', { taskId: run.taskId });
    assert.match(
      status.error,
      /the SSH connection to target "box" \([^)]*127\.0\.0\.1[^)]*\) was lost during this round: \S/,
    );
  } finally {
    for (const pid of frozen)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
  }
});

test('ssh: arguments and variables with shell metacharacters reach the remote process intact', async (t) => {
  const s = await sshSetup(t);
  const target = new SshTarget('box', s.setup.targets.box as never, { stateDir: join(s.dir, 'st') });
  t.after(() => target.close());
  const hostile = [`a'b`, '"$(touch pwned)"', '`touch pwned2`', '; touch pwned3', '$HOME', 'two\nlines', '*', '-x', ''];
  const group = target.spawn(
    process.execPath,
    ['-e', 'process.stdout.write(JSON.stringify([process.argv.slice(1), process.env.HOSTILE]))', ...hostile],
    {
      cwd: s.work,
      env: { ...process.env, HOSTILE: `x'; touch pwned4; echo "$(id)"` },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  group.child.stdout!.on('data', (c: Buffer) => {
    out += c;
  });
  group.child.stdin!.end();
  assert.deepEqual(await group.exited, { code: 0, signal: null });
  await until(() => out.endsWith(']'), { what: 'the remote output' });
  assert.deepEqual(JSON.parse(out), [hostile, `x'; touch pwned4; echo "$(id)"`]);
  assert.deepEqual(
    readdirSync(s.work).filter((f) => f.startsWith('pwned')),
    [],
  );
  assert.equal(execFileSync('ls', [s.work], { encoding: 'utf8' }).includes('pwned'), false);
});

test('ssh: doctor connects to each ssh target and probes the agent there (binary, version, a session)', async (t) => {
  const s = await sshSetup(t);
  const configPath = writeHubConfig({
    ...s.setup,
    agents: {
      remote: { ...s.setup.agents.remote, env: { ...s.entry.env, ACP_TEST_AGENT_VERSION: '9.8.7' } },
      spoofed: { ...s.entry, target: 'spoofed' },
    },
    targets: {
      box: s.setup.targets.box,
      spoofed: { ...s.setup.targets.box, knownHostsFile: s.sshd.wrongKnownHostsFile },
    },
  });
  const res = await promisify(execFile)(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'doctor'],
    { cwd: s.dir, env: isolatedEnv(s.dir) },
  ).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );
  assert.equal(res.code, 1, res.stdout);
  assert.match(res.stdout, /^ok\s+remote\s+acp\s+\S+\s+9\.8\.7.*session ok/m);
  assert.match(
    res.stdout,
    /^FAIL\s+spoofed\s+acp\s.*target "spoofed" \(ssh [^)]*\): cannot reach the host: Host key verification failed/m,
  );
  assert.match(res.stdout, /^target box \(ssh [^)]*127\.0\.0\.1:\d+\): another machine .*; agents: remote$/m);
  assert.match(
    res.stdout,
    /^FAIL: target "spoofed" \(ssh [^)]*\): cannot reach the host: Host key verification failed/m,
  );
  // The probe ran on the host: a session opened there (sshd's variables in the agent's environment), no prompt.
  const seen = records(s.record);
  assert.ok(seen.some((r) => r.event === 'session/new'));
  assert.ok(!seen.some((r) => r.event === 'session/prompt'));
  // No connection outlives the doctor run.
  await until(() => s.sshd.sessions().length === 0, { what: "the doctor's ssh connections to close" });
});

test('ssh: the target entry is strict: a relative or missing root, an unknown key, a flag as host, `local` as ssh', (t) => {
  const dir = tempDir(t, 'baton-ssh-config-');
  const work = join(dir, 'work');
  mkdirSync(work);
  let n = 0;
  const load = (targets: Record<string, Record<string, unknown>>) =>
    loadConfig(
      writeHubConfig({
        dir: join(dir, `c${++n}`),
        roots: [work],
        agents: { remote: { kind: 'acp', command: ['agent'], target: Object.keys(targets)[0] } },
        targets,
      }),
    );
  const box = { kind: 'ssh', host: 'buildbox', roots: ['/srv/src'] };
  assert.equal(load({ box }).targetConfigs.box?.kind, 'ssh');
  assert.throws(
    () => load({ box: { ...box, roots: ['srv/src'] } }),
    /targets\.box\.roots\.0: must be an absolute path/,
  );
  assert.throws(() => load({ box: { ...box, roots: [] } }), /targets\.box\.roots: name at least one project dir/);
  assert.throws(() => load({ box: { ...box, password: 'x' } }), /targets\.box: .*password/);
  assert.throws(() => load({ box: { ...box, host: '-oProxyCommand=x' } }), /targets\.box\.host: must be a host name/);
  assert.throws(() => load({ local: box }), /"local" is this machine: an ssh target needs a name of its own/);
  assert.throws(
    () =>
      loadConfig(
        writeHubConfig({
          dir: join(dir, 'opencode'),
          roots: [work],
          agents: { remote: { kind: 'opencode', target: 'box' } },
          targets: { box },
        }),
      ),
    /agents\.remote\.target: target "box" is an ssh target, and kind "opencode" cannot run on one yet \(acp, codex, claude can\)/,
  );
});

test("ssh: the real Codex app-server runs a round on the host with the remote user's own Codex home, continues it and is cancelled", async (t) => {
  const dir = codexTestDir('baton-ssh-codex-');
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  const work = join(dir, 'work');
  const remoteHome = join(dir, 'remote-codex-home');
  mkdirSync(work);
  mkdirSync(remoteHome, { mode: 0o700 });
  mkdirSync(join(dir, 'sshd'), { mode: 0o700 });
  const mock = await startResponsesMock(t);
  const codex = {
    model: 'mock-model',
    modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
  };
  // The remote user's own Codex home: its config names the model server; baton sends no CODEX_HOME of its own.
  writeFileSync(join(remoteHome, 'config.toml'), minimalCodexConfig(codex));
  const sshd = await startSshd(t, join(dir, 'sshd'), { env: { CODEX_HOME: remoteHome } });
  const hub = await startHub(t, {
    dir,
    roots: [],
    agents: {
      codex: { kind: 'codex', command: [process.execPath, bins.codex()], ...codex, target: 'box' },
    },
    targets: { box: sshd.target([work]) },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const agents = await call<{ agents: Array<{ name: string; fence: string; available: boolean; version?: string }> }>(
    alice,
    'agent_agents',
    {},
  );
  assert.equal(agents.agents[0]?.fence, 'remote');
  assert.equal(agents.agents[0]?.available, true, JSON.stringify(agents));
  mock.push(reply('codex ran remotely'));
  const run = await roundOnBox(alice, { prompt: 'say something', cwd: work, idempotencyKey: 'codex-ssh-1' });
  assert.equal(run.text, 'codex ran remotely');
  // Its thread lives in the remote user's Codex home, not in baton's private home for the agent.
  assert.ok(readdirSync(join(remoteHome, 'sessions')).length > 0, 'the thread was stored in the remote home');
  mock.push(reply('second round'));
  const second = await roundOnBox(alice, { taskId: run.taskId, prompt: 'and again', idempotencyKey: 'codex-ssh-2' });
  assert.equal(second.text, 'second round');
  // The second turn carried the first one: the thread was resumed on the host.
  assert.ok(JSON.stringify(mock.turns.at(-1)!.input).includes('codex ran remotely'));

  // A cancel mid-turn interrupts it and stops the app-server on the host.
  const gate = new Gate();
  t.after(() => gate.open());
  mock.push(stalledReply(gate, 'live!\nxxxxx'));
  await call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'take your time', idempotencyKey: 'codex-ssh-3' });
  await mock.waitForTurn(2);
  const appServers = () =>
    processesWithEnvironment({ CODEX_HOME: remoteHome }).filter((p) => p.cmdline.includes('app-server'));
  assert.ok(appServers().length > 0, 'the app-server runs on the host, under the remote Codex home');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'cancelled');
  assert.deepEqual(appServers(), [], 'the remote app-server is gone');
});

test("ssh: the real Claude Code runs a round on the host with the remote user's own login and config dir, resumes its session there and is cancelled", async (t) => {
  const dir = tempDir(t, 'baton-ssh-claude-');
  const work = join(dir, 'work');
  const remoteConfig = join(dir, 'remote-claude-config');
  mkdirSync(work);
  mkdirSync(remoteConfig, { mode: 0o700 });
  mkdirSync(join(dir, 'sshd'), { mode: 0o700 });
  const anthropic = await AnthropicMock.start();
  t.after(() => anthropic.close());
  // The remote user's own login: the session's environment names the model server, a key and a config dir of that
  // user's. The hub has none of it, so only a Claude started on the host can answer.
  const sshd = await startSshd(t, join(dir, 'sshd'), {
    env: {
      CLAUDE_CONFIG_DIR: remoteConfig,
      ANTHROPIC_BASE_URL: anthropic.origin,
      ANTHROPIC_API_KEY: 'remote-user-key',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    },
  });
  const hub = await startHub(t, {
    dir,
    roots: [],
    agents: { claude: { kind: 'claude', command: bins.claude(), target: 'box' } },
    targets: { box: sshd.target([work]) },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const agents = await call<{ agents: Array<{ fence: string; available: boolean; version?: string }> }>(
    alice,
    'agent_agents',
    {},
  );
  assert.equal(agents.agents[0]?.fence, 'remote');
  assert.equal(agents.agents[0]?.available, true, JSON.stringify(agents));
  assert.equal(agents.agents[0]?.version, binVersions.claude(), 'probed on the host');

  anthropic.push({ kind: 'text', text: 'claude ran remotely' });
  const run = await roundOnBox(alice, { prompt: 'say something', cwd: work, idempotencyKey: 'claude-ssh-1' });
  assert.equal(run.text, 'claude ran remotely');
  assert.equal(anthropic.server.requests.at(-1)?.headers['x-api-key'], 'remote-user-key');
  // Its session lives in the remote user's config dir, which the continue resumes.
  assert.ok(existsSync(join(remoteConfig, 'projects')), 'the session was stored in the remote config dir');
  anthropic.push({ kind: 'text', text: 'second round' });
  const second = await roundOnBox(alice, { taskId: run.taskId, prompt: 'and again', idempotencyKey: 'claude-ssh-2' });
  assert.equal(second.text, 'second round');
  assert.ok(JSON.stringify(anthropic.messageRequests.at(-1)!.messages).includes('claude ran remotely'));

  // A cancel mid-turn stops Claude on the host.
  const gate = new Gate();
  t.after(() => gate.open());
  const before = anthropic.messageRequests.length;
  anthropic.push({ kind: 'stall', gate, text: 'thinking' });
  await call(alice, 'agent_continue', { taskId: run.taskId, prompt: 'take your time', idempotencyKey: 'claude-ssh-3' });
  await until(() => anthropic.messageRequests.length > before, { what: 'Claude to call the model' });
  // Every session on the host has the remote config dir (the remote shell baton keeps open too): Claude's are its own.
  const claudes = () =>
    processesWithEnvironment({ CLAUDE_CONFIG_DIR: remoteConfig }).filter((p) => p.cmdline.includes('claude'));
  assert.ok(claudes().length > 0, 'Claude runs on the host, under the remote config dir');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'cancelled');
  await until(claudes, { what: 'Claude on the host to be gone', ok: (p) => p.length === 0 });
});
