// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The dashboard's one escaping template (rule: dashboard): every interpolation is escaped unless it is a fragment the
// template itself built; lists join; nothing-values vanish. And the event text every kind gets, known or not. The browser
// test covers the pages built with them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TaskEvent } from '../../../../src/core/task.ts';
import { eventText, oneLine } from '../../../../src/faces/hub/ui/format.ts';
import { html, SafeHtml, trusted } from '../../../../src/faces/hub/ui/html.ts';

test('html escapes text in content and in quoted attributes', () => {
  const evil = `<img src=x onerror="alert('x')">&`;
  assert.equal(
    String(html`<p title="${evil}">${evil}</p>`),
    '<p title="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;">' +
      '&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</p>',
  );
});

test('html keeps fragments it built, joins lists, and drops null, undefined and booleans', () => {
  const items = ['<a>', 'b'].map((s) => html`<li>${s}</li>`);
  assert.equal(String(html`<ul>${items}</ul>`), '<ul><li>&lt;a&gt;</li><li>b</li></ul>');
  assert.equal(String(html`${null}${undefined}${false}${true}${0}${''}`), '0');
  const none = (q: string) => html`${q && html`<b>${q}</b>`}`;
  assert.equal(String(none('')), '');
});

test('only html and trusted make markup: a look-alike object or a string is escaped', () => {
  const fake = { toString: () => '<b>fake</b>' } as unknown as string;
  assert.equal(String(html`${fake}`), '&lt;b&gt;fake&lt;/b&gt;');
  assert.equal(String(html`${trusted('<b>ok</b>')}`), '<b>ok</b>');
  assert.ok(html`x` instanceof SafeHtml);
});

test('events of kinds added later render generically: their text, else their fields; message text or its length', () => {
  const base = { seq: 7, time: '2026-12-03T10:00:00.000Z', round: 2 };
  assert.equal(eventText({ ...base, kind: 'message', text: 'the answer <b>so far</b>' }), 'the answer <b>so far</b>');
  // A status page's message event has its length instead of its text (rule: event-pages).
  assert.equal(
    eventText({ ...base, kind: 'message', chars: 8192, capped: true }),
    '(8192 characters of the answer) capped',
  );
  // Kinds this version does not know (an older or newer store's) show their fields; usage shows its fields too.
  const stored = (ev: Record<string, unknown>) => ({ ...base, ...ev }) as unknown as TaskEvent;
  assert.equal(eventText(stored({ kind: 'future', bytes: 3, ok: true })), 'bytes=3 ok=true');
  assert.equal(eventText({ ...base, kind: 'cancel_requested' }), '');
  assert.equal(eventText({ ...base, kind: 'lifecycle', state: 'queued', by: 'operator' }), 'queued by the operator');
  assert.equal(eventText({ ...base, kind: 'lifecycle', state: 'queued' }), 'queued');
  assert.equal(eventText(stored({ kind: 'usage', text: 'x', tokens: 5 })), 'text=x tokens=5');
});

test('a shortened prompt line folds whitespace and cuts by code points, never inside a surrogate pair', () => {
  assert.equal(oneLine('  review\n\tthis  ', 120), 'review this');
  // 119 ASCII characters then an astral one: the cut at 120 keeps the whole emoji, the old UTF-16 cut split it.
  const prompt = `${'a'.repeat(119)}🦀🦀`;
  const line = oneLine(prompt, 120);
  assert.equal(line, `${'a'.repeat(119)}🦀…`);
  assert.ok(line.isWellFormed());
  assert.equal(oneLine('🦀'.repeat(120), 120), '🦀'.repeat(120));
});
