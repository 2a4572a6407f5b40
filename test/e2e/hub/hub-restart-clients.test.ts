// Real 2025-era MCP clients against the hub on SDK v2: one long-lived Codex (`codex app-server`) and one
// long-lived Gemini CLI (`gemini --acp`), each configured by `baton connect`, delegate to the scripted ACP agent, the
// hub restarts on the same address, and the SAME client process delegates again. A hub that forgot its sessions on
// restart would leave Gemini CLI getting `404 session not found` until it was restarted itself.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import * as acp from '@agentclientprotocol/sdk';
import { stdioStream } from '../../../src/agents/acp/stream.ts';
import { CodexAppServerClient } from '../../../src/index.ts';
import { spawnGroup } from '../../../src/lib/process-group.ts';
import { geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { mockCodexEnv, ResponsesMock, writeMockCodexHome } from '../../mock-models/responses.ts';
import type { RecordedRequest } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { NotificationLog } from '../../support/codex.ts';
import { batonConnect, CLIENT_TOKENS, clientPath, tokenEnv } from '../../support/connect.ts';
import { DELEGATE_ANSWER, Delegation, FINAL_PREFIX } from '../../support/delegation.ts';
import { type HubSetup, type RunningHub, startHub } from '../../support/hub.ts';
import { portForLater } from '../../support/ports.ts';
import { scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { fileHooks, tempDir } from '../../support/tmp.ts';

const PROMPT = 'Hand this task to the scripted agent through baton.';

/** The 2025-era sessions the hub's store holds for `caller` (id hashes), read beside the running hub. */
function sessionsOf(stateDir: string, caller: string): string[] {
  const db = new DatabaseSync(join(stateDir, 'baton.db'), { readOnly: true });
  try {
    const rows = db.prepare('SELECT id_hash FROM mcp_sessions WHERE caller = ? ORDER BY id_hash').all(caller);
    return rows.map((r) => String(r.id_hash));
  } finally {
    db.close();
  }
}

/**
 * The file's one hub, on a fixed port so a restart keeps its address. Each test restarts it under its client and
 * leaves the new one running for the next (cleanups are the file's, so a restarted hub is stopped at the end too).
 */
let shared: Promise<{ setup: HubSetup; hub: RunningHub }> | undefined;
function sharedHub() {
  shared ??= (async () => {
    const dir = tempDir(fileHooks, 'baton-restart-');
    const { work, entry } = scriptedAgentSetup(dir);
    const callers = Object.fromEntries(Object.entries(CLIENT_TOKENS).map(([c, token]) => [c, { token }]));
    const setup: HubSetup = { dir, roots: [work], agents: { scripted: entry }, callers, port: await portForLater() };
    return { setup, hub: await startHub(fileHooks, setup) };
  })();
  return shared;
}

/** Stops the shared hub and starts it again on the same address. */
async function restart(): Promise<RunningHub> {
  const state = await sharedHub();
  await state.hub.stop();
  state.hub = await startHub(fileHooks, state.setup);
  return state.hub;
}

/**
 * A client delegates, the shared hub restarts, and the client delegates again; `sameProcess` asserts it is still the
 * process it was. Its 2025-era session ids went on working after the restart: the store holds the same ones, so the
 * client never had to initialize again.
 */
async function delegateAcrossRestart(
  caller: string,
  delegate: (turn: number) => Promise<void>,
  sameProcess: () => void,
) {
  await delegate(0);
  const { stateDir } = (await sharedHub()).hub;
  const before = sessionsOf(stateDir, caller);
  assert.ok(before.length >= 1, 'the client holds a 2025-era session');
  await restart();
  await delegate(1);
  sameProcess();
  assert.deepEqual(sessionsOf(stateDir, caller), before);
}

/**
 * One Delegation per user turn: a model request is answered by the delegation of its turn (the number of user prompts
 * in it) and sees only that turn's tool exchanges, so the second turn delegates afresh instead of quoting the first.
 */
class Turns {
  readonly turns: Delegation[];
  constructor(cwd: string, n: number) {
    this.turns = Array.from({ length: n }, () => new Delegation(cwd));
  }
  pick<T>(items: T[], isUserPrompt: (item: T) => boolean): { turn: Delegation; tail: T[] } {
    const starts = items.flatMap((item, i) => (isUserPrompt(item) ? [i] : []));
    const turn = this.turns[Math.max(0, starts.length - 1)]!;
    return { turn, tail: items.slice(starts.at(-1) ?? 0) };
  }
}

test('a long-lived Codex app-server delegates, the hub restarts, and the same process delegates again', async (t) => {
  const dir = tempDir(t, 'baton-restart-codex-');
  const { setup, hub } = await sharedHub();
  const project = setup.roots[0]!;

  const turns = new Turns(project, 2);
  const mock = await ResponsesMock.start((req: RecordedRequest) => {
    const body = req.body as { input?: Array<Record<string, unknown>> };
    const { turn, tail } = turns.pick(
      body.input ?? [],
      (item) => item.type === 'message' && item.role === 'user' && JSON.stringify(item.content).includes(PROMPT),
    );
    return turn.responses({ ...req, body: { ...body, input: tail } });
  });
  t.after(() => mock.close());
  const codexHome = writeMockCodexHome(join(dir, 'codex-home'), mock);
  mkdirSync(join(dir, 'home'), { recursive: true });
  const env = { ...mockCodexEnv(codexHome, join(dir, 'home')), PATH: clientPath(dir), ...tokenEnv('codex') };
  const c = await batonConnect(hub.configPath, ['codex'], { env, cwd: project });
  assert.equal(c.code, 0, `connect failed:\n${c.stdout}\n${c.stderr}`);

  const group = spawnGroup(process.execPath, [bins.codex(), 'app-server'], {
    cwd: project,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.after(() => group.stop(2_000));
  group.child.stderr!.resume();
  const log = new NotificationLog();
  const client = new CodexAppServerClient({
    transport: { type: 'stdio', readable: group.child.stdout!, writable: group.child.stdin! },
    clientInfo: { name: 'baton-test', version: '0.0.1' },
    initializeTimeoutMs: 60_000,
    onNotification: log.push,
  });
  await client.connect();
  t.after(() => client.close());
  const { thread } = (await client.request('thread/start', {
    cwd: project,
    sandbox: 'workspace-write',
    approvalPolicy: 'never',
  })) as { thread: { id: string } };

  const delegate = async (n: number) => {
    const started = (await client.request('turn/start', {
      threadId: thread.id,
      input: [{ type: 'text', text: PROMPT }],
    })) as { turn: { id: string } };
    const done = await log.wait('turn/completed', (p) => (p.turn as { id: string }).id === started.turn.id, 120_000);
    const said = JSON.stringify(done);
    const asked = turns.turns[n]!.asked;
    assert.ok(said.includes(`${FINAL_PREFIX}${DELEGATE_ANSWER}`), `turn ${n + 1}: ${said.slice(0, 600)}; ${asked}`);
    assert.equal(asked[0], 'agent_run');
    assert.equal(asked.at(-1), 'agent_result');
  };

  await delegateAcrossRestart('codex', delegate, () =>
    assert.equal(group.child.exitCode, null, 'the same Codex process'),
  );
});

test('a long-lived Gemini CLI (ACP) delegates, the hub restarts, and the same process delegates again', async (t) => {
  const dir = tempDir(t, 'baton-restart-gemini-');
  const { setup, hub } = await sharedHub();
  const project = setup.roots[0]!;

  const turns = new Turns(project, 2);
  const mock = await startGeminiMock((req: RecordedRequest) => {
    const body = req.body as { contents?: Array<{ role?: string; parts?: Array<Record<string, unknown>> }> };
    const { turn, tail } = turns.pick(
      body.contents ?? [],
      (c) => c.role === 'user' && JSON.stringify(c.parts ?? []).includes(PROMPT),
    );
    return turn.gemini({ ...req, body: { ...body, contents: tail } });
  });
  t.after(() => mock.close());
  const home = join(dir, 'home');
  const env = { ...geminiEnv(home, mock), PATH: clientPath(dir), ...tokenEnv('gemini') };
  const c = await batonConnect(hub.configPath, ['gemini'], { env, cwd: project });
  assert.equal(c.code, 0, `connect failed:\n${c.stdout}\n${c.stderr}`);

  const group = spawnGroup(bins.gemini(), ['--acp'], { cwd: project, env, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => group.stop(2_000));
  group.child.stderr!.resume();
  let said = '';
  const connection = acp
    .client({ name: 'baton-test' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const u = params.update as { sessionUpdate: string; content?: { type: string; text?: string } };
      if (u.sessionUpdate === 'agent_message_chunk' && u.content?.type === 'text') said += u.content.text ?? '';
    })
    // baton connect marks the server trusted; a permission request, if any, is granted like a user would.
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const allow = params.options.find((o) => o.kind.startsWith('allow'));
      return { outcome: allow ? { outcome: 'selected', optionId: allow.optionId } : { outcome: 'cancelled' } };
    })
    .connect(stdioStream(group.child.stdout!, group.child.stdin!));
  await connection.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const { sessionId } = await connection.agent.request(acp.methods.agent.session.new, { cwd: project, mcpServers: [] });

  const delegate = async (n: number) => {
    said = '';
    const answer = await connection.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: PROMPT }],
    });
    const asked = turns.turns[n]!.asked;
    assert.equal(answer.stopReason, 'end_turn');
    assert.ok(said.includes(`${FINAL_PREFIX}${DELEGATE_ANSWER}`), `turn ${n + 1}: ${said}; asked ${asked}`);
    assert.equal(asked[0], 'agent_run');
    assert.equal(asked.at(-1), 'agent_result');
  };

  await delegateAcrossRestart('gemini', delegate, () =>
    assert.equal(group.child.exitCode, null, 'the same Gemini CLI process'),
  );
});
