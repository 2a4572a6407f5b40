// The serving commands (src/lib/json-stringify.ts) turn on V8's newer JSON.stringify on Node 24, where it is behind a
// flag. These tests run
// both serializers in this process on baton's own wire shapes and on the cases where a serializer's shortcut could go
// wrong, and require the same text (or the same error) from each: a Node whose fast path differs fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { pageText, RESULT_PAGE_CODE_POINTS } from '../../src/core/paging.ts';
import { jsonResult } from '../../src/faces/mcp-tools.ts';

const onNode24 = Number(process.versions.node.split('.')[0]) === 24;

function serialize(fast: boolean, make: () => unknown, args: unknown[] = []): string {
  setFlagsFromString(fast ? '--json-stringify-fast-path' : '--no-json-stringify-fast-path');
  try {
    return JSON.stringify(make(), ...(args as [])) ?? 'undefined';
  } catch (err) {
    return `threw ${(err as Error).constructor.name}: ${(err as Error).message}`;
  } finally {
    setFlagsFromString('--no-json-stringify-fast-path');
  }
}

function assertSame(name: string, make: () => unknown, args: unknown[] = []): void {
  const ordinary = serialize(false, make, args);
  assert.equal(serialize(true, make, args), ordinary, `${name}: the fast serializer wrote something else`);
  // Twice: V8 may take a different route once it has seen an object's shape.
  assert.equal(serialize(true, make, args), ordinary, `${name}: the fast serializer wrote something else the 2nd time`);
}

test('on Node 24 the flag switches to a different serializer (so the comparisons below compare two)', {
  skip: !onNode24 && 'the flag is set on Node 24 only',
}, () => {
  let deep: Record<string, unknown> = {};
  for (let i = 0; i < 20_000; i++) deep = { d: deep };
  assert.match(
    serialize(false, () => deep),
    /^threw RangeError/,
  );
  assert.equal(serialize(true, () => deep).length, 20_000 * 6 + 2);
});

const TEXTS: Record<string, string> = {
  ascii: 'the quick brown fox jumps over the lazy dog 0123456789',
  lines: 'line one\nline "two"\ttabbed\r\nback\\slash /slash\u0000\u001f\u007f',
  latin1: 'café über naïve ÿ',
  twoByte: 'Пример ответа агента — «кавычки» € 中文',
  emoji: 'done 😀👍🏽 ok',
  loneSurrogates: 'a\ud800b\udc00c\ud83d',
  separators: 'x\u2028y\u2029z',
  html: '</script><!-- & -->',
};

test('a result page, as agent_result sends it, serializes the same', () => {
  for (const [name, sample] of Object.entries(TEXTS)) {
    const text = sample.repeat(Math.ceil((RESULT_PAGE_CODE_POINTS * 1.5) / sample.length));
    for (const offset of [0, RESULT_PAGE_CODE_POINTS]) {
      const page = () => ({
        taskId: 't_0123456789abcdef',
        state: 'succeeded',
        round: 1,
        available: true,
        ...pageText(text, offset),
      });
      assertSame(`${name} page at ${offset}`, () => ({ jsonrpc: '2.0', id: 41, result: jsonResult(page()) }));
      // The same text as a sliced and as a concatenated string: V8 keeps those apart from flat ones.
      assertSame(`${name} slice`, () => ({ text: text.slice(3, 5000) }));
      assertSame(`${name} concatenation`, () => ({ text: `${sample}${text.slice(0, 3000)}${sample}` }));
    }
  }
});

test("baton's other messages serialize the same", () => {
  const at = '2026-12-04T20:00:00.000Z';
  const shapes: Record<string, () => unknown> = {
    acpPrompt: () => ({
      jsonrpc: '2.0',
      id: 7,
      method: 'session/prompt',
      params: { sessionId: 'sess_1', prompt: [{ type: 'text', text: TEXTS.lines }] },
    }),
    acpUpdate: () => ({
      jsonrpc: '2.0',
      method: 'session/update',
      params: {
        sessionId: 'sess_1',
        update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: TEXTS.emoji } },
      },
    }),
    waitAnswer: () =>
      jsonResult({
        taskId: 't_1',
        state: 'running',
        round: 2,
        events: [
          { seq: 1, kind: 'state', state: 'running', at },
          { seq: 2, kind: 'message', text: TEXTS.twoByte, chars: 30, at },
          { seq: 3, kind: 'snapshot', before: { branch: 'main', files: [] }, after: null, at },
        ],
        nextCursor: 3,
        hasMore: false,
        result: { chars: 0, preview: '', complete: true },
      }),
    error: () => ({ jsonrpc: '2.0', id: null, error: { code: -32602, message: 'taskId: required', data: undefined } }),
    numbers: () => ({ n: [0, -0, 1, -1, 2 ** 31, 2 ** 53, 1e21, 1e-7, 0.1, 5e-324, Number.NaN, Infinity, -Infinity] }),
    doubles: () => [1.5, -0, 2.25],
    skipped: () => ({ a: undefined, f: () => 1, s: Symbol('s'), kept: [undefined, () => 1, Symbol('s')] }),
  };
  for (const [name, make] of Object.entries(shapes)) assertSame(name, make);
});

