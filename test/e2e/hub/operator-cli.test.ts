// The operator CLI (rules: operator-cli, stop-refuses-work) through the real `baton` command against a real hub with
// the scripted ACP agent: newest-first lists and their validation, local times with an offset, --json shapes, `tail`
// in a pipe and in a real pseudo-terminal with exit codes by outcome, the answer and how to read the rest, and a stop
// that refuses while tasks run.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  batonHome,
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  type Ran,
  type RunningHub,
  runGroup,
  startHub,
  waitForEvent,
  writeCliConfig,
} from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { fileHooks, tempDir } from '../../support/tmp.ts';

const BATON = join(REPO_ROOT, 'bin', 'baton.js');

/** Runs `baton --config <cli config> ...args` with its output in pipes. */
function baton(dir: string, configPath: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return runGroup(process.execPath, [BATON, '--config', configPath, ...args], isolatedEnv(dir, env));
}

/**
 * Runs `baton --config <config> ...args` on a real pseudo-terminal through util-linux `script` (the CLI sees a TTY on
 * stdout; -e passes the exit code on). The command line reaches the shell only through environment variables.
 */
async function batonOnTerminal(dir: string, configPath: string, args: string[]): Promise<Ran> {
  const argv = [process.execPath, BATON, '--config', configPath, ...args];
  const vars = Object.fromEntries(argv.map((a, i) => [`BATON_TEST_ARG${i}`, a]));
  const line = `stty cols 160 rows 45; exec ${argv.map((_, i) => `"$BATON_TEST_ARG${i}"`).join(' ')}`;
  const ran = await runGroup('script', ['-qefc', line, '/dev/null'], isolatedEnv(dir, vars));
  return { ...ran, stdout: ran.stdout.replaceAll('\r\n', '\n') };
}

/** A config beside the hub's own that points at the port the hub actually listens on. */
const cliConfigFor = (dir: string, hub: RunningHub) => writeCliConfig(hub, join(batonHome(dir), 'cli.json'));

const agents = (dir: string) => ({
  scripted: {
    kind: 'acp',
    command: [process.execPath, SCRIPTED_ACP_AGENT],
    env: { ACP_TEST_AGENT_RECORD: join(dir, 'record.jsonl') },
    cancelGraceMs: 1_000,
  },
});

/**
 * The file's one hub (its first start: the stop test stops it and starts it again): the scripted agent, and a ghost
 * agent whose binary is missing.
 */
let shared:
  | Promise<{ dir: string; work: string; ghost: string; hub: RunningHub; cli: string; alice: Client }>
  | undefined;
function operatorHub() {
  shared ??= (async () => {
    const dir = tempDir(fileHooks, 'baton-operator-cli-');
    const work = join(dir, 'work');
    mkdirSync(work);
    const ghost = join(dir, 'no-such-agent');
    const hub = await startHub(fileHooks, { dir, roots: [work], agents: withGhost(dir, ghost) });
    return { dir, work, ghost, hub, cli: cliConfigFor(dir, hub), alice: await connectCaller(fileHooks, hub, 'alice') };
  })();
  return shared;
}

const withGhost = (dir: string, ghost: string) => ({ ...agents(dir), ghost: { kind: 'acp', command: [ghost] } });

