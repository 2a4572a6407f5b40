// `baton mcp --provider claude` through the official MCP SDK client over stdio, against the real `claude` binary and
// the scripted Anthropic mock: the blocking tool, background reviews, limits, isolation, and what crosses MCP.
// The Claude Code adapter's own tests (claude-agent.ts) are a part this file imports; they run first, in this process.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { pidAlive, WaitBudget } from '../../support/poll.ts';
import {
  type ClientEra,
  type Launch,
  StdioTasksRequester,
  spawnStdioClient,
  spawnV1StdioClient,
} from '../../support/stdio-client.ts';
import './claude-agent.ts';

const SECRET = 'sk-planted-SECRET-7f3a9c21e8';
const INTERIM = 'interim-musing-that-must-stay-private';

let mock: AnthropicMock;
const root = mkdtempSync(join(tmpdir(), 'baton-claude-provider-'));
const workspace = join(root, 'ws');
after(() => rmSync(root, { recursive: true, force: true }));

interface Connected {
  client: Client;
  transport: StdioClientTransport;
  /** Every frame the client received, serialised. */
  frames: string[];
  stderr: () => string;
}

function launch(extraArgs: string[] = [], extraEnv: Record<string, string> = {}): Launch {
  return {
    command: process.execPath,
    args: [
      join(REPO_ROOT, 'bin/baton.js'),
      'mcp',
      '--provider',
      'claude',
      '--claude-command',
      bins.claude(),
      ...extraArgs,
    ],
    env: { ...(isolatedClaudeEnv(mock.origin, root) as Record<string, string>), ...extraEnv },
    cwd: workspace,
  };
}

/** The provider under the SDK v2 client, by default at 2026-07-28; every frame it receives is recorded. */
async function connect(
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
  era: ClientEra = '2026-07-28',
): Promise<Connected> {
  const { client, transport, stderr } = await spawnStdioClient(launch(extraArgs, extraEnv), era);
  const frames: string[] = [];
  const deliver = transport.onmessage;
  transport.onmessage = (msg) => {
    frames.push(JSON.stringify(msg));
    deliver?.(msg);
  };
  return { client, transport, frames, stderr };
}

let conn: Connected;

before(async () => {
  mock = await AnthropicMock.start();
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'config.env'), `API_TOKEN=${SECRET}\n`);
  conn = await connect();
});
after(async () => {
  await conn?.client.close();
  await mock?.close();
});

const call = (name: string, args: Record<string, unknown>) =>
  conn.client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const textOf = (res: CallToolResult) => (res.content[0] as { text: string }).text;

async function waitTerminal(jobId: string, cursor = 0): Promise<Record<string, unknown>> {
  const budget = new WaitBudget(`review ${jobId} to end`);
  for (;;) {
    const res = await call('claude-status', { jobId, cursor, wait_ms: budget.left(20_000) });
    const view = res.structuredContent as { cursor: number; done: boolean };
    if (view.done) return view as unknown as Record<string, unknown>;
    cursor = view.cursor;
  }
}

test('ready line on stderr and exactly the P-CL tools', async () => {
  assert.match(conn.stderr(), /\[baton\] ready \(provider: claude\)/);
  const { tools } = await conn.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [
    'claude-cancel',
    'claude-result',
    'claude-start',
    'claude-status',
    'claude_code',
  ]);
});

