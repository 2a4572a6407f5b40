// The browser provider's stdio edges without any lease: fail closed with no helper (for SDK v1, and SDK v2 at
// 2026-07-28 through the proxy), bounded client frames (SE-5), and every child reaped when stdin closes (P-GEN).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from '../../support/bins.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { spawnV1StdioClient } from '../../support/stdio-client.ts';
import { tempDir } from '../../support/tmp.ts';
import { batonLaunch, childrenOf, makeBox, startBaton, text } from './support.ts';

const env = {
  ...process.env,
  CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1',
  CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1',
};

test('without a lease command every browser call fails closed; tools/list still works (2026-07-28 client)', async (t) => {
  const box = makeBox(tempDir(t, 'baton-browser-stdio-'), 'none');
  // The proxy passes frames through, so the era is chrome-devtools-mcp's: 1.11 answers `server/discover` with -32601
  // and the 2026-07-28 client settles on `initialize`.
  const baton = await startBaton(box, [], { withoutLeaseCommand: true, era: 'auto' });
  try {
    assert.equal(baton.client.getProtocolEra(), 'legacy');
    assert.ok((await baton.client.listTools()).tools.length > 10);
    const result = await baton.call('list_pages');
    assert.equal(result.isError, true);
    assert.match(text(result), /^GUI not verified — no browser box available/);
    assert.deepEqual(box.calls(), []);
  } finally {
    await baton.close();
  }
});

test('an SDK v1 client (2025 protocol) gets the same fail-closed answer', async (t) => {
  const box = makeBox(tempDir(t, 'baton-browser-stdio-'), 'none-v1');
  const v1 = await spawnV1StdioClient(batonLaunch(box, [], { withoutLeaseCommand: true }));
  try {
    assert.ok((await v1.client.listTools()).tools.length > 10);
    const result = await v1.client.callTool({ name: 'list_pages', arguments: {} });
    assert.equal(result.isError, true);
    assert.match(JSON.stringify(result.content), /GUI not verified — no browser box available/);
    assert.deepEqual(box.calls(), []);
  } finally {
    await v1.close();
  }
});

test('an oversized client frame stops the server, which reaps its downstream', async () => {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), 'mcp', '--provider', 'browser'], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const exited = once(child, 'exit');
  await until(() => stderr.includes('[baton] ready (provider: browser)'), { what: 'ready line' });
  const downstreamPids = childrenOf(child.pid!);
  assert.ok(downstreamPids.length >= 1, 'chrome-devtools-mcp was started at once');
  // 9 MiB without a newline: past the 8 MiB client frame bound.
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  // The server may stop reading (and close the pipe) before the last chunk is flushed: that is the behaviour under
  // test, so a write failing with EPIPE is expected, not an error of the test.
  child.stdin.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
  for (let i = 0; i < 9; i++) child.stdin.write(chunk);
  const [code] = await exited;
  assert.equal(code, 0);
  assert.match(stderr, /exceeds the \d+-byte limit/);
  for (const pid of downstreamPids) assert.equal(pidAlive(pid), false, `downstream ${pid} reaped`);
});
