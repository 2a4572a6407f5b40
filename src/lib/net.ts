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

/**
 * The request body as UTF-8 text, or null once it passes `maxBytes` (the rest is drained, never buffered). Read with
 * stream events rather than an async iterator: the hub reads a body per MCP request, and the iterator's machinery cost
 * more than the read. A stream error rejects, as the iterator did.
 */
export function readBodyText(req: IncomingMessage, maxBytes: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      done();
      req.resume();
      resolve(null);
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    // A request aborted before its end never emits 'end': 'close' settles it like the iterator's premature close.
    const onClose = () => {
      done();
      reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
  });
}
