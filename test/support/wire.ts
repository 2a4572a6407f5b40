// A recording pass-through between a real MCP client and the hub: every HTTP exchange (method, the MCP headers, the
// JSON-RPC body, the answer's status and JSON-RPC messages) is kept so a test can say what was on the wire.
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface WireExchange {
  method: string;
  path: string;
  headers: Record<string, string | undefined>;
  body: unknown;
  status: number;
  /** The JSON-RPC messages of the answer (a JSON body, or the data of each SSE event). */
  answers: unknown[];
}

const KEPT_HEADERS = ['mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'accept'];

export async function wireRecorder(
  t: Pick<TestContext, 'after'>,
  target: string,
): Promise<{ url: string; exchanges: WireExchange[] }> {
  const upstream = new URL(target);
  const exchanges: WireExchange[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const headers = { ...req.headers, host: upstream.host };
      const out = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const got: Buffer[] = [];
          answer.on('data', (c: Buffer) => {
            got.push(c);
            res.write(c);
          });
          answer.on('end', () => {
            res.end();
            const text = Buffer.concat(got).toString('utf8');
            exchanges.push({
              method: req.method ?? '',
              path: req.url ?? '',
              headers: Object.fromEntries(KEPT_HEADERS.map((h) => [h, req.headers[h] as string | undefined])),
              body: parse(raw.toString('utf8')),
              status: answer.statusCode ?? 0,
              answers: messagesOf(text),
            });
          });
        },
      );
      out.on('error', () => res.destroy());
      res.on('close', () => out.destroy());
      out.end(raw);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${upstream.pathname}`, exchanges };
}

function parse(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

function messagesOf(text: string): unknown[] {
  const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => parse(m[1]!));
  return events.length ? events : text ? [parse(text)] : [];
}
