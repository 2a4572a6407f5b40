// Live text (rule `live-text`), the caller's side, end to end through the official MCP SDK client against a real hub and the scripted ACP
// agent (a real child process whose turn the test holds open with a gate file):
// - streamed answer text shows up as `message` events through agent_wait while the round still runs, an unfinished
//   line (and a credential in it) is held back until its end, and agent_result returns the answer so far with
//   `partial: true`, then the final answer without it;
// - agent_wait over several tasks wakes on the first that has news and names it; bad task lists are refused;
// - a caller's timeoutSeconds above the operator's hard limit is -32602 naming the limit, and one within it ends the
//   round;
// - agent_agents lists what the caller may reach, with the scripted agent's version, models and efforts, and a missing
//   binary as unavailable.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  call,
  connectCaller,
  followToEnd,
  type RunningHub,
  startHub,
  TEST_CALLERS,
  waitForEvent,
} from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { fileHooks, tempDir } from '../../support/tmp.ts';

type Ev = Record<string, unknown>;

async function invalidParams(client: Client, name: string, args: Record<string, unknown>, why: RegExp) {
  await assert.rejects(
    client.callTool({ name, arguments: args }),
    (err: McpError) => err.code === -32602 && why.test(err.message),
    `${name} ${JSON.stringify(args).slice(0, 160)} is -32602 matching ${why}`,
  );
}

/**
 * The file's one hub (its tests use tasks of their own, in dirs of their own where they run side by side): the scripted
 * agent, and a ghost agent whose binary is missing for agent_agents.
 */
let shared: Promise<{ work: string; hub: RunningHub; alice: Client; bob: Client }> | undefined;
function liveHub() {
  shared ??= (async () => {
    const dir = tempDir(fileHooks, 'baton-hub-live-');
    const work = join(dir, 'work');
    mkdirSync(work);
    const hub = await startHub(fileHooks, {
      dir,
      roots: [work],
      agents: {
        scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], cancelGraceMs: 1_000 },
        ghost: { kind: 'acp', command: ['baton-test-no-such-agent'] },
      },
      callers: {
        alice: { token: TEST_CALLERS.alice },
        bob: { token: TEST_CALLERS.bob, agents: ['scripted'] },
      },
      limits: { hardTimeoutMs: 60_000 },
    });
    const [alice, bob] = [await connectCaller(fileHooks, hub, 'alice'), await connectCaller(fileHooks, hub, 'bob')];
    return { work, hub, alice, bob };
  })();
  return shared;
}

/** A project dir of its own (tasks in one dir share a workspace lock and would run one after another). */
function project(work: string, name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  return dir;
}

test('live answer: message events while the round runs, unfinished lines held back, partial agent_result', async () => {
  const { work: root, alice } = await liveHub();
  const work = project(root, 'live');
  const key = 'sk-proj-Zq81Xw92Lm47Pn35Ty06';
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([
      { chunks: ['first ', 'line\n', `the key is ${key.slice(0, 12)}`] },
      { waitFor: 'go' },
      { chunks: [`${key.slice(12)} ok\n`, 'last line, no newline'] },
    ]),
    cwd: work,
    idempotencyKey: 'live-1',
  });
  const first = await waitForEvent(alice, run.taskId, (e) => e.kind === 'message');
  assert.equal(first.text, 'first line\n', 'the settled line, without the unfinished one after it');

  // The turn is held open by the gate: what the caller sees now is the answer while it runs.
  const partial = await call<Ev>(alice, 'agent_result', { taskId: run.taskId });
  assert.equal(partial.state, 'running');
  assert.equal(partial.partial, true);
  assert.equal(partial.available, true);
  assert.equal(partial.text, 'first line\n', 'the half-streamed key line is not shown yet');

  writeFileSync(join(work, 'go'), '');
  const done = await followToEnd(alice, run.taskId);
  assert.equal(done.state, 'succeeded');
  const live = done.events.filter((e) => e.kind === 'message').map((e) => e.text as string);
  const streamed = live.join('');
  assert.equal(streamed, 'first line\nthe key is [redacted] ok\nlast line, no newline');
  assert.ok(!JSON.stringify(done.events).includes(key.slice(0, 12)), 'no part of the key in any event');
  const final = await call<Ev>(alice, 'agent_result', { taskId: run.taskId });
  assert.equal(final.partial, undefined, 'the final result is not partial');
  assert.equal(final.text, streamed, 'the final result is the same answer, redacted the same way');
  // The end is after the last text.
  const kinds = done.events.map((e) => e.kind);
  assert.ok(kinds.lastIndexOf('message') < kinds.lastIndexOf('lifecycle'));
});