test('baton tasks: newest first, --limit/--all validated, local times, --json, tail and result exit codes in a pipe and a terminal', async (t) => {
  const { dir, work, hub, cli, alice } = await operatorHub();
  const run = (args: string[], env?: NodeJS.ProcessEnv) => baton(dir, cli, args, env);
  const bob = await connectCaller(t, hub, 'bob');

  const finished = async (client: typeof alice, key: string, steps: unknown[]) => {
    const { taskId } = await call<{ taskId: string }>(client, 'agent_run', {
      agent: 'scripted',
      prompt: acpScript(steps),
      cwd: work,
      idempotencyKey: key,
    });
    await followToEnd(client, taskId);
    return taskId;
  };
  const first = await finished(alice, 'k1', [{ chunks: ['first'] }]);
  const failed = await finished(bob, 'k2', [{ fail: 'the model said no' }]);
  const long = await finished(alice, 'k3', [{ bigReply: 40_000 }]);
  const escaped = await finished(alice, 'k4', [{ chunks: ['\u001b[31mred\u001b[0m plain'] }]);

  // Newest first; --limit N is the N newest; --all is everything.
  const rowsOf = (r: Ran) => r.stdout.trim().split('\n').slice(1);
  const all = await run(['tasks', 'list', '--all']);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(
    rowsOf(all).map((l) => l.split(/\s+/)[0]),
    [escaped, long, failed, first],
  );
  const two = await run(['tasks', 'list', '--limit', '2']);
  assert.equal(two.code, 0, two.stderr);
  assert.deepEqual(
    rowsOf(two).map((l) => l.split(/\s+/)[0]),
    [escaped, long],
  );
  assert.match(two.stderr, /showing the 2 newest; --limit N or --all shows more/);
  const asJson = await run(['tasks', 'list', '--limit', '3', '--json']);
  assert.equal(asJson.code, 0, asJson.stderr);
  const listed = JSON.parse(asJson.stdout) as { tasks: Array<Record<string, unknown>>; more: boolean };
  assert.deepEqual(
    listed.tasks.map((x) => [x.taskId, x.caller, x.state]),
    [
      [escaped, 'alice', 'succeeded'],
      [long, 'alice', 'succeeded'],
      [failed, 'bob', 'failed'],
    ],
  );
  assert.equal(listed.more, true);

  // Bad input is a usage error (exit 2) saying what was wrong, with nothing listed.
  for (const bad of [
    ['--limit', 'abc'],
    ['--limit', '0'],
    ['--limit', '-1'],
    ['--limit', '1.5'],
  ]) {
    const r = await run(['tasks', 'list', ...bad]);
    assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /--limit must be a whole number ≥ 1/);
    assert.equal(r.stdout, '');
  }
  const both = await run(['tasks', 'list', '--limit', '1', '--all']);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /--all.* cannot be used with .*--limit/);

  // Times are local with the offset shown, `Z` when local is UTC; the instant is the stored one.
  const updated = listed.tasks.find((x) => x.taskId === failed)!.updatedAt as string;
  for (const [tz, suffix] of [
    ['Asia/Kolkata', '+05:30'],
    ['UTC', 'Z'],
  ] as const) {
    const r = await run(['tasks', 'list', '--all'], { TZ: tz });
    const row = rowsOf(r).find((l) => l.startsWith(failed))!;
    const shown = /(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\+05:30|Z)$/.exec(row);
    assert.ok(shown, `${tz}: ${row}`);
    assert.equal(shown[2], suffix);
    const instant = Date.parse(`${shown[1]!.replace(' ', 'T')}${suffix}`);
    assert.equal(instant, Math.floor(Date.parse(updated) / 1000) * 1000, `${tz} shows the same instant`);
  }

  // tail in a pipe: the events, the end, the answer; exit 0 for succeeded, 3 for failed.
  const ok = await run(['tasks', 'tail', first]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d) r1 lifecycle queued$/m);
  assert.ok(ok.stdout.endsWith(`task ${first} ended: succeeded\nanswer (5 characters):\nfirst\n`), ok.stdout);
  const bad = await run(['tasks', 'tail', failed]);
  assert.equal(bad.code, 3, bad.stdout);
  assert.match(bad.stdout, new RegExp(`task ${failed} ended: failed — .*the model said no`));

  // A long answer: the first page, then exactly how to read the rest — and that command reads it.
  const longTail = await run(['tasks', 'tail', long]);
  assert.equal(longTail.code, 0, longTail.stderr);
  assert.ok(
    longTail.stdout.endsWith(
      `answer continues: 32768 of 40000 characters shown; the rest: baton tasks result ${long} --offset 32768\n`,
    ),
    longTail.stdout.slice(-300),
  );
  assert.equal(/\ny+\n/.exec(longTail.stdout)?.[0].length, 32_768 + 2, 'the first page, whole');
  const rest = await run(['tasks', 'result', long, '--offset', '32768']);
  assert.equal(rest.code, 0, rest.stderr);
  assert.equal(rest.stdout, `${'y'.repeat(40_000 - 32_768)}\n`);
  const whole = await run(['tasks', 'result', long]);
  assert.equal(whole.stdout, `${'y'.repeat(40_000)}\n`, 'result pages through the whole answer, then a newline');
  const badOffset = await run(['tasks', 'result', long, '--offset', 'x']);
  assert.equal(badOffset.code, 2);

  // In a pipe `result` is the answer as given (plus the final newline); on a terminal `tail` strips terminal controls.
  const exact = await run(['tasks', 'result', escaped]);
  assert.equal(exact.stdout, '\u001b[31mred\u001b[0m plain\n');
  assert.equal(
    JSON.parse((await run(['tasks', 'result', escaped, '--json'])).stdout).text,
    '\u001b[31mred\u001b[0m plain',
  );
  const onTerminal = await batonOnTerminal(dir, cli, ['tasks', 'tail', escaped]);
  assert.equal(onTerminal.code, 0, onTerminal.stdout);
  assert.match(
    onTerminal.stdout,
    new RegExp(`task ${escaped} ended: succeeded\\nanswer \\(\\d+ characters\\):\\nred plain\\n`),
  );
  assert.doesNotMatch(onTerminal.stdout, /\u001b\[31m/);

  // --json: tail gives JSON lines ending with the end record; show and result give one document.
  const tailJson = await run(['tasks', 'tail', failed, '--json']);
  assert.equal(tailJson.code, 3);
  const lines = tailJson.stdout
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          type: string;
          event?: { seq: number };
          task?: Record<string, unknown>;
          answer?: Record<string, unknown>;
        },
    );
  assert.ok(lines.slice(0, -1).every((l) => l.type === 'event' && typeof l.event?.seq === 'number'));
  const end = lines.at(-1)!;
  assert.equal(end.type, 'end');
  assert.equal(end.task?.taskId, failed);
  assert.equal(end.task?.state, 'failed');
  assert.equal(end.task?.caller, 'bob');
  assert.equal(end.answer?.available, true);
  const shown = JSON.parse((await run(['tasks', 'show', first, '--json'])).stdout);
  assert.equal(shown.taskId, first);
  assert.equal(shown.rounds[0].state, 'succeeded');
  assert.deepEqual(
    shown.events.map((e: { kind: string; state?: string }) => e.state ?? e.kind).filter((s: string) => s !== 'session'),
    ['queued', 'running', 'message', 'succeeded'],
  );
  const resultJson = JSON.parse((await run(['tasks', 'result', long, '--json'])).stdout);
  assert.equal(resultJson.total, 40_000);
  assert.equal(resultJson.text.length, 40_000);
  assert.equal(resultJson.done, true);

  // A live task followed on a terminal: the operator's cancel ends it; tail exits 4 and says who cancelled.
  const stalled = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'k5',
  });
  await waitForEvent(alice, stalled.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');
  const live = batonOnTerminal(dir, cli, ['tasks', 'tail', stalled.taskId]);
  const cancelled = await run(['tasks', 'cancel', stalled.taskId, '--json']);
  assert.equal(cancelled.code, 0, cancelled.stderr);
  assert.equal(JSON.parse(cancelled.stdout).taskId, stalled.taskId);
  const followed = await live;
  assert.equal(followed.code, 4, followed.stdout);
  assert.match(followed.stdout, /r1 lifecycle running/);
  assert.match(followed.stdout, new RegExp(`task ${stalled.taskId} ended: cancelled — cancelled by the operator`));
  const stalledResult = await run(['tasks', 'result', stalled.taskId]);
  assert.equal(stalledResult.code, 4, 'result exits by the outcome too');
});

