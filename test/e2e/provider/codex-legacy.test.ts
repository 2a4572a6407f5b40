// The legacy passthrough (Codex ≤ 0.153: `codex mcp-server` of @openai/codex 0.153.4, npm alias codex-legacy) against
// the Responses mock. Most tests drive the real legacy binary through the MCP SDK client over stdio. Tests that need
// Codex to misbehave run it behind the test-only shim `codex/legacy-shim.mjs` and say so: the byte-for-byte comparison
// (tee), the typed unauthorized event, terminal result recovery (withheld response), an ignored cancel (blocking and
// background, abandoned, then logged again when the turn finishes) and a stall in the middle of a frame. Job and call
// cancellation run on the real binary; the hard deadline is in codex-legacy-deadline.test.ts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import {
  httpError,
  MOCK_MODEL,
  ResponsesMock,
  reply,
  shellCall,
  stalledReply,
  userTexts,
} from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins, NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';
import { until } from '../../support/poll.ts';
import {
  type Connected,
  connectProvider,
  type Layout,
  makeLayout,
  mockProviderFlag,
  OTHER_MODEL,
  PLANTED_SECRET,
  processesRunning,
  textOf,
} from './codex/harness.ts';

const SHIM = join(REPO_ROOT, 'test/e2e/provider/codex/legacy-shim.mjs');
let mock: ResponsesMock;
let layout: Layout;
let conn: Connected;
const gates: Gate[] = [];

before(async () => {
  mock = await ResponsesMock.start();
  layout = makeLayout('baton-codex-legacy-');
  conn = await connectProvider(bins.codexLegacy(), layout, mock, ['--goal', 'LEGACY-DEFAULT-GOAL'], {}, '2025');
});
after(async () => {
  for (const g of gates) g.open();
  await conn?.close();
  await mock?.close();
  layout?.cleanup();
});

const developerTexts = (input: Array<Record<string, unknown>>) =>
  input
    .filter((i) => i.type === 'message' && i.role === 'developer')
    .flatMap((i) => (i.content as Array<{ text?: string }>).map((c) => c.text ?? ''));
const effortOf = (n: number) => (mock.turns[n]!.raw.body as { reasoning?: { effort?: string } }).reasoning?.effort;
const sc = <T>(res: { structuredContent?: unknown }) => res.structuredContent as T;
const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

/** The bridge's structured log lines (JSON on stderr). */
const logEntries = (stderr: string): Array<Record<string, unknown>> =>
  stderr.split('\n').flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

test('tools/list is rewritten to the curated schemas plus the job tools; bad arguments are -32602 locally', async () => {
  const { tools } = await conn.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [
    'codex',
    'codex-cancel',
    'codex-commentary',
    'codex-peek',
    'codex-reply',
    'codex-result',
    'codex-start',
    'codex-status',
  ]);
  const codex = tools.find((t) => t.name === 'codex')!.inputSchema as Record<string, unknown>;
  assert.equal(codex.additionalProperties, false);
  assert.deepEqual(Object.keys(codex.properties as object).sort(), [
    'allow_subagents',
    'cwd',
    'goal',
    'model',
    'model_reasoning_effort',
    'prompt',
    'sandbox',
  ]);
  const turns = mock.turns.length;
  for (const args of [
    { prompt: 'p', sandbox: 'read-only', config: {} },
    { prompt: 'p', sandbox: 'read-only', 'approval-policy': 'never' },
    { prompt: 'p', sandbox: 'read-only', 'developer-instructions': 'x' },
    { prompt: 'p', sandbox: 'read-only', model: 'gpt-4o' },
    { prompt: 'p' },
    { prompt: 'p \uD800', sandbox: 'read-only' },
    JSON.parse('{"__proto__":{"model":"gpt-4o"},"prompt":"p","sandbox":"read-only"}'),
  ]) {
    await assert.rejects(
      conn.call('codex', args),
      (e: unknown) => e instanceof ProtocolError && e.code === ProtocolErrorCode.InvalidParams,
      JSON.stringify(args),
    );
  }
  assert.equal(mock.turns.length, turns, 'Codex never started a turn');
});

