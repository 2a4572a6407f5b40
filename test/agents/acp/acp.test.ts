// The ACP adapter against the scripted ACP test agent (a real child process speaking ACP v1 through the SDK).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AcpAgent, acpConfigSchema, ResumeUnsupportedError } from '../../../src/agents/acp/index.ts';
import type { AgentEvent, OpenSessionOptions } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { DEFAULT_MAX_LINE_BYTES } from '../../../src/lib/jsonl.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { runTurn } from '../../support/acp-support.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

interface Harness {
  agent: AcpAgent;
  cwd: string;
  recordFile: string;
  stateDir: string;
  records(): Record<string, unknown>[];
}

function harness(
  t: { after: (fn: () => unknown) => void },
  opts: { allowPermissions?: boolean; cancelGraceMs?: number; persist?: boolean; env?: Record<string, string> } = {},
): Harness {
  const root = tempDir(t, 'baton-acp-');
  const recordFile = join(root, 'record.jsonl');
  const stateDir = join(root, 'state');
  const cwd = join(root, 'work');
  for (const d of [stateDir, cwd]) mkdirSync(d, { recursive: true });
  const env: Record<string, string> = { ACP_TEST_AGENT_RECORD: recordFile, ...opts.env };
  if (opts.persist) env.ACP_TEST_AGENT_STATE = stateDir;
  const config = acpConfigSchema.parse({
    command: [process.execPath, SCRIPTED_ACP_AGENT],
    env,
    allowPermissions: opts.allowPermissions,
    cancelGraceMs: opts.cancelGraceMs,
  });
  return {
    agent: new AcpAgent('scripted', config, { logger: silentLogger }),
    cwd,
    recordFile,
    stateDir,
    records: () =>
      existsSync(recordFile)
        ? readFileSync(recordFile, 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [],
  };
}

async function open(
  h: Harness,
  t: { after: (fn: () => unknown) => void },
  resume?: string,
  more: Partial<OpenSessionOptions> = {},
) {
  const pgids: number[] = [];
  const session = await h.agent.openSession({
    cwd: h.cwd,
    sandbox: 'workspace-write',
    signal: new AbortController().signal,
    resume,
    ...more,
    onProcessGroup: (pgid) => pgids.push(pgid),
  });
  t.after(() => session.close());
  return { session, pgids };
}

describe('ACP adapter with the scripted test agent', () => {
  test('a turn maps chunks, tools, plan and usage; hides reasoning, arguments, outputs and paths', async (t) => {
    process.env.BATON_TEST_PLANTED = 'planted-baton-variable';
    t.after(() => delete process.env.BATON_TEST_PLANTED);
    const h = harness(t, { env: { ACP_TEST_AGENT_MARK: 'from-config' } });
    const { session, pgids } = await open(h, t);
    assert.ok(session.id?.startsWith('test-'));

    const { events, end, text } = await runTurn(session, {
      steps: [
        { thought: 'HIDDEN-REASONING' },
        { chunks: ['Hello', ', ', 'world'] },
        { tool: { kind: 'execute', title: 'cat /very/secret/path' } },
        { tool: { kind: 'edit', title: 'edit /very/secret/path', fail: true } },
        {
          plan: [
            { content: 'done step', status: 'completed', priority: 'high' },
            { content: 'Write\nthe   tests', status: 'in_progress', priority: 'high' },
          ],
        },
        { usageCost: 0.25 },
        { reply: '!' },
      ],
    });
    assert.deepEqual(end, { kind: 'end', outcome: 'succeeded' });
    assert.equal(text, 'Hello, world!');
    assert.deepEqual(events[0], { kind: 'session', id: session.id });
    assert.deepEqual(
      events.filter((e) => e.kind === 'tool'),
      [
        { kind: 'tool', phase: 'start', family: 'command' },
        { kind: 'tool', phase: 'end', family: 'command', ok: true },
        { kind: 'tool', phase: 'start', family: 'patch' },
        { kind: 'tool', phase: 'end', family: 'patch', ok: false },
      ],
    );
    assert.deepEqual(
      events.filter((e) => e.kind === 'status'),
      [{ kind: 'status', text: 'Write the tests' }],
    );
    assert.deepEqual(
      events.filter((e) => e.kind === 'usage'),
      [{ kind: 'usage', sessionCostUsd: 0.25 }],
    );
    const wire = JSON.stringify(events);
    for (const hidden of ['HIDDEN-REASONING', 'SECRET-TOOL-OUTPUT', '/very/secret/path', 'cat '])
      assert.ok(!wire.includes(hidden), `${hidden} must not be surfaced`);

    // What the agent saw: no MCP servers (AG-7), no fs/terminal offered, the task cwd, no BATON_* env, config env.
    const records = h.records();
    const created = records.find((r) => r.event === 'session/new') as { params: { mcpServers: unknown; cwd: string } };
    assert.deepEqual(created.params.mcpServers, []);
    assert.equal(created.params.cwd, h.cwd);
    const init = records.find((r) => r.event === 'initialize') as {
      params: { clientCapabilities: { fs?: Record<string, boolean>; terminal?: boolean } };
    };
    assert.deepEqual(init.params.clientCapabilities.fs, { readTextFile: false, writeTextFile: false });
    assert.equal(init.params.clientCapabilities.terminal, false);
    const start = records.find((r) => r.event === 'start') as { pid: number; batonEnv: string[] };
    assert.deepEqual(start.batonEnv, []);
    assert.deepEqual(
      records.find((r) => r.event === 'env'),
      { pid: start.pid, event: 'env', mark: 'from-config', cwd: h.cwd },
    );
    // The engine learns the process group (AG-8): the agent leads its own group.
    assert.deepEqual(pgids, [start.pid]);

    // A second turn in the same session; plain text is echoed; no second session event.
    const second = await runTurn(session, 'again');
    assert.equal(second.text, 'echo: again');
    assert.ok(!second.events.some((e) => e.kind === 'session'));

    await session.close();
    assert.equal(pidAlive(start.pid), false);
    await session.close(); // safe twice
  });

  test('permission requests are denied and reported by default, granted when the config allows', async (t) => {
    const denied = harness(t);
    const a = await open(denied, t);
    const turn = await runTurn(a.session, {
      steps: [{ permission: { kind: 'execute', title: 'rm -rf /very/secret/path' } }],
    });
    assert.equal(turn.text, 'permission:denied');
    assert.deepEqual(
      turn.events.filter((e) => e.kind === 'permission'),
      [{ kind: 'permission', decision: 'denied', what: 'run a command' }],
    );
    assert.ok(!JSON.stringify(turn.events).includes('secret'));
    assert.deepEqual(turn.end, { kind: 'end', outcome: 'succeeded' });

    const allowed = harness(t, { allowPermissions: true });
    const b = await open(allowed, t);
    const granted = await runTurn(b.session, { steps: [{ permission: { kind: 'edit', title: 'edit a file' } }] });
    assert.equal(granted.text, 'permission:granted');
    assert.deepEqual(
      granted.events.filter((e) => e.kind === 'permission'),
      [{ kind: 'permission', decision: 'allowed', what: 'change files' }],
    );
    assert.deepEqual(
      allowed.records().find((r) => r.event === 'permission')?.outcome,
      { outcome: 'selected', optionId: 'yes' },
      'allow once, never allow always',
    );

    // A read-only task never grants, whatever the config says.
    const readOnly = await open(allowed, t, undefined, { sandbox: 'read-only' });
    const refused = await runTurn(readOnly.session, { steps: [{ permission: { kind: 'edit', title: 'edit' } }] });
    assert.equal(refused.text, 'permission:denied');
    assert.deepEqual(
      refused.events.filter((e) => e.kind === 'permission'),
      [{ kind: 'permission', decision: 'denied', what: 'change files' }],
    );
  });

  test('model and effort are set through config options only when asked; an unknown value is refused', async (t) => {
    const h = harness(t);
    const plain = await open(h, t);
    assert.equal((await runTurn(plain.session, { steps: [{ config: true }] })).text, 'config:model=alpha,effort=low');
    assert.ok(!h.records().some((r) => r.event === 'session/set_config_option'), 'nothing chosen unasked');

    const chosen = await open(h, t, undefined, { model: 'beta', effort: 'high' });
    assert.equal((await runTurn(chosen.session, { steps: [{ config: true }] })).text, 'config:model=beta,effort=high');
    assert.deepEqual(
      h
        .records()
        .filter((r) => r.event === 'session/set_config_option')
        .map((r) => r.params),
      [
        { sessionId: chosen.session.id, configId: 'model', value: 'beta' },
        { sessionId: chosen.session.id, configId: 'effort', value: 'high' },
      ],
    );

    const pgids: number[] = [];
    await assert.rejects(
      h.agent.openSession({
        cwd: h.cwd,
        sandbox: 'read-only',
        signal: new AbortController().signal,
        model: 'gamma',
        onProcessGroup: (p) => pgids.push(p),
      }),
      /agent "scripted" has no model "gamma"; it offers: alpha, beta/,
    );
    assert.equal(isGroupAlive(pgids[0]!), false);
  });

  test('cancel: session/cancel acknowledged within the grace ends the turn cancelled; the session stays usable', async (t) => {
    // A generous grace: the acknowledged path never waits for it, and a loaded machine must not turn it into a failure.
    const h = harness(t, { cancelGraceMs: 60_000 });
    const { session } = await open(h, t);
    const { end, text } = await runTurn(
      session,
      { steps: [{ reply: 'working' }, { stall: true }, { reply: 'never said' }] },
      (e) => e.kind === 'message',
    );
    assert.deepEqual(end, { kind: 'end', outcome: 'cancelled', acknowledged: true });
    assert.equal(text, 'working');
    assert.ok(h.records().some((r) => r.event === 'session/cancel'));
    assert.equal((await runTurn(session, 'still there?')).text, 'echo: still there?');

    // An already-aborted signal never reaches the agent.
    const controller = new AbortController();
    controller.abort();
    const events: AgentEvent[] = [];
    for await (const e of session.turn('ignored', { signal: controller.signal })) events.push(e);
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
  });

  test('an agent that ignores cancel: unacknowledged after the grace, close() kills the whole group', async (t) => {
    const h = harness(t, { cancelGraceMs: 300, env: { ACP_TEST_AGENT_IGNORE_TERM: '1' } });
    const { session, pgids } = await open(h, t);
    const { end } = await runTurn(
      session,
      { steps: [{ spawnChild: true }, { reply: 'stuck' }, { ignoreCancel: true }] },
      (e) => e.kind === 'message',
    );
    assert.deepEqual(end, { kind: 'end', outcome: 'cancelled', acknowledged: false });
    const refused = await runTurn(session, 'next');
    assert.equal(refused.end.outcome, 'failed');
    assert.match(refused.end.error ?? '', /never stopped its previous turn/);

    const records = h.records();
    const agentPid = (records.find((r) => r.event === 'start') as { pid: number }).pid;
    const grandchildPid = (records.find((r) => r.event === 'grandchild') as { grandchildPid: number }).grandchildPid;
    assert.ok(pidAlive(agentPid) && pidAlive(grandchildPid));
    await session.close(); // SIGTERM is ignored by the agent: this needs the KILL after the grace
    assert.equal(pidAlive(agentPid), false);
    assert.equal(pidAlive(grandchildPid), false);
    assert.equal(isGroupAlive(pgids[0]!), false);
    assert.ok(h.records().some((r) => r.event === 'sigterm-ignored'));
  });

  test('a crash mid-turn ends the turn failed with the exit code and the last stderr line', async (t) => {
    const h = harness(t);
    const { session } = await open(h, t);
    const { end, text } = await runTurn(session, { steps: [{ reply: 'before crash' }, { crash: 3 }] });
    assert.equal(text, 'before crash');
    assert.equal(end.outcome, 'failed');
    assert.match(end.error ?? '', /agent "scripted" failed the turn: the agent process exited with code 3/);
    assert.match(end.error ?? '', /crashing on purpose/);
    const after = await runTurn(session, 'hello?');
    assert.match(after.end.error ?? '', /no longer running/);
  });

  test('stop reasons other than end_turn are reported as failures with a reason', async (t) => {
    const h = harness(t);
    const { session } = await open(h, t);
    const { end, text } = await runTurn(session, { steps: [{ reply: 'partial' }], stopReason: 'max_tokens' });
    assert.equal(text, 'partial');
    assert.deepEqual(end, {
      kind: 'end',
      outcome: 'failed',
      error: 'the agent stopped early: it reached its output token limit',
    });
  });

  test('an oversized frame fails the turn instead of growing memory (SE-5)', async (t) => {
    const h = harness(t);
    const { session, pgids } = await open(h, t);
    const { end } = await runTurn(session, { steps: [{ bigFrame: DEFAULT_MAX_LINE_BYTES + 1024 }, { reply: 'x' }] });
    assert.equal(end.outcome, 'failed');
    assert.match(end.error ?? '', /exceeds the 4194304-byte limit; the agent was stopped/);
    // The process is stopped without waiting for close(); a group that is not our child has no exit event to await.
    await until(() => !isGroupAlive(pgids[0]!), { what: 'the agent group to stop after an oversized frame' });
    assert.match((await runTurn(session, 'more?')).end.error ?? '', /no longer running/);
  });

  test('the agent works in the task cwd (writes a file there); stray stdout lines are skipped', async (t) => {
    const h = harness(t);
    const { session } = await open(h, t);
    const { end, text } = await runTurn(session, {
      steps: [
        { junkLine: 'a stray log line' },
        { writeFile: { name: 'out.txt', content: 'written' } },
        { reply: 'ok' },
      ],
    });
    assert.equal(end.outcome, 'succeeded', 'a stray non-JSON stdout line is skipped');
    assert.equal(text, 'ok');
    assert.equal(readFileSync(join(h.cwd, 'out.txt'), 'utf8'), 'written');
  });

  test('resume: session/load in a new agent process sees the earlier history; replay is not surfaced', async (t) => {
    const h = harness(t, { persist: true });
    const first = await open(h, t);
    await runTurn(first.session, 'first prompt');
    await runTurn(first.session, 'second prompt');
    const id = first.session.id!;
    await first.session.close();

    const resumed = await open(h, t, id);
    assert.equal(resumed.session.id, id);
    const { events, text } = await runTurn(resumed.session, { steps: [{ history: true }] });
    assert.equal(text, 'history:2');
    assert.ok(!JSON.stringify(events).includes('replayed'));
    const load = h.records().find((r) => r.event === 'session/load') as { params: Record<string, unknown> };
    assert.deepEqual(load.params, { sessionId: id, cwd: h.cwd, mcpServers: [] });
    assert.notEqual(resumed.pgids[0], first.pgids[0]);
  });

  test('resume on an agent without session/load is refused clearly, and the process is stopped', async (t) => {
    const h = harness(t);
    const pgids: number[] = [];
    await assert.rejects(
      h.agent.openSession({
        cwd: h.cwd,
        sandbox: 'workspace-write',
        signal: new AbortController().signal,
        resume: 'test-unknown',
        onProcessGroup: (p) => pgids.push(p),
      }),
      (err: Error) => err instanceof ResumeUnsupportedError && /cannot resume a saved session/.test(err.message),
    );
    assert.equal(pgids.length, 1);
    assert.equal(isGroupAlive(pgids[0]!), false);
  });

  test('unknown resume, missing login, an agent dying at start and a missing cwd fail with clear messages', async (t) => {
    const h = harness(t, { persist: true });
    await assert.rejects(
      h.agent.openSession({
        cwd: h.cwd,
        sandbox: 'read-only',
        signal: new AbortController().signal,
        resume: 'test-nope',
      }),
      /agent "scripted" failed session\/load: Resource not found/,
    );
    const loggedOut = harness(t, { env: { ACP_TEST_AGENT_AUTH_REQUIRED: '1' } });
    await assert.rejects(
      loggedOut.agent.openSession({ cwd: h.cwd, sandbox: 'read-only', signal: new AbortController().signal }),
      /failed session\/new: Authentication required; log in with the agent's own CLI first/,
    );
    const dying = new AcpAgent(
      'dying',
      { command: [process.execPath, '-e', 'process.stderr.write("no credentials configured\\n"); process.exit(2)'] },
      { logger: silentLogger },
    );
    await assert.rejects(
      dying.openSession({ cwd: h.cwd, sandbox: 'read-only', signal: new AbortController().signal }),
      /agent "dying" failed initialize: the agent process exited with code 2 \(last stderr line: no credentials configured\)/,
    );
    const probe = await dying.probe();
    assert.equal(probe.available, false);
    assert.match(probe.detail ?? '', /exited with code 2/);
    await assert.rejects(dying.probeSession(), /agent "dying" failed initialize: the agent process exited with code 2/);
    await assert.rejects(
      h.agent.openSession({ cwd: join(h.cwd, 'missing'), sandbox: 'read-only', signal: new AbortController().signal }),
      /working directory ".*missing" does not exist/,
    );
    const aborted = new AbortController();
    aborted.abort();
    const pgids: number[] = [];
    await assert.rejects(
      h.agent.openSession({
        cwd: h.cwd,
        sandbox: 'read-only',
        signal: aborted.signal,
        onProcessGroup: (p) => pgids.push(p),
      }),
      /agent "scripted": start was cancelled/,
    );
    assert.deepEqual(pgids, [], 'a start cancelled before it began spawns nothing');
  });

  test('probe reports the version from initialize; probeSession opens a session without a prompt', async (t) => {
    const h = harness(t);
    const probe = await h.agent.probe();
    assert.deepEqual(probe, {
      name: 'scripted',
      kind: 'acp',
      available: true,
      login: 'unknown',
      binary: process.execPath,
      version: '9.8.7',
    });
    // As `baton doctor` calls it: no arguments, resolves when a session could be opened and closed.
    const check = await h.agent.probeSession();
    // It also says which models and efforts the session offered (agent_agents lists them).
    assert.deepEqual(check, {
      version: '9.8.7',
      loadSession: false,
      models: ['alpha', 'beta'],
      efforts: ['low', 'high'],
    });
    const records = h.records();
    assert.ok(records.some((r) => r.event === 'session/new'));
    assert.ok(!records.some((r) => r.event === 'stalling' || r.event === 'permission'));

    const missing = new AcpAgent(
      'missing',
      { command: ['baton-no-such-agent-binary', 'acp'] },
      { logger: silentLogger },
    );
    const p = await missing.probe();
    assert.equal(p.available, false);
    assert.match(p.detail ?? '', /binary "baton-no-such-agent-binary" not found on PATH/);
    await assert.rejects(
      missing.openSession({ cwd: h.cwd, sandbox: 'read-only', signal: new AbortController().signal }),
      /not found on PATH or in the usual install places; install it or set its path in the agent.s config/,
    );
  });

  test('a known CLI answers --version; the catalog probe starts it once and takes the version from initialize', async (t) => {
    const h = harness(t);
    // The scripted agent under a known CLI's name: a wrapper that answers --version itself (and leaves a marker).
    const bin = join(h.stateDir, 'bin');
    mkdirSync(bin);
    const marker = join(h.stateDir, 'version-flag-asked');
    const dsh = join(bin, 'dsh');
    writeFileSync(
      dsh,
      `#!/bin/sh\nif [ "$1" = --version ]; then : > '${marker}'; echo 'dsh 1.2.3'; exit 0; fi\nexec '${process.execPath}' '${SCRIPTED_ACP_AGENT}' "$@"\n`,
      { mode: 0o755 },
    );
    const agent = new AcpAgent(
      'dsh',
      { command: [dsh, 'acp'], env: { ACP_TEST_AGENT_RECORD: h.recordFile } },
      { logger: silentLogger },
    );
    const plain = await agent.probe();
    assert.deepEqual([plain.available, plain.version], [true, '1.2.3']);
    assert.equal(existsSync(marker), true);
    assert.equal(h.records().filter((r) => r.event === 'start').length, 0, 'the plain probe started no agent');

    rmSync(marker);
    const catalog = await agent.probe({ catalog: true });
    assert.deepEqual([catalog.available, catalog.version, catalog.models], [true, '9.8.7', ['alpha', 'beta']]);
    assert.equal(existsSync(marker), false, 'no second start for --version');
    assert.equal(h.records().filter((r) => r.event === 'start').length, 1);
  });

  test('config is strict and the kind is registered', () => {
    assert.throws(() => acpConfigSchema.parse({ command: [] }), /command must name the agent binary/);
    assert.throws(() => acpConfigSchema.parse({ command: ['x'], extra: 1 }));
    assert.throws(() => acpConfigSchema.parse({ command: ['x'], cancelGraceMs: 1.5 }));
    const agent = createAgent(
      'gem',
      { kind: 'acp', command: ['gemini', '--acp'] },
      { stateDir: '/nonexistent', logger: silentLogger },
    );
    assert.equal(agent.kind, 'acp');
    assert.equal(agent.name, 'gem');
  });
});
