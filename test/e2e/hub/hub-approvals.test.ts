// Approvals end to end (rule: approvals) with the scripted ACP agent, which asks session/request_permission: with the
// `ask` policy the round parks and its view says what it waits for; the caller answers with agent_respond, the operator
// with `baton tasks approve|deny` or the dashboard, nobody by the timeout; the `deny` policy is unchanged; bad answers
// change nothing; a restart while a request waits interrupts the round and says why. The real Codex app-server's
// approval requests, which the Responses mock triggers, go the same way.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { escalatedShellCall, reply } from '../../mock-models/responses.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { startResponsesMock } from '../../support/codex.ts';
import {
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  type HubSetup,
  isolatedEnv,
  runGroup,
  startHub,
  TEST_CALLERS,
  waitForEvent,
  writeCliConfig,
} from '../../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

interface Waiting {
  requestId: string;
  kind: string;
  what: string;
  options: string[];
  expiresAt: string;
}
interface View {
  taskId: string;
  state: string;
  error: string | null;
  waiting?: Waiting;
}

const ASKS = acpScript([{ permission: { kind: 'execute', title: 'rm -rf /very/secret/path' } }]);

function setup(dir: string, limits: Record<string, number> = {}) {
  const { work, ...scripted } = scriptedAgentSetup(dir);
  const hub: HubSetup = {
    dir,
    roots: [work],
    agents: { scripted: scripted.entry },
    limits,
    callers: {
      alice: { token: TEST_CALLERS.alice, approvals: { scripted: 'ask' } },
      bob: { token: TEST_CALLERS.bob },
    },
  };
  return { work, record: scripted.record, hub };
}

/** Runs the asking script and returns the task with the request it waits for. */
async function parked(client: Client, work: string, key: string): Promise<View & { waiting: Waiting }> {
  const run = await call<View>(client, 'agent_run', { prompt: ASKS, cwd: work, idempotencyKey: key });
  await waitForEvent(client, run.taskId, (e) => e.kind === 'approval_requested');
  const view = await call<View>(client, 'agent_status', { taskId: run.taskId });
  assert.ok(view.waiting, JSON.stringify(view));
  return view as View & { waiting: Waiting };
}

async function answerOf(client: Client, taskId: string): Promise<{ text: string; events: Record<string, unknown>[] }> {
  const done = await followToEnd(client, taskId);
  assert.equal(done.state, 'succeeded');
  const status = await call<{ events: Record<string, unknown>[] }>(client, 'agent_status', { taskId, limit: 500 });
  return { text: (await call<{ text: string }>(client, 'agent_result', { taskId })).text, events: status.events };
}

async function rpcError(client: Client, args: Record<string, unknown>): Promise<{ code: number; message: string }> {
  try {
    await client.callTool({ name: 'agent_respond', arguments: args });
  } catch (err) {
    return err as { code: number; message: string };
  }
  assert.fail(`agent_respond ${JSON.stringify(args)} was not refused`);
}

