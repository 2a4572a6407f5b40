// Disk full, on a real full file system: the hub's state dir is a small tmpfs that the test fills. A write
// fails as a clear `disk full` tool error, the daemon stays up and serves reads, a round that ends while the disk is
// full is recorded once space returns, and a start on a full disk says so. Mounting needs root: where the runner is
// not root the test is skipped with that reason.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  batonHome,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  startHub,
  TEST_CALLERS,
  waitForEvent,
} from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

function canMount(): string | null {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  return null;
}

/** Fills the file system holding `dir` until writes fail with ENOSPC. */
function fill(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const buf = Buffer.alloc(size, 1);
      for (;;) {
        try {
          writeSync(fd, buf);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('disk full: clear tool error, reads still served, recovery when space returns, start says so', {
  skip: canMount() ?? false,
}, async (t) => {
  const dir = tempDir(t, 'baton-full-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const state = join(batonHome(dir), 'state');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', state]);
  // Unmounted in the test body, not in an after hook: the temp dir's own hook (registered first) removes the tree.
  try {
    await scenario(t, dir, work, state);
  } finally {
    spawnSync('umount', ['-l', state]);
  }
});

async function scenario(t: TestContext, dir: string, work: string, state: string): Promise<void> {
  const setup = {
    dir,
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
    limits: { idleTimeoutMs: 4_000 },
  };
  const hub = await startHub(t, setup);
  const alice = await connectCaller(t, hub, 'alice');
  const first = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: 'hello',
    cwd: work,
    idempotencyKey: 'k1',
  });
  assert.equal((await followToEnd(alice, first.taskId)).state, 'succeeded');
  // A round that is running when the disk fills up: it goes idle, and its end must wait for space.
  const stalled = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: acpScript([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'k2',
  });
  await waitForEvent(alice, stalled.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');

  const filler = fill(state);
  // A big prompt needs new WAL pages, which the full disk refuses.
  const refused = await alice.callTool({
    name: 'agent_run',
    arguments: { agent: 'scripted', prompt: 'x'.repeat(200_000), cwd: work, idempotencyKey: 'k3' },
  });
  assert.equal(refused.isError, true);
  const text = JSON.stringify(refused.content);
  assert.match(text, /disk full/);
  assert.doesNotMatch(text, /rollback/);
  assert.equal((refused.structuredContent as { code: string }).code, 'disk_full');
  // A new 2025-era session is a store row too: refused the same way, as the hub's 507 (not a 500).
  const initialize = await fetch(`${hub.url}/mcp/alice`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TEST_CALLERS.alice}`,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  assert.equal(initialize.status, 507);
  assert.equal(initialize.headers.get('mcp-session-id'), null);
  assert.match(await initialize.text(), /disk full: nothing was changed/);

  // The idle deadline ends the stalled round while the disk is full: the daemon logs it and stays up.
  await until('the failed write of the round end', () => /recording the end of a round failed/.test(hub.output()));
  assert.equal(hub.group.child.exitCode, null, 'the daemon is still running');
  const status = await call<{ state: string }>(alice, 'agent_status', { taskId: first.taskId });
  assert.equal(status.state, 'succeeded', 'reads are served on a full disk');
  const list = await call<{ tasks: unknown[] }>(alice, 'agent_list', {});
  assert.equal(list.tasks.length, 2);

  // Space returns: the pending round end is written and new work is accepted.
  rmSync(filler);
  const ended = await followToEnd(alice, stalled.taskId);
  assert.equal(ended.state, 'failed');
  const again = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: 'x'.repeat(200_000),
    cwd: work,
    idempotencyKey: 'k3',
  });
  assert.equal((await followToEnd(alice, again.taskId)).state, 'succeeded');

  // A start on a full disk says so.
  await hub.stop();
  const filler2 = fill(state);
  const start = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', hub.configPath, 'serve'], {
    env: isolatedEnv(dir),
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.notEqual(start.status, 0);
  assert.match(start.stderr, /disk full/, start.stderr);
  assert.doesNotMatch(start.stderr, /rollback/);
  rmSync(filler2);
}
