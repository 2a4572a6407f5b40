// Background jobs of the Codex provider (codex-start / -status / -commentary / -result / -cancel / -peek) on the real
// current Codex and the Responses mock, through the MCP SDK client over stdio: cursor semantics with the status
// interval, commentary and result paging, peek rows, cancel, and a disconnect that cancels jobs and reaps Codex.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { ResponsesMock, type ResponsesStep, reply, stalledReply } from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { until } from '../../support/poll.ts';
import { StdioTasksRequester } from '../../support/stdio-client.ts';
import {
  type Connected,
  codexProcessesUnder,
  connectProvider,
  type Layout,
  makeLayout,
  providerLaunch,
} from './codex/harness.ts';

let mock: ResponsesMock;
let layout: Layout;
let conn: Connected;

before(async () => {
  mock = await ResponsesMock.start();
  layout = makeLayout();
  // An hour's interval: intermediate progress never moves the cursor within a test, however slow the machine;
  // lifecycle must move it at once.
  conn = await connectProvider(bins.codex(), layout, mock, ['--codex-status-interval', '3600']);
});
after(async () => {
  await conn?.close();
  await mock?.close();
  layout?.cleanup();
});

interface StatusView {
  jobId: string;
  state: string;
  cursor: number;
  status: string;
  phases: string[];
  done: boolean;
  commentaryEndOffset: number;
  threadId?: string;
}
const sc = <T>(res: { structuredContent?: unknown }) => res.structuredContent as T;
const status = async (jobId: string, cursor: number, wait_ms?: number) =>
  sc<StatusView>(await conn.call('codex-status', { jobId, cursor, ...(wait_ms === undefined ? {} : { wait_ms }) }));
/** A status read waiting the longest wait_ms (60 s) that must be answered on a lifecycle change: the client gives up
 * after 45 s, so an answer that only came when the wait ran out fails the test. */
const wokenStatus = async (jobId: string, cursor: number) =>
  sc<StatusView>(
    await conn.client.callTool(
      { name: 'codex-status', arguments: { jobId, cursor, wait_ms: 60_000 } },
      { timeout: 45_000 },
    ),
  );

/** Commentary, then a command, then a reply that stalls until `gate` opens. */
function commentaryThenStall(gate: Gate, commentary: string, final: string): ResponsesStep[] {
  return [
    {
      kind: 'respond',
      output: [
        { type: 'message', text: commentary, phase: 'commentary' },
        { type: 'function_call', name: 'exec_command', arguments: { cmd: 'true' } },
      ],
    },
    stalledReply(gate, final),
  ];
}

test('a job: lifecycle moves the cursor at once, progress is coalesced; commentary, result and peek', async () => {
  const gate = new Gate();
  mock.push(...commentaryThenStall(gate, 'Reading the parser first.', 'All done: parser fixed.'));
  const started = sc<{ jobId: string; cursor: number; next: string }>(
    await conn.call('codex-start', { prompt: 'fix the parser', cwd: layout.workspace, sandbox: 'workspace-write' }),
  );
  assert.equal(started.cursor, 0);
  assert.match(started.next, /codex-status/);
  const first = await status(started.jobId, 0);
  assert.equal(first.cursor, 1, 'the start is a lifecycle step');
  assert.equal(first.state, 'running');

  // Commentary arrives; within the interval the cursor stays put and a wait_ms 0 read returns at once.
  const progressed = await until(() => status(started.jobId, first.cursor, 0), {
    what: 'commentary',
    ok: (v) => v.commentaryEndOffset > 0,
  });
  assert.equal(progressed.cursor, first.cursor, 'intermediate progress is coalesced');
  const commentary = sc<{ text: string; nextOffset: number; done: boolean; truncatedBefore: number }>(
    await conn.call('codex-commentary', { jobId: started.jobId }),
  );
  assert.equal(commentary.text, 'Reading the parser first.');
  assert.equal(commentary.truncatedBefore, 0);
  const later = sc<{ text: string }>(
    await conn.call('codex-commentary', { jobId: started.jobId, offset: commentary.nextOffset }),
  );
  assert.equal(later.text, '');

  const peek = sc<{ turns: Array<Record<string, unknown>>; abandonedTurnsProcessWide: number }>(
    await conn.call('codex-peek', { cwd: layout.workspace }),
  );
  assert.equal(peek.turns.length, 1);
  const row = peek.turns[0]!;
  assert.equal(row.jobId, started.jobId);
  assert.equal(row.requestId, undefined);
  assert.equal(row.state, 'running');
  assert.equal(row.cwd, layout.workspace);
  assert.equal(row.cwdInferred, false);
  assert.equal(row.cwdUnknown, false);
  assert.equal(row.sandbox, 'workspace-write');
  assert.match(String(row.threadId), /^[0-9a-f-]{36}$/);
  assert.equal(typeof row.elapsedSeconds, 'number');
  assert.equal(typeof row.lastActivitySeconds, 'number');
  assert.equal(peek.abandonedTurnsProcessWide, 0);
  assert.equal(sc<{ turns: unknown[] }>(await conn.call('codex-peek', { cwd: '/elsewhere' })).turns.length, 0);

  assert.equal((await conn.call('codex-result', { jobId: started.jobId })).isError, true, 'not finished yet');

  // Completion is a lifecycle change: a waiting reader wakes at once, not when its wait or the interval (when the
  // commentary's coalesced step is due) runs out.
  const waiting = wokenStatus(started.jobId, first.cursor);
  gate.open();
  const done = await waiting;
  assert.equal(done.state, 'completed');
  assert.ok(done.cursor > first.cursor);
  assert.equal(done.threadId, row.threadId);
  const result = sc<{ text: string; done: boolean; nextOffset: number; threadId: string }>(
    await conn.call('codex-result', { jobId: started.jobId }),
  );
  assert.equal(result.text, 'All done: parser fixed.');
  assert.equal(result.done, true);
  assert.equal(result.threadId, row.threadId);
  // TE-6: status carries attributed commentary and generic lifecycle, never the answer or the command.
  assert.doesNotMatch(JSON.stringify(done), /parser fixed|exec_command|"cmd"/);
  assert.ok(done.phases.includes('Running a command'), JSON.stringify(done.phases));
  assert.deepEqual(sc<{ turns: unknown[] }>(await conn.call('codex-peek', {})).turns, []);

  // A background reply on the same thread inherits its settings.
  mock.push(reply('second round'));
  const again = sc<{ jobId: string }>(
    await conn.call('codex-start', { threadId: result.threadId, prompt: 'one more thing' }),
  );
  const end = await until(() => status(again.jobId, 0, 5_000), {
    what: 'reply job',
    ok: (v) => v.done,
  });
  assert.equal(end.state, 'completed');
  assert.equal(sc<{ text: string }>(await conn.call('codex-result', { jobId: again.jobId })).text, 'second round');
});