test('ask: the caller answers with agent_respond, the operator with the CLI and the dashboard; bad answers change nothing; deny unchanged', async (t) => {
  const dir = tempDir(t, 'baton-hub-approvals-');
  const { work, record, hub: hubSetup } = setup(dir);
  const hub = await startHub(t, hubSetup);
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  // 1. The caller allows.
  const a = await parked(alice, work, 'a-1');
  assert.equal(a.state, 'running');
  assert.deepEqual(
    { ...a.waiting, requestId: undefined, expiresAt: undefined },
    {
      requestId: undefined,
      kind: 'command',
      what: 'run a command',
      options: ['allow', 'allow_always', 'deny'],
      expiresAt: undefined,
    },
  );
  const left = Date.parse(a.waiting.expiresAt) - Date.now();
  assert.ok(left > 500_000 && left <= 600_000, `expires in about 10 minutes: ${left} ms`);
  assert.equal(JSON.stringify(a).includes('secret'), false, 'never the request arguments');

  // Bad answers: another caller's task is not found, a request not pending is refused, a decision not offered and an
  // unknown argument are -32602; the request still waits, unchanged.
  await assert.rejects(
    call(bob, 'agent_respond', { taskId: a.taskId, requestId: a.waiting.requestId, decision: 'allow' }),
    /no task/,
  );
  await assert.rejects(
    call(alice, 'agent_respond', { taskId: a.taskId, requestId: 'r-not-a-request', decision: 'allow' }),
    /request r-not-a-request is not pending for task/,
  );
  const notOffered = await rpcError(alice, {
    taskId: a.taskId,
    requestId: a.waiting.requestId,
    decision: 'deny_always',
  });
  assert.equal(notOffered.code, -32602);
  assert.match(notOffered.message, /decision: "deny_always" is not offered .*\(offered: allow, allow_always, deny\)/);
  const unknown = await rpcError(alice, { taskId: a.taskId, requestId: a.waiting.requestId, decision: 'yes' });
  assert.equal(unknown.code, -32602);
  const extra = await rpcError(alice, { taskId: a.taskId, requestId: a.waiting.requestId, decision: 'allow', x: 1 });
  assert.equal(extra.code, -32602);
  assert.deepEqual((await call<View>(alice, 'agent_status', { taskId: a.taskId })).waiting, a.waiting);

  const answered = await call<View>(alice, 'agent_respond', {
    taskId: a.taskId,
    requestId: a.waiting.requestId,
    decision: 'allow',
  });
  assert.equal(answered.waiting, undefined);
  const aEnd = await answerOf(alice, a.taskId);
  assert.equal(aEnd.text, 'permission:granted', 'the agent got the allow');
  assert.deepEqual(
    aEnd.events
      .filter((e) => e.kind === 'approval_answered' || e.kind === 'permission')
      .map((e) => [e.kind, e.decision, e.by]),
    [
      ['approval_answered', 'allow', 'caller'],
      ['permission', 'allowed', undefined],
    ],
  );
  await assert.rejects(
    call(alice, 'agent_respond', { taskId: a.taskId, requestId: a.waiting.requestId, decision: 'deny' }),
    /is not pending/,
    'an answered request cannot be answered again',
  );

  // 2. The operator denies with the CLI.
  const b = await parked(alice, work, 'a-2');
  const cli = writeCliConfig(hub, join(dir, 'cli', 'config.json'));
  const baton = (...args: string[]) =>
    runGroup(
      process.execPath,
      [join(REPO_ROOT, 'bin', 'baton.js'), '--config', cli, 'tasks', ...args],
      isolatedEnv(dir),
    );
  const shown = await baton('show', b.taskId);
  assert.match(
    shown.stdout,
    new RegExp(
      `waiting: +request ${b.waiting.requestId}: run a command \\(command\\); options allow, allow_always, deny`,
    ),
  );
  const badCli = await baton('deny', b.taskId, 'r-nope');
  assert.equal(badCli.code, 1);
  assert.match(badCli.stderr, /not pending/);
  const denied = await baton('deny', b.taskId, b.waiting.requestId);
  assert.equal(denied.code, 0, denied.stderr);
  assert.match(denied.stdout, new RegExp(`deny: request ${b.waiting.requestId} of task ${b.taskId} answered`));
  const bEnd = await answerOf(alice, b.taskId);
  assert.equal(bEnd.text, 'permission:denied');
  assert.ok(bEnd.events.some((e) => e.kind === 'approval_answered' && e.decision === 'deny' && e.by === 'operator'));

  // 3. The operator approves in the dashboard (same Origin and CSRF rules as Cancel).
  const c = await parked(alice, work, 'a-3');
  const login = await fetch(`${hub.url}/ui/login`, {
    method: 'POST',
    headers: { origin: hub.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${CONTROL_TOKEN}`,
    redirect: 'manual',
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${hub.url}/ui/tasks/${c.taskId}`, { headers: { cookie } })).text();
  assert.match(page, /Waiting for a decision: the agent asks to run a command \(command\)/);
  assert.match(page, /id="respond-allow"/);
  assert.doesNotMatch(page, /id="respond-deny_always"/, 'only the offered decisions');
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
  const post = (body: string, origin?: string) =>
    fetch(`${hub.url}/ui/tasks/${c.taskId}/respond`, {
      method: 'POST',
      headers: {
        cookie,
        'content-type': 'application/x-www-form-urlencoded',
        ...(origin ? { origin } : {}),
      },
      body,
      redirect: 'manual',
    });
  const form = `request=${c.waiting.requestId}&decision=allow`;
  assert.equal((await post(`${form}&csrf=wrong`, hub.url)).status, 403);
  assert.equal((await post(`${form}&csrf=${csrf}`)).status, 403, 'no Origin');
  assert.equal((await post(`${form}&csrf=${csrf}`, 'http://evil.example')).status, 403);
  assert.deepEqual((await call<View>(alice, 'agent_status', { taskId: c.taskId })).waiting, c.waiting);
  assert.equal((await post(`${form}&csrf=${csrf}`, hub.url)).status, 303);
  assert.equal((await answerOf(alice, c.taskId)).text, 'permission:granted');

  // 4. A cancel while a request waits ends the wait: the round is cancelled.
  const d = await parked(alice, work, 'a-4');
  await call(alice, 'agent_cancel', { taskId: d.taskId });
  const dEnd = await followToEnd(alice, d.taskId);
  assert.equal(dEnd.state, 'cancelled');
  assert.ok(dEnd.events.some((e) => e.kind === 'approval_answered' && e.by === 'stopped' && e.decision === 'deny'));

  // 5. The deny policy (bob) is today's behaviour: denied at once, nothing parked.
  const e = await call<View>(bob, 'agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 'b-1' });
  const eEnd = await answerOf(bob, e.taskId);
  assert.equal(eEnd.text, 'permission:denied');
  assert.equal(
    eEnd.events.some((x) => String(x.kind).startsWith('approval_')),
    false,
  );
  const outcomes = readFileSync(record, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.event === 'permission')
    .map((r) => r.outcome.optionId ?? r.outcome.outcome);
  assert.deepEqual(outcomes, ['yes', 'no', 'yes', 'cancelled', 'no'], 'what the agent was answered, in order');
});

test('ask: nobody answers → denied as timed out; a SIGKILL while a request waits → the round is interrupted saying why', async (t) => {
  const dir = tempDir(t, 'baton-hub-approvals-timeout-');
  const { work, hub: hubSetup } = setup(dir, { approvalTimeoutMs: 1_500 });
  const hub1 = await startHub(t, hubSetup);
  const a1 = await connectCaller(t, hub1, 'alice');
  const run = await call<View>(a1, 'agent_run', { prompt: ASKS, cwd: work, idempotencyKey: 't-1' });
  const end = await answerOf(a1, run.taskId);
  assert.equal(end.text, 'permission:denied');
  const answered = end.events.find((e) => e.kind === 'approval_answered')!;
  assert.deepEqual([answered.decision, answered.by], ['deny', 'timeout']);
  const asked = end.events.find((e) => e.kind === 'approval_requested')!;
  assert.ok(Date.parse(String(answered.time)) >= Date.parse(String(asked.expiresAt)) - 50, 'not before it expired');

  // A request that waits when the daemon is killed: the agent that asked is gone with it. (A hub with the 10-minute
  // timeout, so the request surely still waits.)
  const dir2 = tempDir(t, 'baton-hub-approvals-kill-');
  const second = setup(dir2);
  const hub2 = await startHub(t, second.hub);
  const a2 = await connectCaller(t, hub2, 'alice');
  const p = await parked(a2, second.work, 'k-1');
  await hub2.kill();
  const hub3 = await startHub(t, second.hub);
  const a3 = await connectCaller(t, hub3, 'alice');
  const after = await call<View>(a3, 'agent_status', { taskId: p.taskId });
  assert.equal(after.state, 'interrupted');
  assert.equal(after.waiting, undefined);
  assert.equal(
    after.error,
    `the daemon stopped while this round waited for an answer to permission request ${p.waiting.requestId} (run a command); the agent process that asked is gone: continue the task to resume its session`,
  );
});

test('ask with the real Codex: an approval request the mock model triggers (a command outside the sandbox) waits; allow runs it, deny declines it', async (t) => {
  const mock = await startResponsesMock(t);
  const dir = tempDir(t, 'baton-hub-approvals-codex-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      codex: {
        kind: 'codex',
        command: [process.execPath, bins.codex()],
        model: 'mock-model',
        modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
        userCodexHome: join(dir, 'no-user-login'),
        cancelGraceMs: 2_000,
      },
    },
    callers: { alice: { token: TEST_CALLERS.alice, approvals: { codex: 'ask' } }, bob: { token: TEST_CALLERS.bob } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');

  const parkCodex = async (key: string) => {
    const run = await call<View>(alice, 'agent_run', { prompt: 'run it', cwd: work, idempotencyKey: key });
    await waitForEvent(alice, run.taskId, (e) => e.kind === 'approval_requested');
    return call<View & { waiting: Waiting }>(alice, 'agent_status', { taskId: run.taskId });
  };

  mock.push(escalatedShellCall('echo approved-$((40+2))'), reply('done after allow'));
  const a = await parkCodex('c-1');
  assert.deepEqual(
    [a.waiting.kind, a.waiting.what, a.waiting.options],
    ['command', 'command execution', ['allow', 'allow_always', 'deny']],
  );
  assert.equal(JSON.stringify(a).includes('approved-'), false, 'never the command line');
  await call(alice, 'agent_respond', { taskId: a.taskId, requestId: a.waiting.requestId, decision: 'allow' });
  const aEnd = await answerOf(alice, a.taskId);
  assert.equal(aEnd.text, 'done after allow');
  assert.deepEqual(
    aEnd.events
      .filter((e) => ['approval_answered', 'permission'].includes(String(e.kind)))
      .map((e) => [e.kind, e.decision]),
    [
      ['approval_answered', 'allow'],
      ['permission', 'allowed'],
    ],
  );
  assert.ok(
    aEnd.events.some((e) => e.kind === 'tool' && e.phase === 'end' && e.family === 'command' && e.ok === true),
    'the command ran',
  );
  // The command line says approved-$((40+2)); only its output says approved-42.
  assert.match(JSON.stringify(mock.turns.at(-1)), /approved-42/, 'it ran, and its output went back to the model');

  mock.push(escalatedShellCall('echo never-$((40+2))'), reply('done after deny'));
  const b = await parkCodex('c-2');
  await call(alice, 'agent_respond', { taskId: b.taskId, requestId: b.waiting.requestId, decision: 'deny' });
  const bEnd = await answerOf(alice, b.taskId);
  assert.equal(bEnd.text, 'done after deny');
  assert.ok(bEnd.events.some((e) => e.kind === 'permission' && e.decision === 'denied'));
  assert.doesNotMatch(JSON.stringify(mock.turns.at(-1)), /never-42/, 'the command did not run');

  // bob keeps the deny policy: Codex never asks (approval policy never), as before.
  mock.push(reply('bob done'));
  const c = await call<View>(bob, 'agent_run', { prompt: 'hi', cwd: work, idempotencyKey: 'c-3' });
  const cEnd = await answerOf(bob, c.taskId);
  assert.equal(cEnd.text, 'bob done');
  assert.equal(
    cEnd.events.some((e) => String(e.kind).startsWith('approval_')),
    false,
  );
});