test('claude_code returns the answer, sends progress, and runs Claude as a pinned read-only leaf reviewer: Bash mutation, Write and Edit are refused and change nothing', async () => {
  // One Claude run (a start costs a fraction of a CPU second) for both: the scripted model tries to change files
  // before it answers.
  mock.push(
    { kind: 'tool_use', name: 'Bash', input: { command: 'echo pwned > pwned.txt', description: 'mutate' } },
    { kind: 'tool_use', name: 'Write', input: { file_path: join(workspace, 'written.txt'), content: 'x' } },
    {
      kind: 'tool_use',
      name: 'Edit',
      input: { file_path: join(workspace, 'config.env'), old_string: 'API_TOKEN', new_string: 'EDITED' },
    },
    { kind: 'text', text: 'LGTM: no issues found' },
  );
  const seen = mock.messageRequests.length;
  const progress: string[] = [];
  const res = (await conn.client.callTool(
    { name: 'claude_code', arguments: { prompt: 'review this', model: 'ignored', effort: 'low', config: {} } },
    { onprogress: (p) => progress.push(p.message ?? '') },
  )) as CallToolResult;
  assert.equal(res.isError, undefined);
  assert.equal(textOf(res), 'LGTM: no issues found');
  // This client (2026-07-28) does not declare the Tasks extension, so the answer is a plain, complete result.
  const answer = conn.frames.map((f) => JSON.parse(f)).find((m) => m.result?.content?.[0]?.text === textOf(res));
  assert.equal(answer?.result.resultType, 'complete');
  assert.ok(progress.length >= 1, 'a caller that sent a progressToken gets progress');
  assert.equal(existsSync(join(workspace, 'pwned.txt')), false);
  assert.equal(existsSync(join(workspace, 'written.txt')), false);
  assert.match(readFileSync(join(workspace, 'config.env'), 'utf8'), /^API_TOKEN=/);
  // Each attempt came back to the model as an error tool_result.
  const results = mock.messageRequests.slice(seen + 1, seen + 4).map((r) => JSON.stringify(r.messages?.at(-1)));
  assert.equal(results.length, 3);
  for (const r of results) assert.match(r, /"is_error":true/);
  const sent = mock.messageRequests[seen]!;
  const tools = (sent.tools ?? []).map((t) => t.name);
  for (const allowed of ['Read', 'Glob', 'Grep', 'Bash']) assert.ok(tools.includes(allowed), `${allowed} offered`);
  for (const banned of ['Write', 'Edit', 'NotebookEdit', 'Task', 'Agent', 'Skill', 'WebFetch', 'WebSearch']) {
    assert.equal(tools.includes(banned), false, `${banned} must not be offered`);
  }
  assert.match(sent.model ?? '', /fable/, 'the strongest model is pinned; the caller cannot pick one');
  assert.equal((sent as { output_config?: { effort?: string } }).output_config?.effort, 'max');
  const body = JSON.stringify(sent);
  assert.ok(body.includes('leaf reviewer'), 'the leaf-reviewer instruction is appended');
  assert.ok(body.includes('Do not run tests'));
});

test('2025-era clients, SDK v2 and SDK v1, get the same tools, -32602 and answers', async () => {
  const v2 = await connect([], {}, '2025');
  const v1 = await spawnV1StdioClient(launch());
  try {
    for (const client of [v2.client, v1.client] as const) {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'claude_code'));
      await assert.rejects(
        client.callTool({ name: 'claude-status', arguments: { jobId: 'x', cursor: 0, wait_ms: 60_001 } }),
        (err: { code?: number }) => err.code === -32602,
      );
    }
    mock.push({ kind: 'text', text: 'answer for v2' }, { kind: 'text', text: 'answer for v1' });
    assert.equal(
      textOf(await v2.client.callTool({ name: 'claude_code', arguments: { prompt: 'a' } })),
      'answer for v2',
    );
    const viaV1 = (await v1.client.callTool({ name: 'claude_code', arguments: { prompt: 'b' } })) as CallToolResult;
    assert.equal(textOf(viaV1), 'answer for v1');
  } finally {
    await v2.client.close();
    await v1.close();
  }
});

test('claude_code: is_error becomes an MCP tool error', async () => {
  mock.push({ kind: 'error', status: 401, message: 'scripted auth failure' });
  const res = await call('claude_code', { prompt: 'hi' });
  assert.equal(res.isError, true);
  assert.match(textOf(res), /401/);
});

test('claude_code: a caller may shorten the bound with timeout_ms', async () => {
  const gate = new Gate();
  mock.push({ kind: 'stall', gate, text: 'slow' });
  const res = await call('claude_code', { prompt: 'slow one', timeout_ms: 2_000 });
  gate.open();
  // On a loaded machine Claude may be stopped before it ever asks the model; its step must not answer the next test.
  mock.script.clear();
  assert.equal(res.isError, true);
  assert.match(textOf(res), /did not finish within 2 s/);
});

