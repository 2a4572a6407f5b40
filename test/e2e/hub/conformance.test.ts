// The official MCP conformance suite (@modelcontextprotocol/conformance) against a hub endpoint. The suite has no
// option for credentials, so a loopback proxy owned by this test adds the caller's bearer token and maps its own
// host:port to the hub's; everything else (including foreign Host/Origin headers) passes through unchanged.
// Scenarios that cannot apply to baton are listed with their reasons in conformance-baseline.yml. It runs once per
// protocol era, each with the requirement set of that revision (conformance 0.2.0-alpha.12).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT } from '../../support/bins.ts';
import { startHub, TEST_CALLERS } from '../../support/hub.ts';
import { tempDir } from '../../support/tmp.ts';

test('MCP conformance suite against /mcp/alice (expected failures only where a scenario cannot apply)', async (t) => {
  const dir = tempDir(t, 'baton-conformance-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const hub = await startHub(t, { dir, roots: [work], agents: {} });
  const hubUrl = new URL(hub.url);
  const proxy = createServer((req, res) => {
    const port = (proxy.address() as AddressInfo).port;
    const headers = { ...req.headers };
    const mapHost = (v: string) => v.replace(new RegExp(`^(localhost|127\\.0\\.0\\.1):${port}$`), `$1:${hubUrl.port}`);
    if (headers.host) headers.host = mapHost(headers.host);
    if (headers.origin) headers.origin = headers.origin.replace(`:${port}`, `:${hubUrl.port}`);
    headers.authorization = `Bearer ${TEST_CALLERS.alice}`;
    const upstream = request(
      { host: '127.0.0.1', port: hubUrl.port, path: req.url, method: req.method, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  t.after(() => {
    proxy.closeAllConnections();
    proxy.close();
  });
  const url = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp/alice`;
  // One run per protocol era: a revision's requirement set runs its scenarios at that revision's wire (the 2025-11-25
  // initialize handshake with a session; 2026-07-28 stateless with per-request _meta).
  for (const revision of ['2025-11-25', '2026-07-28']) {
    await t.test(`requirements of ${revision}`, async () => {
      const result = await new Promise<{ code: number; out: string }>((resolve) => {
        execFile(
          process.execPath,
          [
            join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
            'server',
            '--url',
            url,
            '--requirements',
            revision,
            '--expected-failures',
            join(REPO_ROOT, 'test', 'e2e', 'hub', 'conformance-baseline.yml'),
            '--output-dir',
            join(dir, `results-${revision}`),
          ],
          { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 240_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
        );
      });
      assert.equal(result.code, 0, result.out.slice(-6000));
    });
  }
});
