// The `codex` agent (AG-1, AG-6..AG-9) on the real current Codex (the pinned @openai/codex) against the Responses mock, created through the
// registry exactly as the hub does.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { AgentEvent, AgentSession } from '../../../src/agents/agent.ts';
import { prepareCodexHome } from '../../../src/agents/codex/home.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { codexDecline, DECLINED_CODEX_METHODS } from '../../../src/codex/declines.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { ensurePrivateDir } from '../../../src/lib/private-fs.ts';
import {
  addFilePatch,
  assistantTexts,
  commentaryThenReply,
  reply,
  shellCall,
  stalledReply,
  userTexts,
} from '../../mock-models/responses.ts';
import { Gate } from '../../mock-models/server.ts';
import { binVersions } from '../../support/bins.ts';
import { codexTestDir, mockCodexAgentEntry, startResponsesMock } from '../../support/codex.ts';
import { tempDir } from '../../support/tmp.ts';

const PLANTED_KEY = 'sk-planted-secret-0123456789abcdef';

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('codex agent', () => {
  test('turns, tools, cancel, resume in a fresh process, isolated home, probe', async (t) => {
    const mock = await startResponsesMock(t);
    const root = codexTestDir('baton-codex-agent-');
    const sessions: AgentSession[] = [];
    // Every Codex is stopped before its dirs are removed (Codex rewrites files until it exits).
    t.after(async () => {
      await Promise.all(sessions.map((s) => s.close()));
      rmSync(root, { recursive: true, force: true });
    });
    const stateDir = ensurePrivateDir(join(root, 'state'));
    const userHome = ensurePrivateDir(join(root, 'user-codex'));
    writeFileSync(join(userHome, 'auth.json'), JSON.stringify({ OPENAI_API_KEY: PLANTED_KEY }), { mode: 0o600 });
    const cwd = ensurePrivateDir(join(root, 'work'));
    // A repository config that would add an MCP server (and run it) if Codex trusted the project (AG-7).
    const mcpMarker = join(root, 'project-mcp-server-ran');
    ensurePrivateDir(join(cwd, '.codex'));
    writeFileSync(
      join(cwd, '.codex', 'config.toml'),
      `[mcp_servers.repo]\ncommand = "/bin/sh"\nargs = ["-c", "touch '${mcpMarker}'"]\n`,
    );
    const agent = createAgent(
      'codex',
      // The test asserts the cancel is acknowledged: the entry's grace outlasts a loaded machine.
      mockCodexAgentEntry(mock, userHome),
      { stateDir, logger: silentLogger },
    );
    assert.equal(agent.kind, 'codex');

    const open = async (resume?: string) => {
      const pgids: number[] = [];
      const s = await agent.openSession({
        cwd,
        sandbox: 'workspace-write',
        resume,
        signal: new AbortController().signal,
        onProcessGroup: (pgid) => pgids.push(pgid),
      });
      sessions.push(s);
      assert.equal(pgids.length, 1);
      return s;
    };

    const session = await open();
    assert.match(String(session.id), /^[0-9a-f-]{36}$/);

    // The isolated home: 0700, config 0600 with no MCP servers, the user's auth copied 0600.
    const home = join(stateDir, 'homes', 'codex-codex');
    assert.equal(statSync(home).mode & 0o777, 0o700);
    assert.equal(statSync(join(home, 'auth.json')).mode & 0o777, 0o600);
    assert.equal(readFileSync(join(home, 'auth.json'), 'utf8'), readFileSync(join(userHome, 'auth.json'), 'utf8'));
    const configToml = readFileSync(join(home, 'config.toml'), 'utf8');
    assert.doesNotMatch(configToml, /mcp_servers/);
    assert.match(configToml, /\[features\][^[]*plugins = false/);
    assert.match(configToml, /persistence = "none"/);

    // 1. Commentary then the final answer.
    mock.push(commentaryThenReply('Looking at the files', 'The first answer'));
    const first = await collect(session.turn('first prompt', { signal: new AbortController().signal }));
    // The thread id is known when the session opens (session.id), so no `session` event repeats it.
    assert.equal(
      first.some((e) => e.kind === 'session'),
      false,
    );
    assert.deepEqual(
      first.filter((e) => e.kind === 'commentary'),
      [{ kind: 'commentary', text: 'Looking at the files' }],
    );
    assert.ok(first.some((e) => e.kind === 'status' && e.text === 'Looking at the files'));
    assert.deepEqual(
      first.filter((e) => e.kind === 'message'),
      [{ kind: 'message', text: 'The first answer' }],
    );
    assert.deepEqual(
      first.find((e) => e.kind === 'usage'),
      { kind: 'usage', inputTokens: 11, outputTokens: 7 },
    );
    assert.deepEqual(first.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.equal(first.filter((e) => e.kind === 'end').length, 1);
    // The project's own config (and its MCP server) stayed out: the project is marked untrusted in the isolated home.
    assert.equal(existsSync(mcpMarker), false);
    assert.ok(!mock.turns[0]!.toolNames.some((name) => name.includes('mcp')), mock.turns[0]!.toolNames.join());
    assert.match(
      readFileSync(join(home, 'config.toml'), 'utf8'),
      new RegExp(`\\[projects\\."${cwd}"\\]\\ntrust_level = "untrusted"`),
    );

    // 2. A shell call: tool lifecycle without the command, its output or its arguments.
    const marker = 'baton-command-marker-4242';
    mock.push(shellCall(`echo ${marker}`), reply('ran it'));
    const second = await collect(session.turn('run a command', { signal: new AbortController().signal }));
    const tools = second.filter((e) => e.kind === 'tool');
    assert.deepEqual(tools, [
      { kind: 'tool', phase: 'start', family: 'command' },
      { kind: 'tool', phase: 'end', family: 'command', ok: true },
    ]);
    assert.ok(second.some((e) => e.kind === 'status' && e.text === 'Running a command'));
    assert.deepEqual(second.at(-1), { kind: 'end', outcome: 'succeeded' });
    const serialized = JSON.stringify([...first, ...second]);
    assert.doesNotMatch(serialized, new RegExp(marker));
    assert.doesNotMatch(serialized, new RegExp(PLANTED_KEY));
    // The command really ran: its output went back to the model.
    const afterTool = mock.turns.at(-1)!;
    assert.ok(afterTool.input.some((i) => i.type === 'function_call_output' && String(i.output).includes(marker)));

    // 2b. A patch: lifecycle of family `patch`, the file really written, its path not in the events.
    mock.push(addFilePatch('patched-by-codex.txt', 'hello patch'), reply('patched'));
    const patchTurn = await collect(session.turn('edit a file', { signal: new AbortController().signal }));
    assert.deepEqual(
      patchTurn.filter((e) => e.kind === 'tool'),
      [
        { kind: 'tool', phase: 'start', family: 'patch' },
        { kind: 'tool', phase: 'end', family: 'patch', ok: true },
      ],
    );
    assert.equal(readFileSync(join(cwd, 'patched-by-codex.txt'), 'utf8'), 'hello patch\n');
    assert.doesNotMatch(JSON.stringify(patchTurn), /patched-by-codex/);

    // 3. Cancel a stalled turn: turn/interrupt is acknowledged within the grace.
    const gate = new Gate();
    t.after(() => gate.open());
    mock.push(stalledReply(gate));
    const controller = new AbortController();
    const stalledTurns = mock.turns.length;
    const events: AgentEvent[] = [];
    const cancelled = (async () => {
      for await (const e of session.turn('this will stall', { signal: controller.signal })) events.push(e);
    })();
    await mock.waitForTurn(stalledTurns);
    controller.abort();
    await cancelled;
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });
    assert.equal(
      events.some((e) => e.kind === 'message'),
      false,
    );

    // 4. Resume the thread in a fresh process: the model sees the earlier history.
    const threadId = session.id!;
    await session.close();
    const resumed = await open(threadId);
    assert.equal(resumed.id, threadId);
    mock.push(reply('resumed answer'));
    const before = mock.turns.length;
    const third = await collect(resumed.turn('after the restart', { signal: new AbortController().signal }));
    assert.deepEqual(third.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.deepEqual(
      third.filter((e) => e.kind === 'message'),
      [{ kind: 'message', text: 'resumed answer' }],
    );
    const seen = await mock.waitForTurn(before);
    const users = userTexts(seen);
    for (const prompt of ['first prompt', 'run a command', 'edit a file', 'after the restart'])
      assert.ok(users.includes(prompt), prompt);
    assert.ok(assistantTexts(seen).includes('The first answer'));
    await resumed.close();

    // 5. A model failure ends the turn as failed with Codex's reason.
    const failing = await open(threadId);
    mock.push({ kind: 'http_error', status: 400, message: 'mock rejects this request' });
    const failed = await collect(failing.turn('fail please', { signal: new AbortController().signal }));
    const end = failed.at(-1)!;
    assert.equal(end.kind, 'end');
    assert.equal(end.kind === 'end' && end.outcome, 'failed');
    await failing.close();

    // Probe: binary, version, login (the planted key counts as a login), an app-server initialize; no inference.
    const requestsBefore = mock.server.requests.length;
    const probe = await agent.probe();
    assert.equal(probe.available, true, probe.detail);
    assert.equal(probe.version, binVersions.codex());
    assert.equal(probe.login, 'ok');
    assert.equal(mock.server.requests.length, requestsBefore);
    assert.doesNotMatch(JSON.stringify(probe), new RegExp(PLANTED_KEY));
  });

  test('a bad config entry is refused by the strict schema', () => {
    const ctx = { stateDir: '/nonexistent', logger: silentLogger };
    assert.throws(() => createAgent('codex', { kind: 'codex', unknownKey: 1 }, ctx));
    assert.throws(() =>
      createAgent('codex', { kind: 'codex', configOverrides: { 'mcp_servers.x.command': 'y' } }, ctx),
    );
    assert.throws(() => createAgent('codex', { kind: 'codex', command: [] }, ctx));
  });
});

describe('isolated home auth write-back (AG-9)', () => {
  const config = (userCodexHome: string) => ({ userCodexHome });

  test('a rotated login is written back when the user file is unchanged', (t) => {
    const root = tempDir(t);
    const user = ensurePrivateDir(join(root, 'user'));
    writeFileSync(join(user, 'auth.json'), '{"v":1}');
    const home = prepareCodexHome(join(root, 'state'), 'codex', config(user));
    assert.equal(home.writeBackAuth(), false, 'nothing changed');
    writeFileSync(join(home.dir, 'auth.json'), '{"v":2}');
    assert.equal(home.writeBackAuth(), true);
    assert.equal(readFileSync(join(user, 'auth.json'), 'utf8'), '{"v":2}');
    assert.equal(statSync(join(user, 'auth.json')).mode & 0o777, 0o600);
  });

  test('a newer login in the user file is never overwritten by a stale run', (t) => {
    const root = tempDir(t);
    const user = ensurePrivateDir(join(root, 'user'));
    writeFileSync(join(user, 'auth.json'), '{"v":1}');
    const home = prepareCodexHome(join(root, 'state'), 'codex', config(user));
    writeFileSync(join(home.dir, 'auth.json'), '{"v":2}');
    writeFileSync(join(user, 'auth.json'), '{"v":"user logged in again"}');
    assert.equal(home.writeBackAuth(), false);
    assert.equal(readFileSync(join(user, 'auth.json'), 'utf8'), '{"v":"user logged in again"}');
  });

  test('no user login: none is copied, none is written back', (t) => {
    const root = tempDir(t);
    const user = ensurePrivateDir(join(root, 'user'));
    const home = prepareCodexHome(join(root, 'state'), 'codex', config(user));
    assert.throws(() => statSync(join(home.dir, 'auth.json')), { code: 'ENOENT' });
    writeFileSync(join(home.dir, 'auth.json'), '{"v":3}');
    assert.equal(home.writeBackAuth(), false);
    assert.throws(() => statSync(join(user, 'auth.json')), { code: 'ENOENT' });
  });
});

describe('codex agent edge paths (against a FAKE app-server, see fixtures/fake-app-server.ts)', () => {
  /** A session on a fresh agent over the fake app-server in its own temp root, closed when the test ends. */
  const fakeSession = async (t: { after: (fn: () => unknown) => void }, onProcessGroup?: (pgid: number) => void) => {
    const root = tempDir(t, 'baton-codex-fake-');
    const agent = createAgent(
      'codex',
      {
        kind: 'codex',
        command: [process.execPath, join(import.meta.dirname, '..', '..', 'codex', 'fixtures', 'fake-app-server.ts')],
        userCodexHome: join(root, 'no-user-home'),
        cancelGraceMs: 300,
      },
      { stateDir: root, logger: silentLogger },
    );
    const session = await agent.openSession({
      cwd: root,
      sandbox: 'workspace-write',
      signal: new AbortController().signal,
      ...(onProcessGroup ? { onProcessGroup } : {}),
    });
    t.after(() => session.close());
    return session;
  };

  test('approval requests are declined and reported without their arguments (TE-11)', async (t) => {
    const session = await fakeSession(t);
    const events = await collect(session.turn('ask', { signal: new AbortController().signal }));
    assert.deepEqual(
      events.filter((e) => e.kind === 'permission'),
      [
        { kind: 'permission', decision: 'denied', what: 'command execution' },
        { kind: 'permission', decision: 'denied', what: 'file change' },
      ],
    );
    const answers = JSON.parse((events.find((e) => e.kind === 'message') as { text: string }).text);
    assert.deepEqual(answers, [
      { id: 0, result: { decision: 'decline' } },
      { id: 1, result: { decision: 'decline' } },
      { id: 2, error: { code: -32601, message: 'baton does not support attestation/generate' } },
    ]);
    assert.doesNotMatch(JSON.stringify(events), /secret\/path/);
  });

  test('every request of the shared decline table is declined with its answer and reported (TE-11)', async (t) => {
    const session = await fakeSession(t);
    const prompt = `ask-all:${JSON.stringify(DECLINED_CODEX_METHODS)}`;
    const events = await collect(session.turn(prompt, { signal: new AbortController().signal }));
    const answers = JSON.parse((events.find((e) => e.kind === 'message') as { text: string }).text);
    assert.deepEqual(
      answers,
      DECLINED_CODEX_METHODS.map((method, id) => ({ id, result: codexDecline(method)!.answer })),
    );
    assert.deepEqual(
      events.filter((e) => e.kind === 'permission').map((e) => (e as { what: string }).what),
      DECLINED_CODEX_METHODS.map((method) => codexDecline(method)!.what),
    );
    assert.ok(DECLINED_CODEX_METHODS.includes('item/tool/requestUserInput'));
  });

  test('an interrupt Codex never acknowledges: the process group is stopped, acknowledged=false (TE-8)', async (t) => {
    const pgids: number[] = [];
    const session = await fakeSession(t, (pgid) => pgids.push(pgid));
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const done = (async () => {
      for await (const e of session.turn('hang', { signal: controller.signal })) {
        events.push(e);
        if (e.kind === 'status' && e.text === 'Working') controller.abort();
      }
    })();
    await done;
    assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: false });
    assert.throws(() => process.kill(-pgids[0]!, 0), { code: 'ESRCH' });
    // The session is unusable afterwards and says so.
    const after = await collect(session.turn('again', { signal: new AbortController().signal }));
    assert.equal(after.at(-1)?.kind === 'end' && after.at(-1)?.kind, 'end');
    assert.equal((after.at(-1) as { outcome: string }).outcome, 'failed');
  });
});