test('a 2026-07-28 client probing legacy Codex falls back to the 2025 handshake and gets the same tools', async () => {
  // Legacy Codex's own server only speaks the 2025 protocol; the bridge passes the probe through and the SDK v2
  // client's `auto` negotiation settles on `initialize`.
  const modern = await connectProvider(bins.codexLegacy(), layout, mock, [], {}, 'auto');
  try {
    assert.equal(modern.client.getProtocolEra(), 'legacy');
    const { tools } = await modern.client.listTools();
    assert.ok(
      tools.some(
        (t) =>
          t.name === 'codex' && (t.inputSchema as { additionalProperties?: boolean }).additionalProperties === false,
      ),
    );
    await assert.rejects(
      modern.call('codex', { prompt: 'p', sandbox: 'read-only', config: {} }),
      (e: unknown) => e instanceof ProtocolError && e.code === ProtocolErrorCode.InvalidParams,
    );
  } finally {
    await modern.close();
  }
});

let threadId = '';

test('codex / codex-reply on legacy Codex: seed shape, goal, curated model and effort, progress, inheritance', async () => {
  mock.push(reply('legacy answer'), reply('legacy second'));
  const progress: string[] = [];
  const res = (await conn.client.callTool(
    {
      name: 'codex',
      arguments: {
        prompt: 'start',
        cwd: layout.workspace,
        sandbox: 'read-only',
        model: OTHER_MODEL,
        model_reasoning_effort: 'high',
      },
    },
    { onprogress: (p) => progress.push(p.message ?? ''), timeout: 120_000 },
  )) as Awaited<ReturnType<Connected['call']>>;
  assert.equal(textOf(res), 'legacy answer');
  threadId = sc<{ threadId: string }>(res).threadId;
  assert.match(threadId, /^[0-9a-f-]{36}$/);
  assert.equal(sc<{ content: string }>(res).content, 'legacy answer');
  assert.equal(progress[0], 'Codex: started');
  const first = mock.turns.at(-1)!;
  assert.equal(first.model, OTHER_MODEL);
  assert.equal(effortOf(mock.turns.length - 1), 'high');
  assert.ok(
    developerTexts(first.input).some((t) => t.includes('LEGACY-DEFAULT-GOAL')),
    'default goal applied',
  );

  const again = await conn.call('codex-reply', { threadId, prompt: 'more', goal: 'LEGACY-REMINDER' });
  assert.equal(textOf(again), 'legacy second');
  assert.equal(effortOf(mock.turns.length - 1), 'high', 'effort inherited');
  assert.match(userTexts(mock.turns.at(-1)!).at(-1)!, /LEGACY-REMINDER[\s\S]*more$/);

  const homes = join(layout.launchDir, 'tmp', 'codex-homes');
  const legacyHome = readdirSync(homes).find((d) => d.startsWith('legacy-'))!;
  assert.equal(statSync(join(homes, legacyHome)).mode & 0o777, 0o700);
  const config = readFileSync(join(homes, legacyHome, 'config.toml'), 'utf8');
  assert.equal(statSync(join(homes, legacyHome, 'config.toml')).mode & 0o777, 0o600);
  assert.match(config, /\[agents\]\nenabled = false/, '0.153.4 ≥ 0.145.0');
  assert.doesNotMatch(config, /mcp_servers/);
  assert.doesNotMatch(conn.stderr(), new RegExp(PLANTED_SECRET));
});

