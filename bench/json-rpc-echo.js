// The per-call floor for `--only mcp-call`: a bare node:http server answering MCP's JSON-RPC by hand (initialize and
// tools/call, as plain JSON on a 2025-era session), no SDK, no validation, no store. Plain JS, as a user's Node runs it.
// Prints its URL on stdout once listening.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!('id' in msg)) {
      res.writeHead(202).end();
      return;
    }
    const result =
      msg.method === 'initialize'
        ? {
            protocolVersion: msg.params.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: 'echo', version: '0.0.0' },
          }
        : { content: [{ type: 'text', text: JSON.stringify(msg.params ?? {}) }], structuredContent: msg.params ?? {} };
    const body = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (msg.method === 'initialize') headers['mcp-session-id'] = 'echo-session';
    res.writeHead(200, headers).end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${server.address().port}\n`));