test('codex-cancel is a lifecycle change; wait_ms is bounded to 60,000', async () => {
  await assert.rejects(
    conn.call('codex-status', { jobId: 'x', cursor: 0, wait_ms: 60_001 }),
    (e: unknown) => e instanceof ProtocolError && e.code === ProtocolErrorCode.InvalidParams,
  );
  const gate = new Gate();
  mock.push(stalledReply(gate));
  const stalled = mock.waitForTurn(mock.turns.length);
  const { jobId } = sc<{ jobId: string }>(
    await conn.call('codex-start', { prompt: 'long', cwd: layout.workspace, sandbox: 'read-only' }),
  );
  await stalled;
  const before = await status(jobId, 0, 0);
  const cancelled = sc<StatusView>(await conn.call('codex-cancel', { jobId }));
  assert.equal(cancelled.state, 'cancelled');
  assert.ok(cancelled.cursor > before.cursor);
  assert.equal((await wokenStatus(jobId, before.cursor)).state, 'cancelled', 'no wait on a terminal job');
  const peek = sc<{ turns: unknown[]; abandonedTurnsProcessWide: number }>(await conn.call('codex-peek', {}));
  assert.deepEqual(peek.turns, []);
  assert.equal(peek.abandonedTurnsProcessWide, 0, 'Codex acknowledged the interrupt');
  gate.open();
});

test('Tasks extension (2026-07-28): codex and codex-reply become jobs whose tasks carry the blocking answer', async () => {
  const own = makeLayout('baton-codex-tasks-');
  const tasks = await StdioTasksRequester.open(providerLaunch(bins.codex(), own, mock));
  try {
    mock.push(reply('task answer'), reply('task reply'));
    const created = await tasks.request('tools/call', {
      name: 'codex',
      arguments: { prompt: 'as a task', sandbox: 'read-only', cwd: own.workspace },
    });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result!.taskId as string;
    const done = await tasks.until(taskId, (task) => task.status !== 'working');
    assert.equal(done.status, 'completed');
    const answer = done.result as { content: Array<{ text: string }>; structuredContent: Record<string, string> };
    assert.equal(answer.content[0]!.text, 'task answer');
    assert.equal(answer.structuredContent.content, 'task answer');
    const threadId = answer.structuredContent.threadId!;
    assert.match(threadId, /^[0-9a-f-]{36}$/, 'the thread to continue, as the blocking call returns it');
    // The task is a job: codex-status knows it by the same id.
    const job = await tasks.request('tools/call', { name: 'codex-status', arguments: { jobId: taskId, cursor: 0 } });
    assert.equal((job.result!.structuredContent as { state: string }).state, 'completed');

    const replied = await tasks.request('tools/call', { name: 'codex-reply', arguments: { threadId, prompt: 'more' } });
    const again = await tasks.until(replied.result!.taskId as string, (task) => task.status !== 'working');
    assert.deepEqual((again.result as { structuredContent: unknown }).structuredContent, {
      threadId,
      content: 'task reply',
    });
  } finally {
    await tasks.close();
    own.cleanup();
  }
});

test('a disconnect cancels every non-terminal job and reaps the Codex process groups', async () => {
  const gate = new Gate();
  mock.push(stalledReply(gate), stalledReply(gate));
  const turns = mock.turns.length;
  for (let i = 0; i < 2; i++) {
    await conn.call('codex-start', { prompt: `job ${i}`, cwd: layout.workspace, sandbox: 'read-only' });
  }
  await mock.waitForTurn(turns + 1);
  assert.ok(codexProcessesUnder(layout.launchDir).length >= 2, 'two Codex app-servers are running');
  const exited = new Promise((r) => (conn.transport.onclose = () => r(undefined)));
  await conn.client.close();
  await exited;
  await until(async () => codexProcessesUnder(layout.launchDir).length, {
    what: 'Codex reaped',
    ok: (n) => n === 0,
  });
  gate.open();
});
