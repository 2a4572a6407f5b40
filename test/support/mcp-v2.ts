// The official MCP SDK v2 client against a test hub, in either protocol era, and the hub's tool contract run through
// any client (SDK v1 or v2) so each one is held to the same answers.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call, type RunningHub, TEST_CALLERS } from './hub.ts';
import { WaitBudget } from './poll.ts';
import { acpScript } from './scripted-agent.ts';

export type Era = 'legacy' | 'modern';

/** An SDK v2 client of `caller`: `modern` pins 2026-07-28 (no initialize), `legacy` runs the 2025 handshake. */
export async function connectV2(
  t: Pick<TestContext, 'after'>,
  hub: Pick<RunningHub, 'url'>,
  caller: string,
  era: Era,
  opts: { token?: string; capabilities?: Record<string, unknown> } = {},
): Promise<Client> {
  const token = opts.token ?? TEST_CALLERS[caller as keyof typeof TEST_CALLERS];
  // Loaded on use (~0.1 CPU s): some files take this module only for freePort or the tool contract.
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const client = new Client(
    { name: `test-v2-${caller}`, version: '1.0.0' },
    {
      versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
      ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
    },
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp/${caller}`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  t.after(() => client.close().catch(() => {}));
  return client;
}

/** A tool call through either SDK: structuredContent, or a thrown Error with the tool error's text and structure. */
export type ToolCaller = (name: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>;

export function v1Caller(client: V1Client): ToolCaller {
  return (name, args) => call(client, name, args);
}

export function v2Caller(client: Client): ToolCaller {
  return async (name, args) => {
    const res = await client.callTool({ name, arguments: args }, { timeout: 60_000 });
    if (res.isError) {
      const text = res.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
      throw Object.assign(new Error(text), { structured: res.structuredContent });
    }
    return res.structuredContent as Record<string, unknown>;
  };
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);

/** agent_wait until the task is terminal; returns the last answer. */
export async function waitToEnd(callTool: ToolCaller, taskId: string): Promise<Record<string, unknown>> {
  const budget = new WaitBudget(`task ${taskId} to end`);
  let after = 0;
  for (;;) {
    const w = await callTool('agent_wait', { taskId, after, timeoutMs: budget.left(20_000) });
    after = w.nextCursor as number;
    if (TERMINAL.has(w.state as string) && !w.hasMore) return w;
  }
}

/**
 * The whole hub tool contract through one client (scripted ACP agent "scripted"): run, status, wait, result, continue,
 * cancel and list; `label` keeps idempotency keys apart between clients of one hub.
 */
export async function assertToolContract(callTool: ToolCaller, cwd: string, label: string): Promise<void> {
  const run = await callTool('agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ reply: `first answer ${label}` }]),
    cwd,
    idempotencyKey: `${label}-run`,
  });
  const taskId = run.taskId as string;
  assert.match(taskId, /^t-/);
  const status = await callTool('agent_status', { taskId });
  assert.equal(status.taskId, taskId);
  assert.ok(Array.isArray(status.rounds));
  assert.equal((await waitToEnd(callTool, taskId)).state, 'succeeded');
  const result = await callTool('agent_result', { taskId });
  assert.equal(result.text, `first answer ${label}`);
  assert.equal(result.done, true);

  const cont = await callTool('agent_continue', {
    taskId,
    prompt: acpScript([{ reply: `second ${label}` }]),
    idempotencyKey: `${label}-c`,
  });
  assert.equal(cont.round, 2);
  assert.equal((await waitToEnd(callTool, taskId)).state, 'succeeded');
  assert.equal((await callTool('agent_result', { taskId })).text, `second ${label}`);

  const stalled = await callTool('agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd,
    idempotencyKey: `${label}-stall`,
  });
  const stalledId = stalled.taskId as string;
  const budget = new WaitBudget(`task ${stalledId} to run`);
  for (let after = 0; ; ) {
    const w = await callTool('agent_wait', { taskId: stalledId, after, timeoutMs: budget.left(20_000) });
    after = w.nextCursor as number;
    if (w.state === 'running') break;
  }
  await callTool('agent_cancel', { taskId: stalledId });
  assert.equal((await waitToEnd(callTool, stalledId)).state, 'cancelled');

  const listed = new Set<string>();
  for (let cursor: string | undefined; ; ) {
    const page = await callTool('agent_list', cursor ? { cursor } : {});
    for (const task of page.tasks as Array<{ taskId: string }>) listed.add(task.taskId);
    if (!page.nextCursor) break;
    cursor = page.nextCursor as string;
  }
  assert.ok(listed.has(taskId) && listed.has(stalledId), 'agent_list shows both tasks');
}
