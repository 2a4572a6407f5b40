// Small HTTP/TCP helpers shared by the faces and the agents.
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:net';

/**
 * A loopback port that was free a moment ago. For children that cannot be told "port 0" (opencode serve, a browser
 * helper): the caller treats a later bind race as a retryable start failure.
 */
export function pickFreeLoopbackPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolvePort(port) : reject(new Error('could not pick a free loopback port'))));
    });
  });
}

/** The request body as UTF-8 text, or null once it passes `maxBytes` (the rest is drained, never buffered). */
export async function readBodyText(req: IncomingMessage, maxBytes: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      req.resume();
      return null;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
