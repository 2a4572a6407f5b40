// Arguments that must be refused before anything happens, and list cursors that say nothing about other callers —
// through the official MCP SDK client against the real hub over HTTP (and the stdio faces for the shared checks):
// - `agent_list` cursors are opaque and per caller: derived from the caller's own page only, unchanged by other callers'
//   tasks, and another caller's (or a made-up, or an old global-position) cursor is -32602;
// - an own `__proto__` / `constructor` / `prototype` key, a lone surrogate in a key or id, and a prompt over 262,144
//   code points are -32602 naming the argument, and no task is created; a real U+FFFD key is an ordinary key.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MAX_PROMPT_LENGTH } from '../../../src/faces/hub/tools.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { call, connectCaller, followToEnd, startHub } from '../../support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

type ListPage = { tasks: Array<{ taskId: string }>; nextCursor: string | null };

/** Every page of the caller's list, `limit` tasks at a time: the cursors handed out and the task ids in order. */
async function allPages(client: Client, limit: number): Promise<{ cursors: string[]; ids: string[] }> {
  const cursors: string[] = [];
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await call<ListPage>(client, 'agent_list', cursor ? { cursor, limit } : { limit });
    ids.push(...page.tasks.map((t) => t.taskId));
    if (!page.nextCursor) return { cursors, ids };
    cursors.push(page.nextCursor);
    cursor = page.nextCursor;
  }
}

/** Asserts a JSON-RPC -32602 whose message matches `why`; returns the message. */
async function invalidParams(client: Client, name: string, args: Record<string, unknown>, why: RegExp) {
  let message = '';
  await assert.rejects(
    client.callTool({ name, arguments: args }),
    (err: McpError) => {
      message = err.message;
      return err.code === -32602 && why.test(err.message);
    },
    `${name} ${JSON.stringify(args).slice(0, 120)}`,
  );
  return message;
}

