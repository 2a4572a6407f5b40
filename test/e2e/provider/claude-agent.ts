// A part of claude-provider.test.ts, which imports it: one test process for both files' Claude runs.
// The Claude Code adapter against the real `claude` binary and the scripted Anthropic mock.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { ClaudeAgent } from '../../../src/agents/claude/agent.ts';
import { ClaudeConfigHome } from '../../../src/agents/claude/home.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { Gate } from '../../mock-models/server.ts';
import { bins } from '../../support/bins.ts';
import { tempDir } from '../../support/tmp.ts';

let mock: AnthropicMock;
let agent: ClaudeAgent;
const root = mkdtempSync(join(tmpdir(), 'baton-claude-agent-'));
after(() => rmSync(root, { recursive: true, force: true }));
const workspace = join(root, 'ws');

before(async () => {
  mock = await AnthropicMock.start();
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'notes.txt'), 'hello\n');
  agent = new ClaudeAgent('claude', {
    command: bins.claude(),
    homeDir: join(root, 'state', 'homes', 'claude'),
    env: isolatedClaudeEnv(mock.origin, root),
    interruptGraceMs: 1_000,
    stopGraceMs: 1_000,
  });
});
after(() => mock.close());

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

test('a turn maps init, tool use and result to normalised events; a second turn resumes the session, where a mutating command is denied and reported', async () => {
  const pgids: number[] = [];
  const session = await agent.openSession({
    cwd: workspace,
    sandbox: 'read-only',
    signal: new AbortController().signal,
    onProcessGroup: (pgid) => pgids.push(pgid),
  });
  mock.push(
    { kind: 'tool_use', name: 'Bash', input: { command: 'ls', description: 'list files' } },
    { kind: 'text', text: 'first answer' },
  );
  const events = await collect(session.turn('look around', { signal: new AbortController().signal }));
  const kinds = events.map((e) => e.kind);
  assert.equal(kinds[0], 'session');
  assert.deepEqual(
    events.filter((e) => e.kind === 'tool'),
    [
      { kind: 'tool', phase: 'start', family: 'command' },
      { kind: 'tool', phase: 'end', family: 'command', ok: true },
    ],
  );
  assert.ok(events.some((e) => e.kind === 'usage'));
  assert.deepEqual(events.at(-2), { kind: 'message', text: 'first answer' });
  assert.deepEqual(events.at(-1), { kind: 'end', outcome: 'succeeded' });
  assert.equal(pgids.length, 1);
  assert.equal(isGroupAlive(pgids[0]!), false, 'the turn reaped its process group');
  const sessionId = session.id;
  assert.match(sessionId ?? '', /^[0-9a-f-]{36}$/);

  // The resumed turn (one Claude process per turn) also tries a mutating command, which the read-only session denies.
  mock.push(
    { kind: 'tool_use', name: 'Bash', input: { command: 'echo pwned > pwned.txt', description: 'write' } },
    { kind: 'text', text: 'second answer' },
  );
  const before = mock.messageRequests.length;
  const second = await collect(session.turn('and now?', { signal: new AbortController().signal }));
  assert.deepEqual(second.at(-2), { kind: 'message', text: 'second answer' });
  assert.deepEqual(second.at(-1), { kind: 'end', outcome: 'succeeded' });
  assert.equal(session.id, sessionId, 'resume keeps the session id');
  const resumed = JSON.stringify(mock.messageRequests[before]?.messages);
  assert.ok(resumed.includes('look around') && resumed.includes('and now?'), 'the resumed request carries history');
  assert.deepEqual(
    second.filter((e) => e.kind === 'permission'),
    [{ kind: 'permission', decision: 'denied', what: 'command tool Bash' }],
  );
  assert.equal(existsSync(join(workspace, 'pwned.txt')), false);
  await session.close();
});

// A workspace-write session editing files in its cwd (the hub's delegation policy) is the first Claude round of the hub
// test in test/e2e/attach/opencode-user-server.test.ts.

test('resuming a session id Claude does not know fails with its reason', async () => {
  const session = await agent.openSession({
    cwd: workspace,
    sandbox: 'read-only',
    resume: '00000000-0000-4000-8000-000000000000',
    signal: new AbortController().signal,
  });
  const events = await collect(session.turn('continue', { signal: new AbortController().signal }));
  const end = events.at(-1);
  assert.equal(end?.kind === 'end' && end.outcome, 'failed');
  assert.match(end?.kind === 'end' ? (end.error ?? '') : '', /error_during_execution.*: .*conversation/i);
});

