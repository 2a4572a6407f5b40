// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The shared tool layer on MCP SDK v2: the same strict -32602 answers in both protocol eras, through the
// official v2 client over real HTTP.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { defineTool, jsonResult, serveTools } from '../../src/faces/mcp-tools.ts';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  input: z.object({ text: z.string().max(5), tag: z.record(z.string(), z.string()).optional() }).strict(),
  handler: (args) => jsonResult({ text: args.text }),
});

describe('mcp-tools on SDK v2', () => {
  let url: URL;
  const http = createServer();
  before(async () => {
    const handler = createMcpHandler(() => {
      const server = new Server({ name: 't', version: '1' }, { capabilities: { tools: {} } });
      serveTools(server, [echo]);
      return server;
    });
    http.on('request', toNodeHandler(handler));
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  });
  after(() => {
    http.closeAllConnections();
    http.close();
  });

  for (const era of ['legacy', 'modern'] as const) {
    test(`${era} era: a call answers, and bad arguments are -32602 naming the argument`, async () => {
      const client = new Client(
        { name: 'c', version: '1' },
        { versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' } },
      );
      await client.connect(new StreamableHTTPClientTransport(url));
      try {
        const { tools } = await client.listTools();
        assert.deepEqual(
          tools.map((t) => t.name),
          ['echo'],
        );
        const ok = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        assert.deepEqual(ok.structuredContent, { text: 'hi' });
        const cases: Array<[Record<string, unknown>, RegExp]> = [
          [{ text: 'too long' }, /invalid arguments for echo: text: .*5/],
          [{ text: 'a', extra: 1 }, /unknown argument\(s\) "extra"/],
          [JSON.parse('{"text":"a","tag":{"__proto__":"x"}}'), /tag: the key "__proto__" is not allowed/],
          [{ text: 'a\ud800' }, /text: contains a lone surrogate/],
        ];
        for (const [args, message] of cases) {
          await assert.rejects(client.callTool({ name: 'echo', arguments: args }), (err: Error & { code?: number }) => {
            assert.equal(err.code, -32602, err.message);
            assert.match(err.message, message);
            return true;
          });
        }
        await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), /unknown tool "nope"/);
      } finally {
        await client.close();
      }
    });
  }
});