test('agent_wait over several tasks wakes on the first with news and names it; bad lists are refused', async () => {
  const { work, alice, bob } = await liveHub();
  const start = async (name: string) => {
    const cwd = project(work, name);
    const { taskId } = await call<{ taskId: string }>(alice, 'agent_run', {
      agent: 'scripted',
      prompt: acpScript([{ reply: `${name} ready\n` }, { waitFor: 'go' }, { reply: `${name} done\n` }]),
      cwd,
      idempotencyKey: `fan-${name}`,
    });
    // Read up to the text before the gate: from here on, only the gate makes news.
    let after = 0;
    for (;;) {
      const w = await call<{ events: Ev[]; nextCursor: number }>(alice, 'agent_wait', { taskId, after });
      after = w.nextCursor;
      if (w.events.some((e) => e.kind === 'message')) return { taskId, cwd, after };
    }
  };
  const a = await start('a');
  const b = await start('b');
  const c = await start('c');
  const tasks = [a, b, c].map(({ taskId, after }) => ({ taskId, after }));

  const waiting = call<{ ready: string[]; timedOut: boolean; tasks: (Ev & { events: Ev[] })[] }>(alice, 'agent_wait', {
    tasks,
    timeoutMs: 25_000,
  });
  writeFileSync(join(b.cwd, 'go'), '');
  const woke = await waiting;
  assert.deepEqual(woke.ready, [b.taskId], 'only the task whose gate opened has news');
  assert.equal(woke.timedOut, false);
  assert.equal(woke.tasks.length, 3);
  const [ta, tb] = woke.tasks;
  assert.equal(ta!.ready, false);
  assert.deepEqual(ta!.events, [], 'a task without news brings no events');
  assert.equal(ta!.nextCursor, a.after, 'and keeps its cursor');
  assert.equal(tb!.ready, true);
  assert.ok(tb!.events.length > 0 && (tb!.nextCursor as number) > b.after);

  // A task of another caller is not found, like a made-up one; nothing else is answered.
  await assert.rejects(
    call(bob, 'agent_wait', { tasks: [{ taskId: a.taskId }], timeoutMs: 0 }),
    new RegExp(`no task ${a.taskId}`),
  );
  await assert.rejects(call(alice, 'agent_wait', { tasks: [{ taskId: 't-nope' }], timeoutMs: 0 }), /no task t-nope/);
  const seventeen = Array.from({ length: 17 }, (_, i) => ({ taskId: `t-${i}` }));
  await invalidParams(alice, 'agent_wait', { tasks: seventeen }, /tasks/);
  await invalidParams(alice, 'agent_wait', { tasks: [{ taskId: a.taskId }, { taskId: a.taskId }] }, /listed twice/);
  await invalidParams(alice, 'agent_wait', { taskId: a.taskId, tasks: [{ taskId: b.taskId }] }, /not both/);
  await invalidParams(alice, 'agent_wait', {}, /taskId/);
  // The single form is unchanged.
  const single = await call<Ev>(alice, 'agent_wait', { taskId: a.taskId, after: a.after, timeoutMs: 0 });
  assert.equal(single.timedOut, true);
  for (const { cwd } of [a, c]) writeFileSync(join(cwd, 'go'), '');
});

test('timeoutSeconds: above the operator limit is refused naming it; within it, it ends the round', async () => {
  const { work: root, alice } = await liveHub();
  const work = project(root, 'timeout');
  const base = { agent: 'scripted', prompt: acpScript([{ waitFor: 'never' }]), cwd: work };
  const tasksBefore = (await call<{ tasks: unknown[] }>(alice, 'agent_list', {})).tasks.length;
  await invalidParams(
    alice,
    'agent_run',
    { ...base, idempotencyKey: 'to-big', timeoutSeconds: 61 },
    /timeoutSeconds: 61 is above this hub's limit of 60 s/,
  );
  const list = await call<{ tasks: unknown[] }>(alice, 'agent_list', {});
  assert.equal(list.tasks.length, tasksBefore, 'nothing was created');

  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    ...base,
    idempotencyKey: 'to-1',
    timeoutSeconds: 1,
  });
  const done = await followToEnd(alice, run.taskId);
  assert.equal(done.state, 'failed');
  assert.match(String(done.last.error), /1 s hard deadline/);
  assert.ok(
    done.events.some((e) => e.kind === 'lifecycle' && e.state === 'queued' && e.timeoutSeconds === 1),
    'the queued event names the caller’s timeout',
  );
  await invalidParams(
    alice,
    'agent_continue',
    { taskId: run.taskId, prompt: 'again', idempotencyKey: 'to-2', timeoutSeconds: 3_600 },
    /above this hub's limit of 60 s/,
  );
});

test('agent_agents: the reachable agents with version, models and efforts; a missing binary is reported', async () => {
  const { alice, bob } = await liveHub();
  const seen = await call<{ agents: Ev[] }>(alice, 'agent_agents', {});
  const byName = Object.fromEntries(seen.agents.map((a) => [a.name, a]));
  assert.deepEqual(Object.keys(byName).sort(), ['ghost', 'scripted']);
  assert.equal(byName.scripted!.kind, 'acp');
  assert.equal(byName.scripted!.available, true);
  assert.equal(byName.scripted!.version, '9.8.7');
  assert.deepEqual(byName.scripted!.models, ['alpha', 'beta']);
  assert.deepEqual(byName.scripted!.efforts, ['low', 'high']);
  assert.equal(byName.scripted!.binary, undefined, 'binary paths are the operator’s business');
  assert.equal(byName.ghost!.available, false);
  assert.match(String(byName.ghost!.detail), /baton-test-no-such-agent/);
  // Bob may reach only the scripted agent: that is all he sees.
  const bobs = await call<{ agents: Ev[] }>(bob, 'agent_agents', {});
  assert.deepEqual(
    bobs.agents.map((a) => a.name),
    ['scripted'],
  );
  await invalidParams(alice, 'agent_agents', { agent: 'x' }, /unknown argument/);
});
