// The `codex` agent on the real current Codex against the Responses mock: a cancelled turn stops the shell command it
// was running, as the user expects of a cancel (not only when the session closes).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { ensurePrivateDir } from '../../../src/lib/private-fs.ts';
import { functionOutputs, reply, shellCall, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { codexTestDir, mockCodexAgentEntry, startResponsesMock } from '../../support/codex.ts';
import { until } from '../../support/poll.ts';

/** A duration no other process sleeps for: the command is found by its argv on the host, whatever pid namespace it is in. */
const MARK = '299.4242';

/** Host pids of the marked `sleep` (Codex may run it in a sandbox with its own pid namespace). */
function markedSleeps(mark = MARK): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${mark}\0`) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

test('an acknowledged cancel stops the shell command the turn was running; the session stays usable', async (t) => {
  const mock = await startResponsesMock(t);
  const root = codexTestDir('baton-codex-cancel-cmd-');
  const stateDir = ensurePrivateDir(join(root, 'state'));
  const cwd = ensurePrivateDir(join(root, 'work'));
  const agent = createAgent('codex', mockCodexAgentEntry(mock, ensurePrivateDir(join(root, 'user-codex'))), {
    stateDir,
    logger: silentLogger,
  });
  const session = await agent.openSession({ cwd, sandbox: 'workspace-write', signal: new AbortController().signal });
  t.after(async () => {
    await session.close();
    rmSync(root, { recursive: true, force: true });
  });

  mock.push(shellCall(`exec sleep ${MARK}`));
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  const turn = (async () => {
    for await (const e of session.turn('run the long command', { signal: controller.signal })) events.push(e);
  })();
  const [pid] = await until(markedSleeps, { what: 'the command to start', ok: (p) => p.length === 1 });
  controller.abort();
  await turn;
  assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
  await until(markedSleeps, {
    what: `the cancelled turn's command (pid ${pid}) to be stopped`,
    ok: (p) => p.length === 0,
    timeoutMs: 10_000,
  });

  // A command Codex leaves running in the background (it yields after 200 ms and calls the model again), then the
  // model stalls and the turn is cancelled: the command started in that turn goes too.
  const gate = new Gate();
  t.after(() => gate.open());
  const turnsBefore = mock.turns.length;
  mock.push(
    shellCall(`exec sleep ${MARK}`, { tool: { name: 'exec_command', args: (cmd) => ({ cmd, yield_time_ms: 200 }) } }),
    stalledReply(gate),
  );
  const second = new AbortController();
  const backgroundEvents: AgentEvent[] = [];
  const backgroundTurn = (async () => {
    for await (const e of session.turn('start it and wait', { signal: second.signal })) backgroundEvents.push(e);
  })();
  const recalled = await mock.waitForTurn(turnsBefore + 1);
  // Codex called the model again with the command left running; its shell may still be starting (a login shell reads
  // the user's profile first), so the marked sleep is awaited rather than read once. Should it never run, the
  // message carries what Codex told the model about the command.
  const [background] = await until(markedSleeps, {
    what: `the backgrounded command to be running (Codex reported: ${JSON.stringify([...functionOutputs(recalled).values()])})`,
    ok: (p) => p.length === 1,
  });
  second.abort();
  await backgroundTurn;
  assert.deepEqual(backgroundEvents.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
  await until(markedSleeps, {
    what: `the backgrounded command (pid ${background}) to be stopped`,
    ok: (p) => p.length === 0,
    timeoutMs: 10_000,
  });

  // A command an earlier turn left running in the background is not the cancelled turn's: it is spared.
  const EARLIER = '298.4242';
  mock.push(
    shellCall(`exec sleep ${EARLIER}`, {
      tool: { name: 'exec_command', args: (cmd) => ({ cmd, yield_time_ms: 200 }) },
    }),
    reply('started it'),
  );
  const starter: AgentEvent[] = [];
  for await (const e of session.turn('start it and leave it', { signal: new AbortController().signal }))
    starter.push(e);
  assert.deepEqual(starter.at(-1), { kind: 'end', outcome: 'succeeded' });
  const [left] = await until(() => markedSleeps(EARLIER), {
    what: 'the earlier turn to leave its command running',
    ok: (p) => p.length === 1,
  });
  const gate2 = new Gate();
  t.after(() => gate2.open());
  const stalledAt = mock.turns.length;
  mock.push(stalledReply(gate2));
  const third = new AbortController();
  const thirdEvents: AgentEvent[] = [];
  const thirdTurn = (async () => {
    for await (const e of session.turn('wait for me', { signal: third.signal })) thirdEvents.push(e);
  })();
  await mock.waitForTurn(stalledAt);
  third.abort();
  await thirdTurn;
  assert.deepEqual(thirdEvents.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
  assert.deepEqual(markedSleeps(EARLIER), [left], "the earlier turn's command still runs");

  mock.push(reply('still here'));
  const next: AgentEvent[] = [];
  for await (const e of session.turn('are you there?', { signal: new AbortController().signal })) next.push(e);
  assert.deepEqual(next.at(-1), { kind: 'end', outcome: 'succeeded' });
  await session.close();
  assert.deepEqual(markedSleeps(EARLIER), [], 'closing the session stops what is left');
});
