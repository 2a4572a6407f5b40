// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Every reader of JSON lines from a child or a server, given lines that are valid JSON but not an object (null, a
// number, a string, an array, a boolean): none throws, and each does what its protocol asks. The legacy bridge and
// ACP drop such a line and go on; Codex's app-server channel closes as a protocol violation, named; OpenCode's event
// stream and Claude's stream-json skip it. The scripted peers here stand in for the agents only to send these lines,
// which no real agent sends on demand; each reader's real-binary tests are in its own suite.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { stdioStream } from '../../src/agents/acp/stream.ts';
import { ClaudeStreamMapper, isClaudeResult } from '../../src/agents/claude/stream.ts';
import { OpenCodeClient } from '../../src/agents/opencode/client.ts';
import { jsonLinesChannel } from '../../src/codex/channels.ts';
import { JsonRpcPeer } from '../../src/codex/json-rpc-peer.ts';
import { codexFrame } from '../../src/faces/provider/codex/legacy-frames.ts';

const NOT_OBJECTS = ['null', '42', '"text"', '[1,2]', 'true'];

interface Reader {
  name: string;
  /** Feeds the reader the lines, then one good message; says what the reader made of them. */
  read(lines: string[]): Promise<unknown>;
  /** What it should make of them. */
  expected: unknown;
}

const readers: Reader[] = [
  {
    name: 'legacy bridge (Codex ≤ 0.153 stdout)',
    read: async (lines) => [...lines, '{"jsonrpc":"2.0","method":"x"}'].map((l) => codexFrame(Buffer.from(l)).kind),
    expected: [...NOT_OBJECTS.map(() => 'not_object'), 'other'],
  },
  {
    name: 'ACP (agent stdout)',
    read: async (lines) => {
      const stdout = new PassThrough();
      const malformed: string[] = [];
      const { readable } = stdioStream(stdout, new PassThrough(), { onMalformed: (raw) => malformed.push(`${raw}`) });
      stdout.end(`${[...lines, '{"jsonrpc":"2.0","method":"x"}'].join('\n')}\n`);
      const messages: unknown[] = [];
      for await (const m of readable) messages.push(m);
      return { malformed, messages };
    },
    expected: { malformed: NOT_OBJECTS, messages: [{ jsonrpc: '2.0', method: 'x' }] },
  },
  {
    name: "Codex app-server (JSON-RPC over the child's stdio)",
    read: async (lines) =>
      Promise.all(
        lines.map(async (line) => {
          const readable = new PassThrough();
          const closed = Promise.withResolvers<string | undefined>();
          const channel = jsonLinesChannel(readable, new PassThrough(), {
            maxMessageBytes: 1 << 20,
            maxOutgoingBytes: 1 << 20,
          });
          const peer = new JsonRpcPeer({
            channel,
            maxPendingOutgoing: 8,
            maxPendingIncoming: 8,
            jsonrpcVersionField: false,
            onClose: (err) => closed.resolve(err?.message),
          });
          peer.start();
          readable.write(`${line}\n`);
          return closed.promise;
        }),
      ),
    expected: NOT_OBJECTS.map(() => 'protocol violation: the peer sent a message that is not a JSON object'),
  },
  {
    name: 'OpenCode (server event stream)',
    read: async (lines) => {
      const server = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end([...lines, '{"type":"server.connected","properties":{}}'].map((l) => `data: ${l}\n\n`).join(''));
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const { port } = server.address() as AddressInfo;
        const client = new OpenCodeClient({ baseUrl: `http://127.0.0.1:${port}/` });
        const events: unknown[] = [];
        for await (const ev of client.events({}, new AbortController().signal).events) events.push(ev);
        return events;
      } finally {
        server.close();
      }
    },
    expected: [{ type: 'server.connected', properties: {} }],
  },
  {
    name: "Claude Code (stream-json on the CLI's stdout)",
    read: async (lines) => {
      const mapper = new ClaudeStreamMapper();
      return lines.map((l) => {
        const msg: unknown = JSON.parse(l);
        return { events: mapper.map(msg), result: isClaudeResult(msg) };
      });
    },
    expected: NOT_OBJECTS.map(() => ({ events: [], result: false })),
  },
];

for (const reader of readers) {
  test(`${reader.name}: lines of JSON that are not objects never throw`, async () => {
    assert.deepEqual(await reader.read(NOT_OBJECTS), reader.expected);
  });
}
