// The `local` target's secrets fence, for real: a hub whose scripted ACP agent runs under bubblewrap tries to read
// baton's config, tokens, state dir, store and the hub's environment by every path it can name, then calls the hub
// with whatever it found. Beside it, the same agent on an unfenced target reads them all: the contrast shows the
// probe would notice a fence that stopped working. Linux with bubblewrap (the CI image installs it).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { groupsWithEnvironment } from '../../../src/lib/process-group.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  batonHome,
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  runGroup,
  startHub,
  waitForEvent,
  writeCliConfig,
} from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const runBaton = (args: string[], env: NodeJS.ProcessEnv) =>
  runGroup(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), ...args], env);

/** The processes of a group that are not zombies (from /proc). */
function runningInGroup(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return Number(pgrp) === pgid && state !== 'Z';
      } catch {
        return false;
      }
    })
    .map(Number);
}

interface Reached {
  read: Record<string, string>;
  write: Record<string, string>;
  hub: number[];
}

function reachedOf(text: string): Reached {
  assert.ok(text.startsWith('reach:'), text);
  return JSON.parse(text.slice('reach:'.length)) as Reached;
}

async function answer(client: Awaited<ReturnType<typeof connectCaller>>, taskId: string): Promise<string> {
  return (await call<{ text: string }>(client, 'agent_result', { taskId })).text;
}

test('secrets fence: a delegated agent reads none of baton’s files or the hub’s environment, and its round succeeds', async (t) => {
  const dir = tempDir(t, 'baton-fence-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  // The user's home holds baton's config the usual way ($HOME/.config/baton), here a link to the test's baton home.
  const home = join(dir, 'home');
  mkdirSync(join(home, '.config'), { recursive: true });
  symlinkSync(batonHome(dir), join(home, '.config', 'baton'));
  const hub = await startHub(
    t,
    {
      dir,
      roots: [work],
      agents: { fenced: scripted.entry, open: { ...scripted.entry, target: 'open' } },
      targets: { open: { kind: 'local', fence: false } },
    },
    { HOME: home },
  );
  const hubPid = hub.group.child.pid!;
  const stateDir = hub.stateDir;
  const read = [
    hub.configPath,
    '$HOME/.config/baton/config.json',
    // $BATON_HOME never reaches an agent's environment; a prompt-injected agent would guess the path, as here.
    join(batonHome(dir), 'config.json'),
    join(batonHome(dir), 'connections', 'tokens.env'),
    stateDir,
    join(stateDir, 'baton.db'),
    `/proc/${hubPid}/environ`,
  ];
  const script = acpScript([{ reach: { read, hub: hub.url } }]);
  const alice = await connectCaller(t, hub, 'alice');

  const fenced = await call<{ taskId: string; target: string }>(alice, 'agent_run', {
    agent: 'fenced',
    prompt: script,
    cwd: work,
    idempotencyKey: 'fenced',
  });
  assert.equal(fenced.target, 'local', 'the task view names its target');
  assert.equal((await followToEnd(alice, fenced.taskId)).state, 'succeeded');
  const inside = reachedOf(await answer(alice, fenced.taskId));
  for (const path of read.filter((p) => p !== stateDir))
    assert.equal(inside.read[path], 'error:ENOENT', `${path} is not there for a fenced agent`);
  assert.equal(inside.read[stateDir], 'dir:', 'the state dir is an empty directory');
  assert.deepEqual(inside.hub, [401], 'nothing found, so the hub refuses the call');

  // The same agent without the fence: every file is there and the control token it finds opens the hub.
  const open = await call<{ taskId: string; target: string }>(alice, 'agent_run', {
    agent: 'open',
    prompt: script,
    cwd: work,
    idempotencyKey: 'open',
  });
  assert.equal(open.target, 'open');
  assert.equal((await followToEnd(alice, open.taskId)).state, 'succeeded');
  const outside = reachedOf(await answer(alice, open.taskId));
  for (const path of read.filter((p) => p !== stateDir))
    assert.match(outside.read[path]!, /^ok:\d+$/, `${path} is readable without the fence`);
  assert.ok(outside.hub.includes(200), `the control token read from the config opens the hub: ${outside.hub}`);
  assert.ok(readFileSync(hub.configPath, 'utf8').includes(CONTROL_TOKEN));

  // The operator's views name each agent's target and what it fences.
  const agents = await call<{ agents: Array<{ name: string; target: string; fence: string }> }>(
    alice,
    'agent_agents',
    {},
  );
  assert.deepEqual(agents.agents.map((a) => [a.name, a.target, a.fence]).sort(), [
    ['fenced', 'local', 'secrets'],
    ['open', 'open', 'off'],
  ]);
  const env = isolatedEnv(dir, { HOME: home });
  const cli = writeCliConfig(hub, join(dir, 'cli', 'config.json'));
  const health = JSON.parse((await runBaton(['--config', cli, 'health'], env)).stdout) as {
    agents: Array<{ name: string; target: string }>;
    targets: Array<{ name: string; fence: string; warning?: string }>;
  };
  assert.deepEqual(
    health.targets.map((x) => [x.name, x.fence, x.warning]),
    [
      ['local', 'secrets', undefined],
      ['open', 'off', undefined],
    ],
  );
  const list = await runBaton(['--config', cli, 'tasks', 'list'], env);
  assert.match(list.stdout, /^TASK\s+CALLER\s+AGENT\s+TARGET\s+STATE/m);
  assert.match(list.stdout, new RegExp(`^${fenced.taskId}\\s+alice\\s+fenced\\s+local\\s+succeeded`, 'm'));
});

test('secrets fence: cancel reaches the fenced agent and its whole tree', async (t) => {
  const dir = tempDir(t, 'baton-fence-cancel-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { fenced: scripted.entry } });
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ spawnChild: true }, { ignoreCancel: true }]),
    cwd: work,
    idempotencyKey: 'cancel-1',
  });
  await waitForEvent(alice, run.taskId, (e) => e.kind === 'session');
  const marker = { ACP_TEST_AGENT_RECORD: scripted.record };
  // The agent and its grandchild carry the record path in their environment; bubblewrap leads their group.
  await until(() => readFileSync(scripted.record, 'utf8').includes('"grandchild"'), {
    what: 'the agent to start a grandchild',
  });
  const groups = [...groupsWithEnvironment(marker)];
  assert.equal(groups.length, 1, 'agent and grandchild in one group');
  assert.match(readFileSync(`/proc/${groups[0]}/cmdline`, 'utf8'), /bwrap/, 'bubblewrap leads the group');
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'cancelled');
  assert.equal(groupsWithEnvironment(marker).size, 0, 'nothing of the agent survives the cancel');
});