test('hub arguments: per-caller list cursors; __proto__, lone surrogates and the prompt bound are -32602', async (t) => {
  const dir = tempDir(t, 'baton-hub-args-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], cancelGraceMs: 1_000 } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const bob = await connectCaller(t, hub, 'bob');
  const run = async (client: Client, key: string, prompt = 'hello') => {
    const { taskId } = await call<{ taskId: string }>(client, 'agent_run', { prompt, cwd: work, idempotencyKey: key });
    assert.equal((await followToEnd(client, taskId)).state, 'succeeded');
    return taskId;
  };

  await t.test('agent_list cursors are per caller and reveal nothing about other callers', async () => {
    const bobIds = [await run(bob, 'b1'), await run(bob, 'b2'), await run(bob, 'b3')];
    const before = await allPages(bob, 1);
    assert.deepEqual(before.ids, bobIds);
    // Each cursor is made of bob's own page alone: the last task he was shown, nothing hub-wide.
    assert.deepEqual(before.cursors, bobIds.slice(0, 2));

    const aliceIds: string[] = [];
    for (let i = 0; i < 5; i++) aliceIds.push(await run(alice, `a${i}`));
    bobIds.push(await run(bob, 'b4'));
    const after = await allPages(bob, 1);
    assert.deepEqual(after.ids, bobIds);
    assert.deepEqual(after.cursors.slice(0, 2), before.cursors, "alice's five tasks changed none of bob's cursors");
    assert.deepEqual(after.cursors, bobIds.slice(0, 3));
    assert.deepEqual((await allPages(alice, 2)).ids, aliceIds);

    // Another caller's cursor (a real one), a made-up one and an old-style global row number are refused alike.
    const aliceCursor = (await call<ListPage>(alice, 'agent_list', { limit: 1 })).nextCursor!;
    const refusals = [];
    for (const cursor of [aliceCursor, 't-AAAAAAAAAAAA', Buffer.from('3').toString('base64url')]) {
      refusals.push(await invalidParams(bob, 'agent_list', { cursor }, /cursor/));
    }
    assert.equal(new Set(refusals).size, 1, `one answer whoever's cursor it was: ${refusals.join(' | ')}`);
  });

  await t.test('own __proto__/constructor/prototype keys, lone surrogates, an over-long prompt: -32602', async () => {
    const listed = JSON.stringify(await call<ListPage>(alice, 'agent_list', { limit: 100 }));
    const base = { prompt: 'x', cwd: work };
    // JSON.parse makes `__proto__` an own key, as it is on the wire.
    const withOwn = (key: string, value: unknown) =>
      JSON.parse(
        `{"${key}":${JSON.stringify(value)},${JSON.stringify({ ...base, idempotencyKey: `own-${key}` }).slice(1)}`,
      );
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      ['agent_run', withOwn('__proto__', { isolation: 'worktree' }), /"__proto__" is not allowed/],
      ['agent_run', withOwn('__proto__', 1), /"__proto__" is not allowed/],
      ['agent_run', withOwn('constructor', { prototype: {} }), /"constructor" is not allowed/],
      ['agent_run', withOwn('prototype', 'x'), /"prototype" is not allowed/],
      ['agent_run', { ...base, idempotencyKey: '\uD800' }, /idempotencyKey: contains a lone surrogate/],
      ['agent_run', { ...base, idempotencyKey: '\uD801' }, /idempotencyKey: contains a lone surrogate/],
      ['agent_run', { ...base, idempotencyKey: 'k-\uDC00-x' }, /idempotencyKey: contains a lone surrogate/],
      ['agent_run', { ...base, idempotencyKey: 'k', agent: 'scripted\uD800' }, /agent: contains a lone surrogate/],
      ['agent_run', { ...base, idempotencyKey: 'k', cwd: `${work}/\uDFFF` }, /cwd: contains a lone surrogate/],
      [
        'agent_run',
        { ...base, idempotencyKey: 'astral', prompt: '😀'.repeat(MAX_PROMPT_LENGTH + 1) },
        /prompt: Too big/,
      ],
      ['agent_status', { taskId: 't-\uD800' }, /taskId: contains a lone surrogate/],
      ['agent_list', { cursor: '\uDBFF' }, /cursor: contains a lone surrogate/],
    ];
    for (const [name, args, why] of bad) await invalidParams(alice, name, args, why);
    assert.equal(JSON.stringify(await call<ListPage>(alice, 'agent_list', { limit: 100 })), listed, 'nothing created');

    // The bound counts code points: 262,144 astral characters (524,288 UTF-16 units) are one prompt at the limit.
    const atLimit = await call<{ taskId: string }>(alice, 'agent_run', {
      ...base,
      prompt: '😀'.repeat(MAX_PROMPT_LENGTH),
      idempotencyKey: 'astral-at-limit',
    });
    assert.equal((await followToEnd(alice, atLimit.taskId)).state, 'succeeded');
    const tools = await alice.listTools();
    const run = tools.tools.find((x) => x.name === 'agent_run')!;
    assert.equal(
      (run.inputSchema.properties as Record<string, { maxLength?: number }>).prompt!.maxLength,
      MAX_PROMPT_LENGTH,
    );
    assert.match(readFileSync(join(REPO_ROOT, 'docs', 'hub.md'), 'utf8'), /prompts to 262,144 Unicode code points/);

    // A real U+FFFD is well-formed text: an ordinary key of its own, replayed as itself.
    const fffd = await call<{ taskId: string }>(alice, 'agent_run', { ...base, idempotencyKey: '\uFFFD' });
    const again = await call<{ taskId: string }>(alice, 'agent_run', { ...base, idempotencyKey: '\uFFFD' });
    assert.equal(again.taskId, fffd.taskId);
    assert.notEqual(fffd.taskId, atLimit.taskId);
    await followToEnd(alice, fffd.taskId);
  });

  await t.test('the stdio faces refuse the same arguments (attach, claude provider)', async () => {
    const faces: Array<[string[], string, Record<string, unknown>]> = [
      [['attach'], 'connection_status', { connectionId: 'c-\uD800' }],
      [['mcp', '--provider', 'claude', '--claude-command', bins.claude()], 'claude-status', { jobId: 'j-\uD800' }],
    ];
    for (const [args, tool, surrogate] of faces) {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [join(REPO_ROOT, 'bin', 'baton.js'), ...args],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, BATON_HOME: join(dir, 'baton-home') },
        cwd: work,
        stderr: 'pipe',
      });
      const client = new McpClient({ name: 'args-test', version: '1' });
      await client.connect(transport);
      t.after(() => client.close().catch(() => {}));
      const key = Object.keys(surrogate)[0]!;
      await invalidParams(client, tool, surrogate, new RegExp(`${key}: contains a lone surrogate`));
      await invalidParams(client, tool, JSON.parse(`{"__proto__":{},"${key}":"x"}`), /"__proto__" is not allowed/);
      await client.close();
    }
  });
});
