// Results and commentary are paged in Unicode code points (rules: paged-results, commentary-only).

export const RESULT_PAGE_CODE_POINTS = 32_768;
// The result cap is part of the agent seam (adapters drop an oversized answer too): declared there, used here.
export { MAX_RESULT_BYTES } from '../agents/agent.ts';
/** Commentary is kept as a tail of this many UTF-8 bytes (rule: commentary-only). */
export const COMMENTARY_TAIL_BYTES = 1024 * 1024;

export interface TextPage {
  text: string;
  offset: number;
  nextOffset: number;
  done: boolean;
  /** Total length in code points. */
  total: number;
}

/** Code points in `text`, counted as `Array.from` would (a lone surrogate is one), without building an array. */
export function countCodePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** The UTF-16 index of code point `points` in `text`, walking from UTF-16 index `from` (itself code point 0). */
function indexAfter(text: string, points: number, from = 0): number {
  let i = from;
  for (let p = 0; p < points && i < text.length; p++) {
    const c = text.charCodeAt(i);
    const d = text.charCodeAt(i + 1);
    i += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
  }
  return i;
}

/** `text` cut into pieces of `size` code points (the last may be shorter), never inside a surrogate pair. */
export function splitCodePoints(text: string, size: number): string[] {
  const out: string[] = [];
  for (let from = 0; from < text.length; ) {
    const to = indexAfter(text, size, from);
    out.push(text.slice(from, to));
    from = to;
  }
  return out;
}

/**
 * A page of `text` starting at code point `offset`. Offsets past the end give an empty, done page. `total` (the text's
 * length in code points) may be passed when it is known already; when it equals the UTF-16 length there are no
 * surrogate pairs and code point offsets are string indexes, so a page costs only its own size.
 */
export function pageText(
  text: string,
  offset = 0,
  pageSize = RESULT_PAGE_CODE_POINTS,
  total = countCodePoints(text),
): TextPage {
  const start = Math.min(Math.max(0, offset), total);
  const end = Math.min(start + pageSize, total);
  let from = start;
  let to = end;
  if (total !== text.length) {
    from = indexAfter(text, start);
    to = indexAfter(text, end - start, from);
  }
  return { text: text.slice(from, to), offset: start, nextOffset: end, done: end >= total, total };
}

export interface TailPage extends TextPage {
  /** Code points dropped from the front because the tail is bounded; offsets are absolute and never reused. */
  truncatedBefore: number;
}

/**
 * Pages a bounded tail whose absolute start is `droppedBefore` code points into the stream. An `offset` that points into
 * the dropped part is moved up to the first kept code point, and `truncatedBefore` tells the caller so.
 */
export function pageTail(
  tail: string,
  droppedBefore: number,
  offset = 0,
  pageSize = RESULT_PAGE_CODE_POINTS,
  tailCodePoints = countCodePoints(tail),
): TailPage {
  const rel = Math.max(0, offset - droppedBefore);
  const page = pageText(tail, rel, pageSize, tailCodePoints);
  return {
    ...page,
    offset: page.offset + droppedBefore,
    nextOffset: page.nextOffset + droppedBefore,
    total: page.total + droppedBefore,
    truncatedBefore: droppedBefore,
  };
}

/** Keeps at most `maxBytes` UTF-8 bytes from the end, cut at a code point boundary; returns dropped code points too. */
export function keepTail(text: string, maxBytes = COMMENTARY_TAIL_BYTES): { tail: string; droppedCodePoints: number } {
  if (Buffer.byteLength(text) <= maxBytes) return { tail: text, droppedCodePoints: 0 };
  const points = Array.from(text);
  let bytes = 0;
  let i = points.length;
  while (i > 0) {
    const b = Buffer.byteLength(points[i - 1]!);
    if (bytes + b > maxBytes) break;
    bytes += b;
    i--;
  }
  return { tail: points.slice(i).join(''), droppedCodePoints: i };
}

/** Small appends are joined into the newest chunk up to this size; a larger one is a chunk of its own. */
const TAIL_CHUNK_BYTES = 16 * 1024;

/**
 * A bounded tail kept as appended chunks: an append costs its own size, and while the tail is over `maxBytes` its
 * oldest chunks are dropped whole (so it may hold up to one chunk less than the bound). Offsets stay absolute.
 */
export class TailBuffer {
  private readonly maxBytes: number;
  private chunks: { text: string; bytes: number; chars: number }[] = [];
  private bytes = 0;
  private chars = 0;
  /** Code points dropped from the front. */
  dropped = 0;

  constructor(maxBytes = COMMENTARY_TAIL_BYTES) {
    this.maxBytes = maxBytes;
  }

  /** Code points appended in all, dropped ones included. */
  get total(): number {
    return this.dropped + this.chars;
  }

  append(text: string): void {
    if (!text) return;
    let add = text;
    if (Buffer.byteLength(add) > this.maxBytes) {
      const cut = keepTail(add, this.maxBytes);
      add = cut.tail;
      this.dropped += cut.droppedCodePoints;
    }
    const bytes = Buffer.byteLength(add);
    const chars = countCodePoints(add);
    const last = this.chunks[this.chunks.length - 1];
    if (last && last.bytes + bytes <= TAIL_CHUNK_BYTES) {
      last.text += add;
      last.bytes += bytes;
      last.chars += chars;
    } else {
      this.chunks.push({ text: add, bytes, chars });
    }
    this.bytes += bytes;
    this.chars += chars;
    let drop = 0;
    while (this.bytes > this.maxBytes) {
      const oldest = this.chunks[drop++]!;
      this.bytes -= oldest.bytes;
      this.chars -= oldest.chars;
      this.dropped += oldest.chars;
    }
    if (drop) this.chunks = this.chunks.slice(drop);
  }

  /** A page of the tail with absolute offsets. */
  page(offset = 0, pageSize = RESULT_PAGE_CODE_POINTS): TailPage {
    return pageTail(this.chunks.map((c) => c.text).join(''), this.dropped, offset, pageSize, this.chars);
  }
}
