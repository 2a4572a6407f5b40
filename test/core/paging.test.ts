// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keepTail, pageTail, pageText, RESULT_PAGE_CODE_POINTS, TailBuffer } from '../../src/core/paging.ts';

test('pages split on code points, never inside a surrogate pair', () => {
  const text = '😀'.repeat(RESULT_PAGE_CODE_POINTS + 5);
  const first = pageText(text, 0);
  assert.equal(Array.from(first.text).length, RESULT_PAGE_CODE_POINTS);
  assert.equal(first.nextOffset, RESULT_PAGE_CODE_POINTS);
  assert.equal(first.done, false);
  const second = pageText(text, first.nextOffset);
  assert.equal(second.text, '😀'.repeat(5));
  assert.equal(second.done, true);
  assert.equal(first.text + second.text, text);
});

test('an offset past the end gives an empty done page', () => {
  assert.deepEqual(pageText('abc', 10), { text: '', offset: 3, nextOffset: 3, done: true, total: 3 });
});

test('a bounded tail keeps absolute offsets and reports what was dropped', () => {
  const { tail, droppedCodePoints } = keepTail('aé'.repeat(10), 9);
  assert.equal(Buffer.byteLength(tail) <= 9, true);
  const page = pageTail(tail, droppedCodePoints, 0);
  assert.equal(page.offset, droppedCodePoints);
  assert.equal(page.truncatedBefore, droppedCodePoints);
  assert.equal(page.total, 20);
});

test('a tail buffer drops whole chunks from the front past its cap and keeps offsets absolute', () => {
  const cap = 64 * 1024;
  const buffer = new TailBuffer(cap);
  let appended = '';
  for (let i = 0; i < 400; i++) {
    const piece = `${i}:${'é'.repeat(200)}😀\n`;
    appended += piece;
    buffer.append(piece);
  }
  const all = Array.from(appended);
  assert.equal(buffer.total, all.length);
  const page = buffer.page(0, all.length);
  assert.ok(Buffer.byteLength(page.text) <= cap && Buffer.byteLength(page.text) > cap / 2);
  assert.equal(page.text, all.slice(buffer.dropped).join(''), 'the kept tail is the end of what was appended');
  assert.equal(page.offset, buffer.dropped);
  assert.equal(page.total, all.length);
  const later = buffer.page(all.length - 5);
  assert.equal(later.text, all.slice(-5).join(''));

  buffer.append('z'.repeat(cap * 2));
  assert.equal(buffer.page(0, cap * 4).text, 'z'.repeat(cap));
  assert.equal(buffer.total, all.length + cap * 2);
});
