// `baton tasks` (UX-1) against a real hub daemon with the scripted ACP agent: the operator sees every caller's tasks
// over the control endpoint while MCP callers keep seeing only their own.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
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
  TEST_CALLERS,
  waitForEvent,
  writeCliConfig,
} from '../../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

/** Runs `baton --config <config> tasks ...` to its end and returns its exit code and output. */
const baton = (configPath: string, ...args: string[]) =>
  runGroup(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'tasks', ...args],
    isolatedEnv(dirname(dirname(configPath))),
  );

test('baton tasks: list across callers, show, tail to the end, cancel, bad ids', async (t) => {
  const dir = tempDir(t, 'baton-ux-tasks-');
  const { work, entry } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: entry } });
  // The hub listens on a free port; the CLI reads it from a config beside the hub's own.
  const cliConfig = writeCliConfig(hub, join(batonHome(dir), 'cli.json'));
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  const done = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ chunks: ['all done'] }]),
    cwd: work,
    idempotencyKey: 'ux-1',
  });
  assert.equal((await followToEnd(alice, done.taskId)).state, 'succeeded');
  const stalled = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'ux-2',
  });
  await waitForEvent(bob, stalled.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');

  // MCP isolation is unchanged: each caller lists and reads only its own tasks.
  const bobList = await call<{ tasks: Array<{ taskId: string; caller?: string }> }>(bob, 'agent_list', {});
  assert.deepEqual(
    bobList.tasks.map((x) => x.taskId),
    [stalled.taskId],
  );
  assert.equal(bobList.tasks[0]!.caller, undefined, 'a caller view does not gain a caller field');
  await assert.rejects(call(bob, 'agent_status', { taskId: done.taskId }), /no task/);
  await assert.rejects(call(alice, 'agent_cancel', { taskId: stalled.taskId }), /no task/);

  const list = await baton(cliConfig, 'list');
  assert.equal(list.code, 0, list.stderr);
  const lines = list.stdout.trim().split('\n');
  assert.match(lines[0]!, /^TASK\s+CALLER\s+AGENT\s+STATE\s+ROUND\s+UPDATED$/);
  assert.match(list.stdout, new RegExp(`${done.taskId}\\s+alice\\s+scripted\\s+succeeded\\s+1\\s`));
  assert.match(list.stdout, new RegExp(`${stalled.taskId}\\s+bob\\s+scripted\\s+running\\s+1\\s`));

  const show = await baton(cliConfig, 'show', done.taskId);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /caller: +alice/);
  assert.match(show.stdout, /round 1: succeeded/);
  assert.match(show.stdout, /git before: not git/);
  assert.match(show.stdout, /r1 lifecycle queued\n.*r1 lifecycle running/);

  // tail follows the live task (in a pipe); the operator's cancel ends it, recorded as the operator's, and tail exits 4.
  const tail = baton(cliConfig, 'tail', stalled.taskId);
  const cancel = await baton(cliConfig, 'cancel', stalled.taskId);
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.match(cancel.stdout, new RegExp(`cancel requested for ${stalled.taskId}|is cancelled`));
  const tailed = await tail;
  assert.equal(tailed.code, 4, `a cancelled task exits 4: ${tailed.stderr}`);
  assert.match(tailed.stdout, /r1 lifecycle running/);
  assert.match(tailed.stdout, /r1 cancel_requested by=operator/);
  assert.match(tailed.stdout, /r1 lifecycle cancelled .*— cancelled by the operator/);
  assert.match(
    tailed.stdout,
    new RegExp(`task ${stalled.taskId} ended: cancelled — cancelled by the operator\\nno answer text\\n$`),
  );
  const owner = await followToEnd(bob, stalled.taskId);
  assert.equal(owner.state, 'cancelled', 'the owner sees the cancel too');
  assert.equal(owner.last.error, 'cancelled by the operator', 'and sees who cancelled');

  // A caller's own cancel still reads as the caller's.
  const own = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'ux-3',
  });
  await waitForEvent(bob, own.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
  await call(bob, 'agent_cancel', { taskId: own.taskId });
  const ownEnd = await followToEnd(bob, own.taskId);
  assert.equal(ownEnd.last.error, 'cancelled by the caller');
  assert.ok(ownEnd.events.some((e) => e.kind === 'cancel_requested' && e.by === 'caller'));

  for (const args of [
    ['show', 't-doesnotexist'],
    ['tail', '../../healthz'],
    ['cancel', 'x y'],
  ]) {
    const bad = await baton(cliConfig, ...args);
    assert.equal(bad.code, 1, `${args.join(' ')} exits 1`);
    assert.match(bad.stderr, /^baton: no task/, bad.stderr);
  }

  // The control routes need the control token; a caller token is not enough.
  const res = await fetch(`${hub.url}/control/tasks`, { headers: { authorization: `Bearer ${TEST_CALLERS.alice}` } });
  assert.equal(res.status, 401);

  const everything = [list, show, tailed, cancel].map((r) => r.stdout + r.stderr).join('');
  for (const secret of [CONTROL_TOKEN, ...Object.values(TEST_CALLERS)]) {
    assert.equal(everything.includes(secret), false, 'no token printed');
    assert.equal(readFileSync(join(hub.stateDir, 'baton.log'), 'utf8').includes(secret), false, 'no token logged');
  }
});
