// `baton serve` tunes V8's collector before it loads the server (lib/idle-memory.ts, tuneDaemonHeap), so the young
// generation stays at the size it has when `serve` begins, also while the server's modules load. Read inside the daemon
// through a hook (test/support/heap-stats.mjs) that writes its heap statistics when the test asks.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startHub } from '../../support/hub.ts';
import { until } from '../../support/poll.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const HEAP_STATS_HOOK = fileURLToPath(new URL('../../support/heap-stats.mjs', import.meta.url));
const MiB = 1024 * 1024;

test('baton serve keeps its young generation small from its start, before any idle release', async (t) => {
  const dir = tempDir(t, 'baton-heap-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const out = join(dir, 'heap.json');
  const hub = await startHub(
    t,
    { dir, roots: [work], agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } } },
    { NODE_OPTIONS: `--import=${HEAP_STATS_HOOK}`, BATON_HEAP_STATS: out },
  );
  // Asked as soon as it listens: the first idle release cannot come before a quiet 0.6 s.
  process.kill(hub.group.child.pid!, 'SIGUSR2');
  const spaces = await until(
    () =>
      existsSync(out)
        ? (JSON.parse(readFileSync(out, 'utf8')) as { space_name: string; physical_space_size: number }[])
        : null,
    { what: 'the daemon to write its heap statistics' },
  );
  const young = spaces.find((s) => s.space_name === 'new_space');
  assert.ok(young, 'V8 reports a new_space');
  // Tuned only after the server's imports, the daemon started with 14.8 MiB of young generation committed; tuned
  // first, 4 MiB (what the CLI's own start-up grew before `serve` runs). The bound leaves room for that to double.
  assert.ok(
    young.physical_space_size <= 8 * MiB,
    `young generation at start: ${(young.physical_space_size / MiB).toFixed(1)} MiB committed`,
  );
});