test('background jobs on legacy Codex run as private calls', async () => {
  const gate = new Gate();
  gates.push(gate);
  const reached = mock.waitForTurn(mock.turns.length);
  mock.push(stalledReply(gate, 'job finished'));
  const { jobId } = sc<{ jobId: string }>(
    await conn.call('codex-start', { prompt: 'background', cwd: layout.workspace, sandbox: 'read-only' }),
  );
  await reached;
  const peek = sc<{ turns: Array<Record<string, unknown>> }>(await conn.call('codex-peek', {}));
  assert.equal(peek.turns.length, 1);
  assert.equal(peek.turns[0]!.jobId, jobId);
  assert.equal(peek.turns[0]!.requestId, undefined);
  gate.open();
  const done = await until(
    async () =>
      sc<{ done: boolean; state: string }>(await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 5_000 })),
    {
      what: 'job',
      ok: (v) => v.done,
    },
  );
  assert.equal(done.state, 'completed');
  const result = sc<{ text: string; threadId: string }>(await conn.call('codex-result', { jobId }));
  assert.equal(result.text, 'job finished');
  assert.match(result.threadId, /^[0-9a-f-]{36}$/);
});

test('cancel on legacy Codex: codex-cancel stops a job and the command it runs, a client cancel ends a call; both acknowledged', async () => {
  const marker = `sleep 31.${process.pid}`;
  mock.push(shellCall(marker));
  const { jobId } = sc<{ jobId: string }>(
    await conn.call('codex-start', { prompt: 'run it', cwd: layout.workspace, sandbox: 'read-only' }),
  );
  // The command runs (the sleep itself, past the sandbox wrappers) and the job's status shows Codex reported it
  // (exec_command_begin). By then Codex keeps it as a background process that its interrupt leaves running, so this
  // is the case where baton must stop it; a cancel sent sooner can reach Codex while it still kills the command itself.
  await until(async () => processesRunning(marker).filter((pid) => commandOf(pid).startsWith('sleep ')).length, {
    what: 'the job to run its command',
    ok: (n) => n > 0,
  });
  await until(
    async () => sc<{ status: string }>(await conn.call('codex-status', { jobId, cursor: 0, wait_ms: 0 })).status,
    {
      what: 'Codex to report the command',
      ok: (status) => status === 'Running a command',
    },
  );
  const cancelled = sc<{ state: string; done: boolean }>(await conn.call('codex-cancel', { jobId }));
  assert.equal(cancelled.state, 'cancelled');
  assert.equal(cancelled.done, true);
  assert.deepEqual(processesRunning(marker), [], 'the command is stopped before the cancel is answered');
  const peek = sc<{ turns: unknown[]; abandonedTurnsProcessWide: number }>(await conn.call('codex-peek', {}));
  assert.deepEqual(peek.turns, []);
  assert.equal(peek.abandonedTurnsProcessWide, 0, 'Codex acknowledged the cancel');
  assert.equal((await conn.call('codex-result', { jobId })).isError, true, 'a cancelled job has no result');

  // A client cancel of a blocking call is acknowledged the same way: the row goes, nothing is abandoned.
  const gate = new Gate();
  gates.push(gate);
  const reached = mock.waitForTurn(mock.turns.length);
  mock.push(stalledReply(gate));
  const controller = new AbortController();
  const call = conn.client.callTool(
    { name: 'codex', arguments: { prompt: 'cancel me', sandbox: 'read-only', cwd: layout.workspace } },
    { signal: controller.signal, timeout: 120_000 },
  );
  await reached;
  controller.abort();
  await assert.rejects(call);
  const settled = await until(
    async () => sc<{ turns: unknown[]; abandonedTurnsProcessWide: number }>(await conn.call('codex-peek', {})),
    {
      what: 'the cancelled call to settle',
      ok: (p) => p.turns.length === 0,
    },
  );
  assert.equal(settled.abandonedTurnsProcessWide, 0, 'Codex acknowledged the cancel (default 30 s grace)');
  gate.open();
  mock.push(reply('still serving'));
  assert.equal(
    textOf(await conn.call('codex', { prompt: 'next', sandbox: 'read-only', cwd: layout.workspace })),
    'still serving',
  );
});

