// Message channels under the JSON-RPC peer: JSON lines over caller-owned streams, and WebSocket (TCP or a Unix socket).
// Both bound what they read (one message) and what they queue for writing.
import { connect as netConnect } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import type WebSocket from 'ws';
import { FrameTooLargeError, readJsonLines } from '../lib/jsonl.ts';
import { type MessageChannel, OutgoingBufferFullError } from './json-rpc-peer.ts';

export interface ChannelLimits {
  maxMessageBytes: number;
  maxOutgoingBytes: number;
}

export class MessageTooLargeError extends Error {
  constructor(limit: number) {
    super(`output too large: an incoming message exceeds the ${limit}-byte limit`);
    this.name = 'MessageTooLargeError';
  }
}

export class MalformedMessageError extends Error {
  constructor() {
    super('an incoming message is not valid JSON');
    this.name = 'MalformedMessageError';
  }
}

function checkOutgoing(queued: number, text: string, limit: number): void {
  if (queued + Buffer.byteLength(text) + 1 > limit) throw new OutgoingBufferFullError(limit);
}

/** JSON lines over a readable/writable pair the caller owns; close() ends both streams and nothing else. */
export function jsonLinesChannel(readable: Readable, writable: Writable, limits: ChannelLimits): MessageChannel {
  let detachReader: (() => void) | undefined;
  let onCloseHandler: ((error?: Error) => void) | undefined;
  let done = false;
  const finish = (error?: Error) => {
    if (done) return;
    done = true;
    detachReader?.();
    readable.off('error', onStreamError);
    readable.off('close', onReadableClose);
    writable.off('error', onStreamError);
    onCloseHandler?.(error);
  };
  const onStreamError = (err: Error) => finish(new Error(`stream error: ${err.message}`));
  const onReadableClose = () => finish(new Error('the stream closed'));
  return {
    start({ onMessage, onClose }) {
      onCloseHandler = onClose;
      readable.on('error', onStreamError);
      readable.once('close', onReadableClose);
      writable.on('error', onStreamError);
      detachReader = readJsonLines(readable, {
        maxLineBytes: limits.maxMessageBytes,
        onMessage: (msg) => {
          if (!done) onMessage(msg);
        },
        onMalformed: () => finish(new MalformedMessageError()),
        onError: (err) =>
          finish(err instanceof FrameTooLargeError ? new MessageTooLargeError(limits.maxMessageBytes) : err),
        onEnd: () => finish(new Error('the stream ended')),
      });
    },
    send(text) {
      if (done || writable.writableEnded || writable.destroyed) throw new Error('the stream is closed');
      checkOutgoing(writable.writableLength, text, limits.maxOutgoingBytes);
      writable.write(`${text}\n`);
    },
    close() {
      if (done) return;
      finish(undefined);
      writable.end();
      readable.destroy();
    },
  };
}

export type WebSocketEndpoint = { type: 'url'; url: string; token?: string } | { type: 'unix'; socketPath: string };

/**
 * Opens a WebSocket and resolves once the handshake succeeded. No redirects, no Origin header, no compression;
 * incoming messages over `maxMessageBytes` break the connection. A Unix endpoint runs the same handshake over the
 * socket at that exact path (no URL encoding of the path is involved).
 */
export async function openWebSocket(
  endpoint: WebSocketEndpoint,
  opts: { maxMessageBytes: number; handshakeTimeoutMs: number },
): Promise<WebSocket> {
  // Loaded on first use: the stdio paths (every provider, the hub's own Codex children) never need it.
  const { default: WebSocket } = await import('ws');
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (endpoint.type === 'url' && endpoint.token !== undefined) headers.authorization = `Bearer ${endpoint.token}`;
    const ws =
      endpoint.type === 'url'
        ? new WebSocket(endpoint.url, {
            headers,
            maxPayload: opts.maxMessageBytes,
            followRedirects: false,
            perMessageDeflate: false,
          })
        : new WebSocket('ws://localhost/', {
            maxPayload: opts.maxMessageBytes,
            followRedirects: false,
            perMessageDeflate: false,
            createConnection: () => netConnect({ path: endpoint.socketPath }),
          });
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.off('open', onOpen);
      ws.off('error', onError);
      ws.off('unexpected-response', onUnexpected);
      if (error) {
        ws.on('error', () => {});
        ws.terminate();
        reject(error);
      } else resolve(ws);
    };
    const timer = setTimeout(
      () => settle(new Error(`the WebSocket handshake did not finish within ${opts.handshakeTimeoutMs} ms`)),
      opts.handshakeTimeoutMs,
    );
    const onOpen = () => settle();
    const onError = (err: Error) => settle(new Error(`the WebSocket connection failed: ${err.message}`));
    const onUnexpected = (_req: unknown, res: { statusCode?: number }) =>
      settle(new Error(`the server refused the WebSocket handshake with HTTP ${res.statusCode ?? 'error'}`));
    ws.once('open', onOpen);
    ws.on('error', onError);
    ws.once('unexpected-response', onUnexpected);
  });
}

/** An open WebSocket as a message channel: one JSON message per text frame. */
export function webSocketChannel(ws: WebSocket, limits: ChannelLimits): MessageChannel {
  let done = false;
  let pendingError: Error | undefined;
  let onCloseHandler: ((error?: Error) => void) | undefined;
  const finish = (error?: Error) => {
    if (done) return;
    done = true;
    onCloseHandler?.(error);
  };
  return {
    start({ onMessage, onClose }) {
      onCloseHandler = onClose;
      ws.on('message', (data: WebSocket.RawData) => {
        if (done) return;
        let msg: unknown;
        try {
          msg = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString());
        } catch {
          finish(new MalformedMessageError());
          ws.terminate();
          return;
        }
        onMessage(msg);
      });
      ws.on('error', (err: Error & { code?: string }) => {
        pendingError =
          err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? new MessageTooLargeError(limits.maxMessageBytes) : err;
      });
      ws.on('close', (code: number) => {
        finish(pendingError ?? new Error(`the WebSocket closed (code ${code})`));
      });
      if (ws.readyState !== ws.OPEN) finish(new Error('the WebSocket is not open'));
    },
    send(text) {
      if (done || ws.readyState !== ws.OPEN) throw new Error('the WebSocket is closed');
      checkOutgoing(ws.bufferedAmount, text, limits.maxOutgoingBytes);
      ws.send(text);
    },
    close() {
      if (done) return;
      finish(undefined);
      ws.close(1000);
      // A peer that never completes the closing handshake must not keep the socket alive.
      setTimeout(() => ws.terminate(), 1_000).unref();
    },
  };
}
