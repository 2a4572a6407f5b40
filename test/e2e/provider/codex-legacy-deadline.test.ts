// The hard deadline on the legacy passthrough (Codex 0.153.4, npm alias codex-legacy), on the real binary against the
// Responses mock through the MCP SDK client over stdio: an expired call fails with -32001 while the connection keeps
// serving, Codex's turn_aborted settles the expired call (no response ever follows it), and a disconnect reaps Codex.
// Its own file so it runs beside the longer legacy tests.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { ProtocolError } from '@modelcontextprotocol/client';
import { ResponsesMock, reply, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { until } from '../../support/poll.ts';
import { codexProcessesUnder, connectProvider, makeLayout, textOf } from './codex/harness.ts';

let mock: ResponsesMock;
const gates: Gate[] = [];

before(async () => {
  mock = await ResponsesMock.start();
});
after(async () => {
  for (const g of gates) g.open();
  await mock?.close();
});

const sc = <T>(res: { structuredContent?: unknown }) => res.structuredContent as T;

test('hard deadline on legacy Codex: -32001 for that call, the connection stays up; a disconnect reaps Codex', async () => {
  const dir = makeLayout('baton-codex-legacy-hard-');
  // At most 2 late responses pending: Codex answers an expired call with turn_aborted, never a response, so the
  // bridge must stop waiting for one or the second expiry would end it. The deadline must find the call stalled at the
  // model: 5 s covers Codex starting a session and asking the model on a loaded machine (a few hundred ms at a load
  // of 14 on two cores); a call cut short before that would leave its stalled reply queued for the next.
  // Reads the cold binary in before any deadline runs (see the warm-up call below).
  execFileSync(process.execPath, [bins.codexLegacy(), '--version'], { stdio: 'ignore' });
  const hard = await connectProvider(
    bins.codexLegacy(),
    dir,
    mock,
    ['--timeout', '5', '--codex_idle_timeout', '0', '--codex-max-suppressed', '2'],
    {},
    '2025',
  );
  try {
    // One answered call first: Codex's first start on a fresh machine (a cold binary, under the load of the suite's
    // start) can take longer than the whole deadline, which would then cut the call short before it reached the model.
    mock.push(reply('warm'));
    assert.equal(
      textOf(await hard.call('codex', { prompt: 'warm up', sandbox: 'read-only', cwd: dir.workspace })),
      'warm',
    );
    const gate = new Gate();
    gates.push(gate);
    for (const prompt of ['hang', 'hang again']) {
      const aborted = mock.waitForTurn(mock.turns.length);
      mock.push(stalledReply(gate));
      await assert.rejects(
        hard.call('codex', { prompt, sandbox: 'read-only', cwd: dir.workspace }),
        (e: unknown) => e instanceof ProtocolError && e.code === -32001 && /5 s hard deadline/.test(e.message),
      );
      await aborted;
      await hard.responsive();
    }
    const peek = sc<{ turns: unknown[]; abandonedTurnsProcessWide: number }>(await hard.call('codex-peek', {}));
    assert.deepEqual(peek.turns, []);
    assert.equal(peek.abandonedTurnsProcessWide, 0);
    gate.open();
    mock.push(reply('after the deadline'));
    assert.equal(
      textOf(await hard.call('codex', { prompt: 'quick', sandbox: 'read-only', cwd: dir.workspace })),
      'after the deadline',
    );
    assert.ok(codexProcessesUnder(dir.launchDir).length > 0, 'codex mcp-server is running');
    const closed = new Promise((r) => {
      hard.transport.onclose = () => r(undefined);
    });
    await hard.close();
    await closed;
    await until(async () => codexProcessesUnder(dir.launchDir).length, {
      what: 'Codex reaped',
      ok: (n) => n === 0,
    });
  } finally {
    await hard.close().catch(() => {});
    dir.cleanup();
  }
});