test('a client cancel stops the commands of the cancelled turn and spares one an earlier turn left running', async () => {
  const earlier = `sleep 33.${process.pid}`;
  const later = `sleep 34.${process.pid}`;
  const running = (marker: string) => processesRunning(marker).filter((pid) => commandOf(pid).startsWith('sleep '));
  try {
    // The first turn leaves its command running: Codex answers the model after a short yield with the process alive.
    const yieldSoon = { name: 'exec_command', args: (cmd: string) => ({ cmd, yield_time_ms: 250 }) };
    mock.push(shellCall(earlier, { tool: yieldSoon }), reply('left it running'));
    const first = await conn.call('codex', { prompt: 'start it', sandbox: 'read-only', cwd: layout.workspace });
    assert.equal(textOf(first), 'left it running');
    assert.equal(running(earlier).length, 1, 'the earlier command outlived its turn');

    // A blocking reply on that thread runs another command; the client cancels it once Codex reported the command.
    mock.push(shellCall(later));
    const progress: string[] = [];
    const controller = new AbortController();
    const call = conn.client.callTool(
      { name: 'codex-reply', arguments: { threadId: sc<{ threadId: string }>(first).threadId, prompt: 'run more' } },
      { signal: controller.signal, timeout: 120_000, onprogress: (p) => progress.push(p.message ?? '') },
    );
    await until(async () => ({ running: running(later).length, reported: progress.includes('Running a command') }), {
      what: 'the reply to run its command',
      ok: (v) => v.running > 0 && v.reported,
    });
    controller.abort();
    await assert.rejects(call);
    await until(async () => processesRunning(later).length, {
      what: 'the cancelled turn’s command stopped',
      ok: (n) => n === 0,
    });
    const peek = sc<{ turns: unknown[]; abandonedTurnsProcessWide: number }>(await conn.call('codex-peek', {}));
    assert.deepEqual(peek.turns, []);
    assert.equal(peek.abandonedTurnsProcessWide, 0, 'Codex acknowledged the cancel');
    assert.equal(running(earlier).length, 1, 'the earlier turn’s command is not the cancelled turn’s');
  } finally {
    for (const pid of [...processesRunning(earlier), ...processesRunning(later)]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  }
});

test('every native frame but tools/list passes byte-for-byte (shim: tee)', async () => {
  const dir = makeLayout('baton-codex-bytes-');
  try {
    writeFileSync(join(dir.launchDir, 'shim-mode.json'), JSON.stringify({ tee: true }));
    mock.push(reply('bytes'));
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bin/baton.js'),
        'mcp',
        '--provider',
        'codex',
        '--codex-command',
        SHIM,
        '--codex-model-provider',
        mockProviderFlag(mock),
        '--codex_models',
        `${MOCK_MODEL},${OTHER_MODEL}`,
        '--model',
        MOCK_MODEL,
      ],
      {
        cwd: dir.launchDir,
        env: { PATH: process.env.PATH, ...NODE_CACHE_ENV, HOME: dir.home, CODEX_HOME: dir.userHome },
        stdio: ['pipe', 'pipe', 'ignore'],
      },
    );
    const out: Buffer[] = [];
    const lines: string[] = [];
    let pending = '';
    const waiting: Array<[number, (l: string) => void]> = [];
    child.stdout.on('data', (d: Buffer) => {
      out.push(d);
      pending += d.toString('utf8');
      for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
        const line = pending.slice(0, i);
        pending = pending.slice(i + 1);
        lines.push(line);
        const m = JSON.parse(line);
        for (const [id, r] of waiting) if (m.id === id && m.method === undefined) r(line);
      }
    });
    const request = (id: number, method: string, params: unknown) =>
      new Promise<string>((r) => {
        waiting.push([id, r]);
        child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      });
    await request(0, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 't', version: '0' },
    });
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const listed = await request(1, 'tools/list', {});
    await request(2, 'tools/call', {
      name: 'codex',
      arguments: { prompt: 'hi', sandbox: 'read-only', cwd: dir.workspace },
    });
    child.stdin.end();
    await new Promise((r) => child.once('exit', r));
    const native = readFileSync(join(dir.launchDir, 'shim-tee.log'), 'utf8').split('\n').filter(Boolean);
    const nativeList = native.find((l) => JSON.parse(l).id === 1)!;
    assert.notEqual(listed, nativeList, 'tools/list rewritten');
    const clientBytes = Buffer.concat(out).toString('utf8');
    const forwarded = native.filter((l) => l !== nativeList);
    assert.ok(forwarded.length > 5, 'initialize, events and the result');
    for (const line of forwarded) assert.ok(clientBytes.includes(`${line}\n`), `byte-for-byte: ${line.slice(0, 80)}`);
    // Order is kept too.
    const positions = forwarded.map((l) => clientBytes.indexOf(`${l}\n`));
    assert.deepEqual(
      [...positions].sort((a, b) => a - b),
      positions,
    );
  } finally {
    dir.cleanup();
  }
});