test('secrets fence unavailable: doctor and serve warn in one line with the fix, the task still runs', async (t) => {
  const dir = tempDir(t, 'baton-fence-none-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const setup = {
    dir,
    roots: [work],
    agents: { scripted: scripted.entry },
    targets: { local: { kind: 'local', bwrap: join(dir, 'no-such-bwrap') } },
  };
  const hub = await startHub(t, setup);
  const warning =
    /^warning: target "local": agents run without the secrets fence \(bubblewrap not found at .*no-such-bwrap\) and can read baton's tokens; install it \(Debian\/Ubuntu: apt-get install bubblewrap/m;
  assert.match(hub.output(), warning);
  const doctor = await runBaton(['--config', hub.configPath, 'doctor'], isolatedEnv(dir));
  assert.match(doctor.stdout, warning);
  assert.equal(doctor.stdout.match(/^warning: /gm)?.length, 1, 'one line');
  const alice = await connectCaller(t, hub, 'alice');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ reach: { read: [hub.configPath] } }]),
    cwd: work,
    idempotencyKey: 'unfenced',
  });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  assert.match(reachedOf(await answer(alice, run.taskId)).read[hub.configPath]!, /^ok:/, 'it ran unfenced');
  const agents = await call<{ agents: Array<{ name: string; target: string; fence: string }> }>(
    alice,
    'agent_agents',
    {},
  );
  assert.deepEqual(
    agents.agents.map((a) => [a.name, a.target, a.fence]),
    [['scripted', 'local', 'off']],
    'agent_agents says the fence is off',
  );
});

test('an agent naming an unknown target is a config error naming it', async (t) => {
  const dir = tempDir(t, 'baton-target-unknown-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  await assert.rejects(
    startHub(t, { dir, roots: [work], agents: { scripted: { ...scripted.entry, target: 'buildbox' } } }),
    /agents\.scripted\.target: unknown target "buildbox" \(known: local; define it under "targets"\)/,
  );
});

test('secrets fence: an interrupt reaches a fenced CLI, which stops in its own time; bwrap exits with it', async (t) => {
  const dir = tempDir(t, 'baton-fence-sigint-');
  const { createTarget } = await import('../../../src/agents/targets/target.ts');
  const { runCli } = await import('../../../src/agents/cli-process.ts');
  const target = createTarget('local', { kind: 'local' }, { privateDirs: [join(dir, 'private')], roots: () => [] });
  const marker = join(dir, 'stopped-gracefully');
  // A CLI that takes its time over an interrupt and says so, as Claude Code finishing its session file does.
  const script = `process.on('SIGINT', () => setTimeout(() => { require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'yes'); process.exit(0); }, 300)); console.log('{"ready":true}'); setInterval(() => {}, 1000);`;
  const controller = new AbortController();
  const pgids: number[] = [];
  let leader = '';
  const run = runCli({
    command: process.execPath,
    args: ['-e', script],
    cwd: dir,
    env: { PATH: process.env.PATH ?? '' },
    target,
    signal: controller.signal,
    interruptGraceMs: 5_000,
    onProcessGroup: (pgid) => pgids.push(pgid),
    onJson: () => {
      leader = readFileSync(`/proc/${pgids[0]}/cmdline`, 'utf8');
      controller.abort();
    },
  });
  const outcome = await run.done;
  assert.equal(outcome.aborted, true);
  assert.equal(outcome.acknowledged, true, 'the CLI stopped within the grace on its own');
  assert.deepEqual(outcome.exit, { code: 0, signal: null }, "bwrap's exit is the CLI's own");
  assert.equal(readFileSync(marker, 'utf8'), 'yes', 'the CLI had its time to finish');
  assert.match(leader, /bwrap/, 'it ran behind the fence');
  // bwrap's namespace init may linger as a zombie until the machine's init reaps it; nothing of the group runs.
  assert.deepEqual(runningInGroup(pgids[0]!), [], 'nothing of its group runs');
});
