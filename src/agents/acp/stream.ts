// The agent's stdio as an ACP SDK Stream, framed by baton's own bounded JSON-lines reader (rule: bounded-frames).
//
// The SDK's ndJsonStream also bounds messages, but every JSON-lines stream baton reads goes through lib/jsonl so the
// limit, the error type and the "stop reading once a frame is oversized" rule are the same everywhere.
import type { Readable, Writable } from 'node:stream';
import type { AnyMessage, Stream } from '@agentclientprotocol/sdk';
import { DEFAULT_MAX_LINE_BYTES, readJsonLines } from '../../lib/jsonl.ts';

export interface StdioStreamHooks {
  maxLineBytes?: number;
  /** The stream broke: an oversized frame. The connection closes with this error. */
  onFrameError?: (err: Error) => void;
  /** A line that was not a JSON object (skipped). */
  onMalformed?: (raw: Buffer) => void;
}

export function stdioStream(stdout: Readable, stdin: Writable, hooks: StdioStreamHooks = {}): Stream {
  let done = false;
  const readable = new ReadableStream<AnyMessage>({
    start(controller) {
      readJsonLines(stdout, {
        maxLineBytes: hooks.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
        onMessage: (msg, raw) => {
          if (done) return;
          if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return hooks.onMalformed?.(raw);
          controller.enqueue(msg as AnyMessage);
        },
        onMalformed: (raw) => hooks.onMalformed?.(raw),
        onError: (err) => {
          if (done) return;
          done = true;
          hooks.onFrameError?.(err);
          controller.error(err);
          // Nobody reads past an oversized frame: keep the pipe drained so the child never blocks on a full buffer.
          stdout.resume();
        },
        onEnd: () => {
          if (done) return;
          done = true;
          controller.close();
        },
      });
    },
    cancel() {
      done = true;
    },
  });
  // A child that died mid-write gives EPIPE; the exit is reported through the process, not here.
  stdin.on('error', () => {});
  const writable = new WritableStream<AnyMessage>({
    write(message) {
      return new Promise<void>((resolve, reject) => {
        if (stdin.destroyed || stdin.writableEnded) return reject(new Error('the agent closed its input'));
        stdin.write(`${JSON.stringify(message)}\n`, (err) => (err ? reject(err) : resolve()));
      });
    },
  });
  return { readable, writable };
}
