// The one bounded JSON-lines framing used for every JSON-RPC stream baton reads (rule: bounded-frames).
import type { Readable, Writable } from 'node:stream';

export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;
/**
 * Lines handled per turn of the event loop: a chunk holding thousands of small lines (an agent flooding events) is
 * split across turns, so the hub's HTTP requests are served in between instead of after the whole chunk.
 */
const LINES_PER_TURN = 32;

export class FrameTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`output too large: an incoming line exceeds the ${limit}-byte limit`);
    this.name = 'FrameTooLargeError';
    this.limit = limit;
  }
}

export interface LineReaderOptions {
  maxLineBytes?: number;
  /** A complete line (without the newline), as raw bytes; the caller decides whether to parse it. */
  onLine: (line: Buffer) => void;
  /** An oversized line: the stream is no longer trustworthy, the reader stops. */
  onError: (err: Error) => void;
  onEnd?: () => void;
}

/**
 * Splits a byte stream on '\n' with a hard bound on a line's size. Memory stays bounded by the limit: an oversized
 * line is reported as soon as it crosses the limit, not when its end finally arrives.
 */
export function readLines(stream: Readable, opts: LineReaderOptions): () => void {
  const max = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  let chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  /** The rest of a chunk waits for the next turn; the stream is paused meanwhile. */
  let yielding = false;
  let endPending = false;
  const onData = (data: Buffer | string) => {
    if (failed) return;
    let buf = typeof data === 'string' ? Buffer.from(data) : data;
    let handled = 0;
    for (;;) {
      const nl = buf.indexOf(10);
      if (nl === -1) {
        size += buf.length;
        if (size > max) return fail();
        if (buf.length) chunks.push(buf);
        return;
      }
      const part = buf.subarray(0, nl);
      if (size + part.length > max) return fail();
      chunks.push(part);
      let line = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      chunks = [];
      size = 0;
      if (line.length && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
      if (line.length) opts.onLine(line);
      if (failed) return;
      buf = buf.subarray(nl + 1);
      if (++handled >= LINES_PER_TURN && buf.length) {
        const rest = buf;
        yielding = true;
        stream.pause();
        setImmediate(() => {
          yielding = false;
          if (failed) return;
          onData(rest);
          if (yielding || failed) return;
          if (endPending) opts.onEnd?.();
          else stream.resume();
        });
        return;
      }
    }
  };
  const fail = () => {
    chunks = [];
    detach();
    opts.onError(new FrameTooLargeError(max));
  };
  const onEnd = () => {
    // The end must not overtake lines still waiting for their turn.
    if (yielding) endPending = true;
    else opts.onEnd?.();
  };
  const detach = () => {
    failed = true;
    stream.off('data', onData);
    stream.off('end', onEnd);
    // Paused mid-chunk: let the stream flow again so its writer never blocks on a full pipe.
    if (yielding) stream.resume();
  };
  stream.on('data', onData);
  stream.once('end', onEnd);
  return detach;
}

/** Reads JSON values one per line; a line that is not JSON is reported through onMalformed and skipped. */
export function readJsonLines(
  stream: Readable,
  opts: Omit<LineReaderOptions, 'onLine'> & {
    onMessage: (msg: unknown, raw: Buffer) => void;
    onMalformed?: (raw: Buffer, err: Error) => void;
  },
): () => void {
  return readLines(stream, {
    ...opts,
    onLine: (line) => {
      let msg: unknown;
      try {
        msg = JSON.parse(line.toString('utf8'));
      } catch (err) {
        opts.onMalformed?.(line, err as Error);
        return;
      }
      opts.onMessage(msg, line);
    },
  });
}

export function writeJsonLine(stream: Writable, msg: unknown): boolean {
  return stream.write(`${JSON.stringify(msg)}\n`);
}