test('background review: start, long-poll status, paged result; secrets and tool output never cross MCP', async () => {
  const gate = new Gate();
  const verdict = `VERDICT ${'é'.repeat(40_000)} END`;
  mock.push(
    {
      kind: 'tool_use',
      name: 'Read',
      input: { file_path: join(workspace, 'config.env') },
      text: `${INTERIM} ${SECRET}`,
    },
    { kind: 'stall', gate, after: verdict },
  );
  const framesBefore = conn.frames.length;
  const started = await call('claude-start', { prompt: 'deep review', cwd: workspace, timeout_ms: 1 });
  const { jobId, cursor } = started.structuredContent as { jobId: string; cursor: number };
  assert.equal(typeof jobId, 'string');
  // The stalled second model call proves Claude read the secret file (its content is in that request).
  const stalled = await mock.waitForMessages((r) => JSON.stringify(r.messages).includes(SECRET));
  assert.ok(stalled);
  const running = await call('claude-status', { jobId, cursor, wait_ms: 1_000 });
  const view = running.structuredContent as { state: string; cursor: number; phases: string[] };
  assert.equal(view.state, 'running', 'timeout_ms cannot shorten a job');
  gate.open();
  const final = await waitTerminal(jobId, view.cursor);
  assert.equal(final.state, 'completed');
  const p1 = await call('claude-result', { jobId });
  const s1 = p1.structuredContent as { nextOffset: number; done: boolean; text: string };
  assert.equal(s1.done, false);
  assert.equal(Array.from(s1.text).length, 32_768);
  assert.equal(textOf(p1), s1.text);
  const p2 = await call('claude-result', { jobId, offset: s1.nextOffset });
  const s2 = p2.structuredContent as { done: boolean; text: string };
  assert.equal(s2.done, true);
  assert.equal(s1.text + s2.text, verdict);
  const wire = conn.frames.slice(framesBefore).join('\n');
  assert.equal(wire.includes(SECRET), false, 'the secret never reaches the client');
  assert.equal(wire.includes(INTERIM), false, 'interim model output never reaches the client');
  assert.equal(wire.includes('API_TOKEN'), false, 'tool output never reaches the client');
});

test('cancel stops a running review; its result is refused', async () => {
  const gate = new Gate();
  mock.push({ kind: 'stall', gate, text: 'thinking' });
  const seen = mock.messageRequests.length;
  const started = await call('claude-start', { prompt: 'long review', cwd: workspace });
  const { jobId } = started.structuredContent as { jobId: string };
  await mock.waitForMessages(() => mock.messageRequests.length > seen);
  const cancelled = await call('claude-cancel', { jobId });
  assert.equal((cancelled.structuredContent as { state: string }).state, 'cancelled');
  gate.open();
  const res = await call('claude-result', { jobId });
  assert.equal(res.isError, true);
  assert.match(textOf(res), /cancelled/);
});

test('limits: wait_ms over 60,000 is -32602; a relative cwd is refused; the 9th active review is refused', async () => {
  await assert.rejects(
    conn.client.callTool({ name: 'claude-status', arguments: { jobId: 'x', cursor: 0, wait_ms: 60_001 } }),
    (err: { code?: number }) => err.code === -32602,
  );
  await assert.rejects(
    conn.client.callTool({ name: 'claude-start', arguments: { prompt: 'p', cwd: 'relative/dir' } }),
    (err: { code?: number; message?: string }) => err.code === -32602 && /absolute/.test(err.message ?? ''),
  );
  const gate = new Gate();
  for (let i = 0; i < 8; i++) mock.push({ kind: 'stall', gate });
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await call('claude-start', { prompt: `review ${i}`, cwd: workspace });
    ids.push((res.structuredContent as { jobId: string }).jobId);
  }
  const ninth = await call('claude-start', { prompt: 'one too many', cwd: workspace });
  assert.equal(ninth.isError, true);
  assert.match(textOf(ninth), /8 jobs are already running/);
  // A review is active from its start, whether or not its Claude has reached the model yet: the eight are cancelled
  // at once rather than after eight full Claude start-ups (a cancel returns once the review's process group is gone).
  const cancelled = await Promise.all(ids.map((jobId) => call('claude-cancel', { jobId })));
  for (const res of cancelled) assert.equal((res.structuredContent as { state: string }).state, 'cancelled');
  gate.open();
  // A Claude stopped before it asked the model leaves its step unused; it must not answer the next test.
  mock.script.clear();
});