test('baton stop refuses while a task runs, --force names what it interrupted, and the task reads as interrupted', async (t) => {
  const { dir, work, ghost, hub, cli, alice } = await operatorHub();

  // A missing binary reads the same in the hub's preflight and in the error of a task that tried it
  // (rule: missing-binary; doctor's and the probes' wording is asserted in doctor.test.ts).
  const notFound = `binary "${ghost}" not found; install it or set its path in the agent's config`;
  await until(() => hub.output().includes(notFound), { what: 'the preflight row of the missing agent' });
  const tried = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'ghost',
    prompt: 'hello',
    cwd: work,
    idempotencyKey: 's0',
  });
  const triedEnd = await followToEnd(alice, tried.taskId);
  assert.equal(triedEnd.state, 'failed');
  assert.ok(String(triedEnd.last.error).includes(notFound), String(triedEnd.last.error));
  const { taskId } = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 's1',
  });
  await waitForEvent(alice, taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');

  const refused = await baton(dir, cli, ['stop']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /not stopped: 1 task\(s\) still queued or running/);
  assert.match(refused.stderr, new RegExp(`${taskId}\\s+alice\\s+scripted\\s+running`));
  assert.match(refused.stderr, /baton stop --force/);
  const health = await baton(dir, cli, ['health']);
  assert.equal(health.code, 0, 'the hub still runs');

  // A caller parked in agent_wait on that task: a forced stop answers it, with the interrupted state, before the hub
  // exits (not with a closed connection).
  const { nextCursor } = await call<{ nextCursor: number }>(alice, 'agent_status', { taskId });
  const parked = call<{ state: string; timedOut: boolean }>(alice, 'agent_wait', {
    taskId,
    after: nextCursor,
    timeoutMs: 25_000,
  });
  await until(
    async () => {
      const res = await fetch(`${hub.url}/control/health`, { headers: { authorization: `Bearer ${CONTROL_TOKEN}` } });
      return ((await res.json()) as { mcpRequestsInFlight: number }).mcpRequestsInFlight === 1;
    },
    { what: 'the agent_wait to be parked on the hub' },
  );
  const forced = await baton(dir, cli, ['stop', '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(
    forced.stdout,
    new RegExp(`^interrupting 1 task\\(s\\):\\n\\s+${taskId}\\s+alice\\s+scripted\\s+running`),
  );
  assert.match(forced.stdout, /stopped\n$/);
  const woke = await parked;
  assert.equal(woke.state, 'interrupted');
  assert.equal(woke.timedOut, false);
  await until(() => hub.group.child.exitCode !== null, { what: 'the hub to exit' });

  // After a restart the task is interrupted: tail exits 5.
  const again = await startHub(t, { dir, roots: [work], agents: withGhost(dir, ghost) });
  const cli2 = cliConfigFor(dir, again);
  const tailed = await baton(dir, cli2, ['tasks', 'tail', taskId]);
  assert.equal(tailed.code, 5, tailed.stdout + tailed.stderr);
  assert.match(tailed.stdout, new RegExp(`task ${taskId} ended: interrupted`));
  const stopIdle = await baton(dir, cli2, ['stop']);
  assert.equal(stopIdle.code, 0, 'nothing running: stop needs no --force');
  assert.doesNotMatch(stopIdle.stdout, /interrupting/);
});
