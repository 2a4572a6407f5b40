// The dashboard's server-sent event streams: a writer for one open stream, and the bounded set of open streams, each
// a held connection owned by the session that opened it, so a logout ends that session's streams and a stopping hub
// ends them all.
import type { ServerResponse } from 'node:http';

/** One open event stream. `signal` aborts when the browser goes away or the hub ends the stream. */
export class SseWriter {
  readonly signal: AbortSignal;
  readonly #res: ServerResponse;
  constructor(res: ServerResponse, signal: AbortSignal) {
    this.#res = res;
    this.signal = signal;
  }

  /** One event; with an id, a reconnecting browser sends it back as Last-Event-ID. Nothing once the stream is ended. */
  event(name: string, data: unknown, id?: number): void {
    if (this.signal.aborted) return;
    const head = id === undefined ? '' : `id: ${id}\n`;
    this.#res.write(`${head}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** A comment line: ignored by the browser, it keeps the connection visibly alive. */
  comment(text: string): void {
    if (this.signal.aborted) return;
    this.#res.write(`: ${text}\n\n`);
  }
}

export class SseStreams {
  readonly #max: number;
  /** Each open stream's controller, with the key of the session that owns it. */
  readonly #open = new Map<AbortController, string>();
  constructor(max: number) {
    this.#max = max;
  }

  /**
   * Starts a stream on `res` for the session `owner` and runs `follow` with its writer until `follow` returns or
   * throws; the response then ends. False, with nothing written, while `max` streams are already open.
   */
  async serve(res: ServerResponse, owner: string, follow: (out: SseWriter) => Promise<void>): Promise<boolean> {
    if (this.#open.size >= this.#max) return false;
    const gone = new AbortController();
    this.#open.set(gone, owner);
    res.once('close', () => gone.abort());
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    const out = new SseWriter(res, gone.signal);
    out.comment('following');
    try {
      await follow(out);
    } finally {
      this.#open.delete(gone);
      res.end();
    }
    return true;
  }

  /** Ends the open streams of one session (it logged out): nothing more is written to them. */
  closeOwnedBy(owner: string): void {
    for (const [s, o] of this.#open) if (o === owner) s.abort();
  }

  /** Ends every open stream (the hub is stopping). */
  closeAll(): void {
    for (const s of this.#open.keys()) s.abort();
  }
}