test('Tasks extension (2026-07-28): a declared claude_code call becomes a task with the blocking answer; tasks/cancel stops one', async () => {
  const tasks = await StdioTasksRequester.open(launch());
  try {
    // Declared: a task handle at once, then tasks/get (long-polling) until it carries the blocking call's answer.
    mock.push({ kind: 'text', text: 'answer through a task' });
    const created = await tasks.request('tools/call', { name: 'claude_code', arguments: { prompt: 'as a task' } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result!.taskId as string;
    assert.equal(created.result!.status, 'working');
    const done = await tasks.until(taskId, (task) => task.status !== 'working');
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.result, { content: [{ type: 'text', text: 'answer through a task' }] });
    // The task is the claude-start job: the job tools see it under the same id.
    const status = await tasks.request('tools/call', {
      name: 'claude-status',
      arguments: { jobId: taskId, cursor: 0 },
    });
    assert.equal((status.result!.structuredContent as { state: string }).state, 'completed');

    // tasks/cancel stops a running review (its model call is held open) and the task ends cancelled.
    const gate = new Gate();
    mock.push({ kind: 'stall', gate, text: 'thinking' });
    const seen = mock.messageRequests.length;
    const running = await tasks.request('tools/call', { name: 'claude_code', arguments: { prompt: 'long' } });
    const runningId = running.result!.taskId as string;
    await mock.waitForMessages(() => mock.messageRequests.length > seen);
    assert.equal((await tasks.request('tasks/cancel', { taskId: runningId })).result?.resultType, 'complete');
    gate.open();
    assert.equal((await tasks.until(runningId, (task) => task.status !== 'working')).status, 'cancelled');
    assert.equal((await tasks.request('tasks/get', { taskId: 'no-such-task' })).error?.code, -32602);
    // Not declared, the same call blocks and answers as before: the first claude_code test's call (its client, at
    // 2026-07-28, does not declare the extension).
  } finally {
    await tasks.close();
  }
});

test('a disconnect cancels active reviews and reaps their process groups before the server exits', async () => {
  const serverTmp = join(root, 'server-tmp');
  mkdirSync(serverTmp);
  const own = await connect([], { TMPDIR: serverTmp });
  const batonDirs = () => readdirSync(serverTmp).filter((name) => name.startsWith('baton-'));
  assert.equal(batonDirs().length, 1, 'the server keeps its private Claude home in a temp dir');
  const gate = new Gate();
  mock.push({ kind: 'stall', gate, text: 'thinking' });
  const seen = mock.messageRequests.length;
  await own.client.callTool({ name: 'claude-start', arguments: { prompt: 'review', cwd: workspace } });
  await mock.waitForMessages(() => mock.messageRequests.length > seen);
  const serverPid = own.transport.pid!;
  const children = childrenOf(serverPid);
  assert.equal(children.length, 1, 'one claude child is running');
  const exited = new Promise<void>((resolve) => {
    own.transport.onclose = () => resolve();
  });
  await own.client.close();
  await exited;
  gate.open();
  assert.equal(pidAlive(serverPid), false, 'the server exited');
  assert.equal(pidAlive(children[0]!), false, 'the claude child is gone');
  assert.deepEqual(batonDirs(), [], 'the private home was removed at exit');
  assert.match(own.stderr(), /ready/);
  assert.equal(/SIGKILL|Killed/.test(own.stderr()), false);
});

test('--timeout sets the hard deadline of background reviews', async () => {
  const own = await connect(['--timeout', '2']);
  try {
    const gate = new Gate();
    mock.push({ kind: 'stall', gate, text: 'slow' });
    const started = await own.client.callTool({ name: 'claude-start', arguments: { prompt: 'slow', cwd: workspace } });
    const { jobId } = started.structuredContent as { jobId: string };
    let view = { cursor: 0, done: false } as { cursor: number; done: boolean; state?: string; error?: string };
    const budget = new WaitBudget(`review ${jobId} to end`);
    while (!view.done) {
      const res = await own.client.callTool({
        name: 'claude-status',
        arguments: { jobId, cursor: view.cursor, wait_ms: budget.left(20_000) },
      });
      view = res.structuredContent as typeof view;
    }
    gate.open();
    // As with timeout_ms above: a Claude stopped before it asked the model leaves its step for the next test.
    mock.script.clear();
    assert.equal(view.state, 'failed');
    assert.match(view.error ?? '', /2 s hard deadline/);
  } finally {
    await own.client.close();
  }
});

test('stdin EOF right behind a call: the server still cancels it, reaps the child and exits cleanly', async () => {
  const marker = `run-${process.pid}-${Date.now()}`;
  const env = { ...isolatedClaudeEnv(mock.origin, root), CLAUDE_TEST_RUN_MARKER: marker };
  const gate = new Gate();
  mock.push({ kind: 'stall', gate, text: 'slow' });
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, 'bin/baton.js'), 'mcp', '--provider', 'claude', '--claude-command', bins.claude()],
    { env, cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const frames = [
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'claude_code', arguments: { prompt: 'hi' } } },
  ];
  child.stdin.end(`${frames.map((f) => JSON.stringify(f)).join('\n')}\n`);
  const [code] = (await once(child, 'exit')) as [number | null];
  gate.open();
  assert.equal(code, 0);
  assert.deepEqual(processesWithMarker(marker), [], 'no process of the run outlives the server');
});

function processesWithMarker(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`CLAUDE_TEST_RUN_MARKER=${marker}`)) {
        out.push(Number(entry));
      }
    } catch {}
  }
  return out;
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}
