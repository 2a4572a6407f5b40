// Run caps end to end (rule: run-caps): a real hub with the scripted ACP agent, agent processes counted from the
// agent's own start and exit records, through the official MCP SDK client and `baton health`.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { REPO_ROOT } from '../../support/bins.ts';
import {
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

interface View {
  taskId: string;
  state: string;
  error: string | null;
  queue?: { position: number; waitingFor: string; why: string };
}

const records = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { event: string; pid: number });

/**
 * The most task agent processes alive at once, from the record's start and exit lines in the order they were appended
 * (a process counts from its start line to its exit line). The hub's start-up probes open no session and are left out.
 */
function mostAtOnce(file: string): { starts: number; exits: number; most: number } {
  const all = records(file);
  const sessions = new Set(
    all.filter((r) => r.event === 'session/new' || r.event === 'session/load').map((r) => r.pid),
  );
  let alive = 0;
  let most = 0;
  let starts = 0;
  let exits = 0;
  for (const r of all) {
    if (!sessions.has(r.pid)) continue;
    if (r.event === 'start') {
      starts++;
      most = Math.max(most, ++alive);
    } else if (r.event === 'exit') {
      exits++;
      alive--;
    }
  }
  return { starts, exits, most };
}

async function states(client: Client, ids: string[]): Promise<View[]> {
  return Promise.all(ids.map((taskId) => call<View>(client, 'agent_status', { taskId, limit: 1 })));
}

test('20 runs against maxRunning 4: never more than 4 agent processes, queued in admission order with their place, all end', async (t) => {
  const dir = tempDir(t, 'baton-hub-caps-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: scripted.entry },
    limits: { maxRunning: 4 },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const dirs = Array.from({ length: 20 }, (_, i) => join(work, `d${i + 1}`));
  for (const d of dirs) mkdirSync(d);
  const ids: string[] = [];
  // One after another, so admission order is the order of `ids`; every task in a dir of its own (no lock between them).
  for (const [i, cwd] of dirs.entries()) {
    const v = await call<View>(alice, 'agent_run', {
      prompt: acpScript([{ waitFor: 'go' }, { reply: `done ${i + 1}` }]),
      cwd,
      idempotencyKey: `cap-${i}`,
    });
    ids.push(v.taskId);
  }
  for (const id of ids.slice(0, 4)) await waitForEvent(alice, id, (e) => e.kind === 'session');
  let views = await states(alice, ids);
  assert.deepEqual(
    views.map((v) => v.state),
    [...Array(4).fill('running'), ...Array(16).fill('queued')],
  );
  views.slice(4).forEach((v, i) => {
    assert.deepEqual(v.queue, {
      position: i + 1,
      waitingFor: 'maxRunning',
      why: '4 of 4 rounds running on this hub (limits.maxRunning)',
    });
  });
  const cli = writeCliConfig(hub, join(dir, 'cli', 'config.json'));
  const health = await runGroup(
    process.execPath,
    [join(REPO_ROOT, 'bin', 'baton.js'), '--config', cli, 'health'],
    isolatedEnv(dir),
  );
  assert.equal(health.code, 0, health.stderr);
  const h = JSON.parse(health.stdout);
  assert.deepEqual(
    { running: h.running, queued: h.queued, capped: h.capped, caps: h.caps },
    { running: 4, queued: 16, capped: 16, caps: { running: 4, maxRunning: 4, agents: { scripted: { running: 4 } } } },
  );

  // Released one at a time: each end lets exactly the next admitted task start, and the rest keep waiting.
  for (let i = 0; i < 20; i++) {
    writeFileSync(join(dirs[i]!, 'go'), '');
    assert.equal((await followToEnd(alice, ids[i]!)).state, 'succeeded');
    const next = i + 4;
    if (next < 20) await waitForEvent(alice, ids[next]!, (e) => e.kind === 'session');
    views = await states(alice, ids.slice(next + 1));
    assert.ok(
      views.every((v, k) => v.state === 'queued' && v.queue?.position === k + 1),
      `after ${i + 1} ended, tasks ${next + 2}.. still wait in order: ${JSON.stringify(views.map((v) => v.queue))}`,
    );
  }
  for (const [i, id] of ids.entries()) {
    assert.equal((await call<{ text: string }>(alice, 'agent_result', { taskId: id })).text, `done ${i + 1}`);
  }
  await until(() => mostAtOnce(scripted.record).exits === 20, { what: 'every agent process to record its exit' });
  assert.deepEqual(mostAtOnce(scripted.record), { starts: 20, exits: 20, most: 4 });
});

test('SIGKILL with rounds queued behind the cap: after the restart every task is there, the queued ones interrupted and never started', async (t) => {
  const dir = tempDir(t, 'baton-hub-caps-kill-');
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const setup = { dir, roots: [work], agents: { scripted: { ...scripted.entry, maxRunning: 1 } } };
  const hub1 = await startHub(t, setup);
  const a1 = await connectCaller(t, hub1, 'alice');
  const ids: string[] = [];
  for (const i of [1, 2, 3]) {
    const cwd = join(work, `k${i}`);
    mkdirSync(cwd);
    const v = await call<View>(a1, 'agent_run', {
      prompt: acpScript([{ waitFor: 'go' }, { reply: 'done' }]),
      cwd,
      idempotencyKey: `kill-${i}`,
    });
    ids.push(v.taskId);
  }
  await waitForEvent(a1, ids[0]!, (e) => e.kind === 'session');
  const queued = await states(a1, ids.slice(1));
  assert.deepEqual(
    queued.map((v) => [v.state, v.queue?.waitingFor, v.queue?.position]),
    [
      ['queued', 'agentMaxRunning', 1],
      ['queued', 'agentMaxRunning', 2],
    ],
  );
  await hub1.kill();

  const hub2 = await startHub(t, setup);
  const a2 = await connectCaller(t, hub2, 'alice');
  const after = await states(a2, ids);
  assert.deepEqual(
    after.map((v) => v.state),
    ['interrupted', 'interrupted', 'interrupted'],
  );
  assert.match(after[0]!.error!, /stopped before this round finished/);
  for (const v of after.slice(1))
    assert.match(v.error!, /while this round was queued; it never started and nothing ran/);
  assert.equal(
    records(scripted.record).filter((r) => r.event === 'session/prompt').length,
    1,
    'the queued rounds never reached the agent',
  );
  // Continuing a task that was queued queues it again; it runs now that nothing holds the slot.
  await call(a2, 'agent_continue', {
    taskId: ids[2]!,
    prompt: acpScript([{ reply: 'again' }]),
    idempotencyKey: 'k-again',
  });
  assert.equal((await followToEnd(a2, ids[2]!)).state, 'succeeded');
  assert.equal((await call<{ text: string }>(a2, 'agent_result', { taskId: ids[2]! })).text, 'again');
});