test('is_error decides failure; the error text is reported', async () => {
  const session = await agent.openSession({
    cwd: workspace,
    sandbox: 'read-only',
    signal: new AbortController().signal,
  });
  mock.push({ kind: 'error', status: 401, message: 'scripted auth failure' });
  const events = await collect(session.turn('hi', { signal: new AbortController().signal }));
  const end = events.at(-1);
  assert.equal(end?.kind, 'end');
  assert.equal(end?.kind === 'end' && end.outcome, 'failed');
  assert.match(end?.kind === 'end' ? (end.error ?? '') : '', /401/);
  assert.equal(
    events.some((e) => e.kind === 'message'),
    false,
  );
});

test('aborting a stalled turn interrupts Claude, ends cancelled and reaps its group', async () => {
  const gate = new Gate();
  const pgids: number[] = [];
  const session = await agent.openSession({
    cwd: workspace,
    sandbox: 'read-only',
    signal: new AbortController().signal,
    onProcessGroup: (p) => pgids.push(p),
  });
  mock.push({ kind: 'stall', gate, text: 'thinking' });
  const stop = new AbortController();
  const seen = mock.messageRequests.length;
  const turn = collect(session.turn('stall please', { signal: stop.signal }));
  await mock.waitForMessages(() => mock.messageRequests.length > seen);
  stop.abort();
  const events = await turn;
  gate.open();
  const end = events.at(-1);
  assert.equal(end?.kind === 'end' && end.outcome, 'cancelled');
  assert.equal(isGroupAlive(pgids[0]!), false);
});

// A blocking run (runBlocking, `--output-format json`) returning its result text is the claude_code tool of the Claude
// provider, asserted on the real claude in test/e2e/provider/claude-provider.test.ts.

// The probe (version and login without inference, two short Claude runs) is asserted on the real claude through the
// hub's start-up probe in test/e2e/attach/opencode-user-server.test.ts, whose hub runs it anyway.

test('rotated credentials are written back only when the canonical file did not change meanwhile', (t) => {
  const dir = tempDir(t, 'baton-claude-home-');
  const canonicalDir = join(dir, 'user');
  mkdirSync(canonicalDir);
  const canonical = join(canonicalDir, '.credentials.json');
  writeFileSync(canonical, '{"token":"v1"}');
  const home = new ClaudeConfigHome(join(dir, 'iso'), canonicalDir);
  assert.equal(statSync(home.dir).mode & 0o777, 0o700);

  const unchanged = home.beginRun();
  assert.equal(statSync(home.isolatedCredentials).mode & 0o777, 0o600);
  assert.equal(home.endRun(unchanged), false, 'nothing rotated, nothing written');

  const rotated = home.beginRun();
  writeFileSync(home.isolatedCredentials, '{"token":"v2"}');
  assert.equal(home.endRun(rotated), true);
  assert.equal(readFileSync(canonical, 'utf8'), '{"token":"v2"}');

  const stale = home.beginRun();
  writeFileSync(home.isolatedCredentials, '{"token":"v3-stale"}');
  writeFileSync(canonical, '{"token":"v4-newer-login"}');
  assert.equal(home.endRun(stale), false);
  assert.equal(readFileSync(canonical, 'utf8'), '{"token":"v4-newer-login"}', 'a newer login is never overwritten');
});

test('the claude kind is registered with a strict config schema and a private home under the state dir', (t) => {
  const stateDir = tempDir(t, 'baton-claude-kind-');
  const ctx = { stateDir, logger: silentLogger };
  assert.throws(() => createAgent('c', { kind: 'claude', bogus: true }, ctx), /bogus|Unrecognized/);
  assert.throws(() => createAgent('c', { kind: 'claude', effort: 'extreme' }, ctx));
  const made = createAgent('c', { kind: 'claude', effort: 'high', model: 'opus' }, ctx);
  assert.ok(made instanceof ClaudeAgent);
  assert.equal(made.kind, 'claude');
  assert.equal((statSync(join(stateDir, 'homes', 'claude-c')).mode & 0o777).toString(8), '700');
});