test('the cases a shortcut could get wrong serialize the same', () => {
  const cases: Record<string, () => unknown> = {
    nonEnumerableToJSON: () => {
      const o = { uri: 'u', cid: 'c', text: 't' };
      Object.defineProperty(o, 'toJSON', { value: () => ({ uri: 'u' }), enumerable: false });
      return o;
    },
    frozenWithToJSON: () => Object.freeze(Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 'own' })),
    inheritedToJSON: () => Object.create({ toJSON: () => 'inherited' }),
    arrayPrototypeToJSON: () =>
      Object.setPrototypeOf([1, 2, 3], Object.assign(Object.create(Array.prototype), { toJSON: () => 'array' })),
    toJSONWithKey: () => ({ inner: { toJSON: (key: string) => `key:${key}` } }),
    dateAndInvalidDate: () => [new Date(0), new Date(Number.NaN)],
    datePrototype: () => Date.prototype,
    boxed: () => [new String('s"x'), new Number(3), new Boolean(false), Object.assign(new String('p'), { x: 1 })],
    boxedOverrides: () => {
      const n = new Number(5);
      n.valueOf = () => 42;
      const s = new String('s');
      s.toString = () => 'over';
      return [n, s];
    },
    getters: () => ({
      get g() {
        return 'getter';
      },
    }),
    mutatingGetter: () => {
      const o: Record<string, unknown> = {
        a: 1,
        get b() {
          delete o.c;
          o.d = 4;
          return 2;
        },
        c: 3,
      };
      return o;
    },
    mutatingToJSONInArray: () => {
      const a: unknown[] = [1];
      const grow = () => {
        a.push(9);
        return 'x';
      };
      a.push({ toJSON: grow }, 3);
      return a;
    },
    holeyArrays: () => {
      const a = [1, 2, 3, 4];
      delete a[2];
      const b: unknown[] = new Array(3);
      b[0] = 0;
      b[2] = 2;
      return [a, b];
    },
    arrayExtraProps: () => Object.assign([1, 2], { extra: 1 }),
    getterElement: () => Object.defineProperty([1, 2], 0, { get: () => 'g', enumerable: true }),
    proxy: () => new Proxy({ a: 1 }, { get: (t, k) => (k === 'a' ? 2 : Reflect.get(t, k)) }),
    keyOrder: () => ({ b: 1, 2: 'two', a: 2, 1: 'one', '-1': 'neg', '01': 'lead', 4294967295: 'max' }),
    dictionaryMode: () => {
      const o: Record<string, number> = {};
      for (let i = 0; i < 2000; i++) o[`k${i}`] = i;
      for (let i = 0; i < 2000; i += 3) delete o[`k${i}`];
      return o;
    },
    hiddenAndSymbolKeys: () =>
      Object.defineProperties({ a: 1, [Symbol('s')]: 2 }, { hidden: { value: 3, enumerable: false } }),
    nullPrototype: () => Object.assign(Object.create(null), { a: 1 }),
    containers: () => ({ m: new Map([[1, 2]]), s: new Set([1]), t: new Float64Array([1.5, -0]), e: new Error('x') }),
    cycle: () => {
      const o: Record<string, unknown> = { a: { b: [] } };
      ((o.a as Record<string, unknown[]>).b as unknown[]).push(o);
      return o;
    },
    bigint: () => ({ n: 10n }),
  };
  for (const [name, make] of Object.entries(cases)) assertSame(name, make);
  // With a replacer or an indent, and a toJSON on a shared prototype.
  const sample = () => ({ a: 1, b: [1, 'two', { c: TEXTS.lines }], d: null });
  assertSame('replacer function', sample, [(_k: string, v: unknown) => (typeof v === 'number' ? v + 1 : v)]);
  assertSame('replacer list', sample, [['a', 'b']]);
  assertSame('indent', sample, [null, 2]);
  assertSame('indent string', sample, [null, '\t']);
  const arrayPrototype = Array.prototype as unknown as Record<number, unknown>;
  arrayPrototype[1] = 'inherited element';
  try {
    assertSame('a hole showing an inherited element', () => {
      const b: unknown[] = new Array(3);
      b[0] = 0;
      return b;
    });
  } finally {
    delete arrayPrototype[1];
  }
  const objectPrototype = Object.prototype as { toJSON?: () => string };
  objectPrototype.toJSON = () => 'from Object.prototype';
  try {
    assertSame('Object.prototype.toJSON', sample);
  } finally {
    delete objectPrototype.toJSON;
  }
});

test('random documents serialize the same', () => {
  // A fixed seed: the same 3,000 documents every run.
  let seed = 13;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const pieces = Object.values(TEXTS);
  const value = (depth: number): unknown => {
    const k = random();
    if (depth > 5 || k < 0.3)
      return pick<() => unknown>([
        () => pick(pieces).slice(Math.floor(random() * 5)),
        () => pick([0, -0, 1.5, 1e21, Number.NaN, 2 ** 40, Math.floor(random() * 1000)]),
        () => pick([true, false, null, undefined]),
      ])();
    if (k < 0.55) return Array.from({ length: Math.floor(random() * 5) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 6); i > 0; i--)
      o[pick(['a', 'b', '1', 'é', 'k"q', 'text', 'seq'])] = value(depth + 1);
    return o;
  };
  for (let i = 0; i < 3000; i++) {
    const doc = value(0);
    assertSame(`document ${i}`, () => doc);
  }
});