test('misbehaving Codex (shim): auth invalidation, idle expiry, result recovery, ignored cancel, mid-frame stall', async () => {
  const dir = makeLayout('baton-codex-shim-');
  const setMode = (mode: Record<string, boolean>) =>
    writeFileSync(join(dir.launchDir, 'shim-mode.json'), JSON.stringify(mode));
  const shimmed = await connectProvider(
    SHIM,
    dir,
    mock,
    ['--codex_idle_timeout', '1.5', '--codex-cancel-grace', '1', '--codex-terminal-grace', '0.3'],
    {},
    '2025',
  );
  try {
    // Terminal result recovery: Codex completed the task but never answered the call.
    setMode({ withholdResponses: true });
    mock.push(reply('recovered answer'));
    const recovered = await shimmed.call('codex', { prompt: 'x', sandbox: 'read-only', cwd: dir.workspace });
    assert.equal(textOf(recovered), 'recovered answer');
    assert.match(sc<{ threadId: string }>(recovered).threadId, /^[0-9a-f-]{36}$/);

    // Idle expiry: -32001 for that call only; the connection keeps serving.
    setMode({});
    const gate = new Gate();
    gates.push(gate);
    mock.push(stalledReply(gate));
    await assert.rejects(
      shimmed.call('codex', { prompt: 'stall', sandbox: 'read-only', cwd: dir.workspace }),
      (e: unknown) => e instanceof ProtocolError && e.code === -32001,
    );
    gate.open();
    mock.push(reply('alive'));
    assert.equal(
      textOf(await shimmed.call('codex', { prompt: 'y', sandbox: 'read-only', cwd: dir.workspace })),
      'alive',
    );

    // A cancel Codex never sees: closed after the grace, recorded and logged as abandoned.
    setMode({ ignoreCancel: true });
    const gate2 = new Gate();
    gates.push(gate2);
    const reached = mock.waitForTurn(mock.turns.length);
    mock.push(stalledReply(gate2));
    const controller = new AbortController();
    const call = shimmed.client.callTool(
      { name: 'codex', arguments: { prompt: 'ignore cancel', sandbox: 'read-only', cwd: dir.workspace } },
      { signal: controller.signal, timeout: 120_000 },
    );
    await reached;
    controller.abort();
    await assert.rejects(call);
    await until(async () => sc<{ abandonedTurnsProcessWide: number }>(await shimmed.call('codex-peek', {})), {
      what: 'abandoned',
      ok: (p) => p.abandonedTurnsProcessWide === 1,
    });
    const abandonedCall = logEntries(shimmed.stderr()).find((e) => /turn abandoned/.test(String(e.msg)));
    assert.match(String(abandonedCall?.requestId), /^number:\d+$/);
    // When the abandoned turn later completes, that is logged too.
    gate2.open();
    await until(async () => logEntries(shimmed.stderr()), {
      what: 'the abandoned call to finish',
      ok: (log) =>
        log.some((e) => /abandoned turn finished/.test(String(e.msg)) && e.requestId === abandonedCall!.requestId),
    });

    // The same for a background job whose cancel Codex never sees.
    const gate5 = new Gate();
    gates.push(gate5);
    const jobReached = mock.waitForTurn(mock.turns.length);
    mock.push(stalledReply(gate5));
    const { jobId } = sc<{ jobId: string }>(
      await shimmed.call('codex-start', { prompt: 'ignored job cancel', sandbox: 'read-only', cwd: dir.workspace }),
    );
    await jobReached;
    assert.equal(sc<{ state: string }>(await shimmed.call('codex-cancel', { jobId })).state, 'cancelled');
    assert.equal(
      sc<{ abandonedTurnsProcessWide: number }>(await shimmed.call('codex-peek', {})).abandonedTurnsProcessWide,
      2,
    );
    assert.ok(logEntries(shimmed.stderr()).some((e) => /turn abandoned/.test(String(e.msg)) && e.jobId === jobId));
    gate5.open();
    await until(async () => logEntries(shimmed.stderr()), {
      what: 'the abandoned job to finish',
      ok: (log) => log.some((e) => /abandoned turn finished/.test(String(e.msg)) && e.jobId === jobId),
    });

    // The typed unauthorized event becomes one structured tool error; new turns are then refused locally.
    setMode({ unauthorized: true });
    mock.push(httpError(401, 'revoked'));
    const denied = await shimmed.call('codex', { prompt: 'z', sandbox: 'read-only', cwd: dir.workspace });
    assert.equal(denied.isError, true);
    assert.equal(sc<{ code: string }>(denied).code, 'codex_auth_invalidated');
    assert.equal(sc<{ action: string }>(denied).action, 'reauthenticate_and_restart');
    const turns = mock.turns.length;
    const refused = await shimmed.call('codex', { prompt: 'again', sandbox: 'read-only', cwd: dir.workspace });
    assert.equal(sc<{ code: string }>(refused).code, 'codex_auth_invalidated');
    assert.equal(mock.turns.length, turns);
    await shimmed.responsive();
    assert.equal(sc<{ turns: unknown[] }>(await shimmed.call('codex-peek', {})).turns.length, 0);
  } finally {
    await shimmed.close();
  }

  // Late responses pending suppression are bounded: reaching MAX_SUPPRESSED_CODEX_RESPONSES ends the bridge.
  const bounded = await connectProvider(
    SHIM,
    dir,
    mock,
    ['--codex_idle_timeout', '1', '--codex-max-suppressed', '2'],
    {},
    '2025',
  );
  try {
    setMode({ ignoreCancel: true });
    const gate4 = new Gate();
    gates.push(gate4);
    mock.push(stalledReply(gate4), stalledReply(gate4));
    const closed = new Promise((r) => {
      bounded.transport.onclose = () => r(undefined);
    });
    const results = await Promise.allSettled(
      [1, 2].map((n) => bounded.call('codex', { prompt: `s${n}`, sandbox: 'read-only', cwd: dir.workspace })),
    );
    for (const r of results) assert.ok(r.status === 'rejected' && (r.reason as ProtocolError).code === -32001);
    await closed;
    assert.match(bounded.stderr(), /MAX_SUPPRESSED_CODEX_RESPONSES/);
  } finally {
    await bounded.close().catch(() => {});
  }

  // A stall inside a native frame: the call fails at its idle deadline, then one more grace, then the bridge ends.
  const stalled = await connectProvider(
    SHIM,
    dir,
    mock,
    ['--codex_idle_timeout', '1', '--codex-cancel-grace', '1'],
    {},
    '2025',
  );
  try {
    setMode({ cutMidFrame: true });
    const gate3 = new Gate();
    gates.push(gate3);
    mock.push(stalledReply(gate3));
    const closed = new Promise((r) => {
      stalled.transport.onclose = () => r(undefined);
    });
    await assert.rejects(
      stalled.call('codex', { prompt: 'cut', sandbox: 'read-only', cwd: dir.workspace }),
      (e: unknown) => e instanceof ProtocolError && e.code === -32001,
    );
    await closed;
    assert.match(stalled.stderr(), /stalled inside a frame/);
  } finally {
    await stalled.close().catch(() => {});
    dir.cleanup();
  }
});
