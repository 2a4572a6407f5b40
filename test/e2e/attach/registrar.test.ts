// The registrar on a host-owned MCP SDK v2 McpServer that already has its own tools, through the official SDK v2 client
// over an in-memory transport. Harness connections here are in-memory fakes (this file says so); the real servers are used in
// opencode-user-server.test.ts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ConnectionRegistry } from '../../../src/faces/attach/connections.ts';
import type { ConnectRequest, HarnessConnection } from '../../../src/faces/attach/harness.ts';
import { ATTACH_TOOL_NAMES, CrossHarnessMcpServer, CrossHarnessMcpToolRegistrar } from '../../../src/index.ts';
import { NODE_CACHE_ENV, REPO_ROOT } from '../../support/bins.ts';

const OC = 'http://127.0.0.1:4096/';

function fakeConnections(closeFailures = 0) {
  let failures = closeFailures;
  return new ConnectionRegistry({
    allowedServerUrls: [OC],
    env: { OPENCODE_SERVER_PASSWORD: 'planted-password-0x99' },
    connectors: {
      opencode: async (req: ConnectRequest): Promise<HarnessConnection> => ({
        harness: req.harness,
        health: async () => ({ healthy: true }),
        listChats: async () => [],
        readChat: async (chatId) => ({ chatId, title: '', directory: req.directory, messages: [], truncated: false }),
        send: async (chatId, message) => ({ chatId, reply: message }),
        close: async () => {
          if (failures-- > 0) throw new Error('close failed');
        },
      }),
    },
  });
}

function hostServer() {
  const server = new McpServer({ name: 'host', version: '1.0.0' });
  server.registerTool('host_echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  return server;
}

async function connectClient(server: McpServer) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  return client;
}

describe('CrossHarnessMcpToolRegistrar (LB-4)', () => {
  test('adds the nine tools beside the host tools; close refuses while connected, then cleans up', async () => {
    const server = hostServer();
    const registrar = new CrossHarnessMcpToolRegistrar(fakeConnections());
    registrar.register(server);
    assert.throws(() => registrar.register(server), /already registered/);
    const client = await connectClient(server);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['host_echo', ...ATTACH_TOOL_NAMES].sort());
    const echoed = await client.callTool({ name: 'host_echo', arguments: { text: 'hi' } });
    assert.deepEqual(echoed.content, [{ type: 'text', text: 'hi' }]);
    const connected = await client.callTool({
      name: 'connect_harness',
      arguments: { harness: 'opencode', serverUrl: OC, directory: '/srv' },
    });
    assert.ok(!connected.isError);
    // On a host's McpServer the SDK reports schema violations as tool errors naming the field (SE-4).
    const invalid = await client.callTool({
      name: 'list_chats',
      arguments: { connectionId: 'c', limit: 0 },
    });
    assert.equal(invalid.isError, true);
    assert.match(JSON.stringify(invalid.content), /Invalid arguments for tool list_chats: limit/);
    assert.equal(registrar.connections.list().length, 1);

    await assert.rejects(registrar.close(), /still connected/);
    assert.equal(registrar.connections.list().length, 1, 'a refused close changes nothing');
    assert.equal(
      (await client.listTools()).tools.length,
      ATTACH_TOOL_NAMES.length + 1,
      'tools stay registered after a refused close',
    );

    await server.close();
    await registrar.close();
    assert.deepEqual(registrar.connections.list(), []);
    assert.deepEqual(registrar.dispatches.list(), []);
  });

  test('a duplicate name throws and removes only what this attempt added; the host tool stays', async () => {
    const server = hostServer();
    server.registerTool('read_chat', { description: 'host-owned' }, async () => ({
      content: [{ type: 'text', text: 'host read_chat' }],
    }));
    const registrar = new CrossHarnessMcpToolRegistrar(fakeConnections());
    assert.throws(() => registrar.register(server), /read_chat is already registered/);
    const client = await connectClient(server);
    const tools = (await client.listTools()).tools;
    assert.deepEqual(tools.map((t) => t.name).sort(), ['host_echo', 'read_chat']);
    assert.equal(tools.find((t) => t.name === 'read_chat')!.description, 'host-owned');
    await server.close();
  });

  test('a failed connection cleanup is retryable by calling close again', async () => {
    const server = hostServer();
    const registrar = new CrossHarnessMcpToolRegistrar(fakeConnections(1));
    registrar.register(server);
    await registrar.connections.connect('opencode', OC, '/srv');
    await assert.rejects(registrar.close(), /close failed/);
    assert.equal(registrar.connections.list()[0]?.state, 'close_failed');
    await registrar.close();
    assert.deepEqual(registrar.connections.list(), []);
  });
});

describe('CrossHarnessMcpServer', () => {
  test('serves stdio, closes the server before the registrar, and a failed registrar cleanup can be retried', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const registrar = new CrossHarnessMcpToolRegistrar(fakeConnections(1));
    const server = new CrossHarnessMcpServer({ registrar, stdin, stdout });
    await server.start();
    await assert.rejects(server.start(), /only once/);
    await registrar.connections.connect('opencode', OC, '/srv');
    // The registrar refuses to close while its server is connected, so success proves the server closed first.
    await assert.rejects(server.close(), /close failed/);
    await server.close();
    await server.closed;
    assert.deepEqual(registrar.connections.list(), []);
  });
});

describe('baton attach process', () => {
  test('prints its ready line and exits 0 when the client closes stdin', async () => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), 'attach'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...NODE_CACHE_ENV },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
      if (stderr.includes('[baton] ready (attach)')) child.stdin.end();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, stderr);
  });
});
