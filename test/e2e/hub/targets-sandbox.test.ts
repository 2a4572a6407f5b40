// The `sandbox` target, for real (bubblewrap): the host read-only except the task's work dir, the agent's private
// home, a private /tmp and the paths the operator allows; baton's files and every other root hidden. A scripted ACP
// agent and the real Codex (its own sandbox nested inside) try to write and read around them.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { reply, shellCall } from '../../mock-models/responses.ts';
import { bins } from '../../support/bins.ts';
import { codexTestDir, startResponsesMock } from '../../support/codex.ts';
import { call, connectCaller, followToEnd, startHub } from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';

/** A test dir outside the system temp dir (a sandbox's /tmp is private), with two roots and a dir outside both. */
function layout(t: { after: (fn: () => void) => void }) {
  const dir = codexTestDir('baton-sandbox-');
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  const work = join(dir, 'work');
  const other = join(dir, 'other-project');
  const outside = join(dir, 'outside');
  const io = join(dir, 'agent-io');
  for (const d of [work, other, outside, join(io, 'state')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(other, 'secret.txt'), 'another project\n');
  writeFileSync(join(outside, 'readable.txt'), 'the host is readable\n');
  return { dir, work, other, outside, io };
}

test('sandbox: a delegated agent writes its work dir only, reads neither baton’s files nor another root', async (t) => {
  const { dir, work, other, outside, io } = layout(t);
  const hub = await startHub(t, {
    dir,
    roots: [work, other],
    agents: {
      boxed: {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        // The agent's record and sessions: a path the operator allows it to write.
        env: { ACP_TEST_AGENT_RECORD: join(io, 'record.jsonl'), ACP_TEST_AGENT_STATE: join(io, 'state') },
        target: 'box',
      },
    },
    targets: { box: { kind: 'sandbox', writable: [io] } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const reach = {
    read: [join(outside, 'readable.txt'), join(other, 'secret.txt'), hub.configPath, join(hub.stateDir, 'baton.db')],
    write: [join(work, 'inside.txt'), join(outside, 'planted.txt'), join(other, 'planted.txt'), '/tmp/scratch.txt'],
  };
  const run = await call<{ taskId: string; target: string }>(alice, 'agent_run', {
    prompt: acpScript([{ reach }]),
    cwd: work,
    idempotencyKey: 'boxed',
  });
  assert.equal(run.target, 'box');
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  const text = (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text;
  const seen = JSON.parse(text.slice('reach:'.length)) as {
    read: Record<string, string>;
    write: Record<string, string>;
  };
  assert.deepEqual(seen.read, {
    [join(outside, 'readable.txt')]: 'ok:21',
    [join(other, 'secret.txt')]: 'error:ENOENT',
    [hub.configPath]: 'error:ENOENT',
    [join(hub.stateDir, 'baton.db')]: 'error:ENOENT',
  });
  assert.equal(seen.write[join(work, 'inside.txt')], 'ok');
  assert.equal(seen.write[join(outside, 'planted.txt')], 'error:EROFS');
  // Another root is an empty scratch dir in the agent's view: a write there lands nowhere on the host.
  assert.equal(existsSync(join(other, 'planted.txt')), false);
  assert.equal(seen.write['/tmp/scratch.txt'], 'ok', 'a private /tmp');
  assert.equal(existsSync('/tmp/scratch.txt'), false, 'not the host /tmp');
  assert.equal(readFileSync(join(work, 'inside.txt'), 'utf8'), 'written by the agent\n');
  assert.equal(existsSync(join(outside, 'planted.txt')), false);
});

test('sandbox: an agent installed under /tmp starts, sees its install read-only and nothing else of the host /tmp', async (t) => {
  const { dir, work, io } = layout(t);
  // The agent's program under the host /tmp (as when a checkout lives there), and a neighbour it must not see.
  const install = mkdtempSync('/tmp/baton-install-');
  const neighbour = mkdtempSync('/tmp/baton-neighbour-');
  t.after(() => {
    rmSync(install, { recursive: true, force: true });
    rmSync(neighbour, { recursive: true, force: true });
  });
  const launcher = join(install, 'agent');
  writeFileSync(launcher, `#!/bin/sh\nexec '${process.execPath}' '${SCRIPTED_ACP_AGENT}' "$@"\n`, { mode: 0o755 });
  writeFileSync(join(neighbour, 'secret.txt'), 'a neighbour in /tmp\n');
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      boxed: {
        kind: 'acp',
        command: [launcher],
        env: { ACP_TEST_AGENT_RECORD: join(io, 'record.jsonl'), ACP_TEST_AGENT_STATE: join(io, 'state') },
        target: 'box',
      },
    },
    targets: { box: { kind: 'sandbox', writable: [io] } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const reach = { read: [launcher, join(neighbour, 'secret.txt')], write: [join(install, 'planted.txt')] };
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ reach }]),
    cwd: work,
    idempotencyKey: 'installed-in-tmp',
  });
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  const text = (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text;
  const seen = JSON.parse(text.slice('reach:'.length)) as {
    read: Record<string, string>;
    write: Record<string, string>;
  };
  assert.match(seen.read[launcher]!, /^ok:/);
  assert.equal(seen.read[join(neighbour, 'secret.txt')], 'error:ENOENT');
  assert.equal(seen.write[join(install, 'planted.txt')], 'error:EROFS');
  assert.equal(existsSync(join(install, 'planted.txt')), false);
});

test('sandbox: the real Codex writes its work dir and cannot read another root', async (t) => {
  const { dir, work, other } = layout(t);
  const mock = await startResponsesMock(t);
  const hub = await startHub(t, {
    dir,
    roots: [work, other],
    agents: {
      codex: {
        kind: 'codex',
        command: [process.execPath, bins.codex()],
        model: 'mock-model',
        modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
        userCodexHome: join(dir, 'no-user-login'),
        target: 'box',
      },
    },
    targets: { box: { kind: 'sandbox' } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  mock.push(
    shellCall(`echo made-by-codex > made.txt; cat ${join(other, 'secret.txt')}; echo "exit=$?"`),
    reply('codex done'),
  );
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: 'write a file',
    cwd: work,
    idempotencyKey: 'codex-box',
  });
  const end = await followToEnd(alice, run.taskId);
  assert.equal(end.state, 'succeeded', JSON.stringify(end.last));
  const output = mock.turns
    .at(-1)!
    .input.filter((i) => i.type === 'function_call_output')
    .map((i) => String(i.output))
    .join('\n');
  assert.match(output, /No such file or directory/, output);
  assert.match(output, /exit=1/, output);
  assert.equal(readFileSync(join(work, 'made.txt'), 'utf8'), 'made-by-codex\n');
});

test('sandbox without bubblewrap: agent_run is refused naming the target, nothing recorded', async (t) => {
  const { dir, work } = layout(t);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { boxed: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], target: 'box' } },
    targets: { box: { kind: 'sandbox', bwrap: join(dir, 'no-such-bwrap') } },
  });
  assert.match(hub.output(), /^FAIL: target "box" \(sandbox\) cannot run: bubblewrap not found/m);
  const alice = await connectCaller(t, hub, 'alice');
  const res = await alice.callTool({
    name: 'agent_run',
    arguments: { prompt: 'hi', cwd: work, idempotencyKey: 'refused' },
  });
  assert.equal(res.isError, true);
  assert.match(JSON.stringify(res.content), /target \\"box\\" \(sandbox\) cannot run: bubblewrap not found/);
  const list = await call<{ tasks: unknown[] }>(alice, 'agent_list', {});
  assert.deepEqual(list.tasks, [], 'nothing was recorded');
});
