// SE-1: the credential shapes redact() masks, as one table of hits (the secret part must go, the label may stay) and
// near-misses (ordinary text that must come through unchanged), plus registered secrets and the attach credentials
// baton reads from its environment.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { REDACTED, redact, redactDeep, redactedError, registerSecret, safeText } from '../../src/lib/redact.ts';
import { STATUS_MAX_CODE_POINTS, statusLine } from '../../src/lib/text.ts';

const ANT = 'sk-ant-api03-Zx9QwErTy12345UiOpAsDfGh_jKlZxCvBnM-67890qwerty';
const OPENAI = 'sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
const OPENAI_OLD = 'sk-4f9XbQ2mN7pL1kR8sT3vW6yZ0aC5dE9g';
const GOOGLE = 'AIzaSyD3x4mPl3K3y-0123456789abcdefGHIJK';
const JWTISH = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc123';

// [input, the secret that must be gone, the text that must remain]
const HITS: Array<[string, string, string]> = [
  [`key ${ANT} rejected`, ANT, 'key [redacted] rejected'],
  [`OPENAI said: invalid key ${OPENAI}.`, OPENAI, `OPENAI said: invalid key ${REDACTED}.`],
  [`(${OPENAI_OLD})`, OPENAI_OLD, `(${REDACTED})`],
  [`"apiKey":"${GOOGLE}"`, GOOGLE, `"apiKey":"${REDACTED}"`],
  [`Authorization: Bearer ${JWTISH}`, JWTISH, `Authorization: Bearer ${REDACTED}`],
  ['authorization: basic dXNlcjpwYXNz', 'dXNlcjpwYXNz', `authorization: basic ${REDACTED}`],
  ['{"Authorization":"Token abc123def"}', 'abc123def', `{"Authorization":"Token ${REDACTED}"}`],
  [`curl -H 'bearer ${JWTISH}'`, JWTISH, `curl -H 'bearer ${REDACTED}'`],
  ['x-api-key: k3y-0123456789', 'k3y-0123456789', `x-api-key: ${REDACTED}`],
  ['x-goog-api-key="abcdefgh1234"', 'abcdefgh1234', `x-goog-api-key="${REDACTED}"`],
  ['OPENAI_API_KEY=whatever-it-is here', 'whatever-it-is', `OPENAI_API_KEY=${REDACTED} here`],
  ['GH_TOKEN = ghp_abc123', 'ghp_abc123', `GH_TOKEN = ${REDACTED}`],
  ['https://user:hunter22@example.com/x', 'hunter22', `https://user:${REDACTED}@example.com/x`],
  [`Bearer ${ANT}`, ANT, `Bearer ${REDACTED}`],
];

const NEAR_MISSES = [
  'sk-learn is a library',
  'sk-learn-compatible-estimators-for-you',
  'the task-0123456789012345678901 finished',
  'risk-0123456789012345678901-assessment',
  'sk-short123',
  'AIzaShort123',
  'Bearer token',
  'bearer of bad news',
  'basic internationalization',
  'Authorization: required',
  'Authorization header missing',
  'an api key is needed',
  'https://example.com/a:b@c',
  'tokens=3 passwords are rotated',
];

test('credential shapes: every hit loses its secret and keeps its label', () => {
  for (const [input, secret, expected] of HITS) {
    const out = redact(input);
    assert.equal(out.includes(secret), false, `${input} → ${out}`);
    assert.equal(out, expected, input);
  }
});

test('credential shapes: ordinary text that only looks close comes through unchanged', () => {
  for (const text of NEAR_MISSES) assert.equal(redact(text), text);
});

test('registered secrets go everywhere: text, errors, nested values, agent text', () => {
  const token = 'caller-token-7f3a9c1e5b';
  registerSecret(token);
  registerSecret('short'); // below the minimum length: never registered, so ordinary words are safe
  assert.equal(redact(`use ${token} twice: ${token}`), `use ${REDACTED} twice: ${REDACTED}`);
  assert.equal(redact('a short word'), 'a short word');
  assert.equal(redactedError(new Error(`bad ${token}`)).message, `bad ${REDACTED}`);
  assert.deepEqual(redactDeep({ a: [`x ${ANT}`], b: { c: token }, n: 1 }), {
    a: [`x ${REDACTED}`],
    b: { c: REDACTED },
    n: 1,
  });
  assert.equal(safeText(`\u001b[31mfailed\u001b[0m:\n ${OPENAI}`, 100, { oneLine: true }), `failed: ${REDACTED}`);
});

test('the attach credentials in baton’s environment are secrets from the start', () => {
  const script = `
    import { redact } from ${JSON.stringify(new URL('../../src/lib/redact.ts', import.meta.url).href)};
    process.stdout.write(redact('pw=opencode-pass-1 token=codex-remote-2'));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, OPENCODE_SERVER_PASSWORD: 'opencode-pass-1', CODEX_REMOTE_TOKEN: 'codex-remote-2' },
    encoding: 'utf8',
  });
  assert.equal(out, `pw=${REDACTED} token=${REDACTED}`);
});

test('a status line is redacted before it is cut: no secret shows its first part across the cut', () => {
  const token = 'straddling-token-0123456789abcdef0123456789';
  registerSecret(token);
  for (const cut of [5, 20, 30]) {
    const text = `${'x'.repeat(STATUS_MAX_CODE_POINTS - cut)} ${token} and ${ANT}`;
    const line = statusLine(text);
    assert.equal(Array.from(line).length <= STATUS_MAX_CODE_POINTS, true);
    assert.equal(line.includes(token.slice(0, 4)), false, line);
  }
  assert.equal(statusLine(`plan:\n\u001b[1m use ${ANT}\u001b[0m`), `plan: use ${REDACTED}`);
});

test('hostile shapes: runs of millions of characters neither overflow nor stall the redactor', () => {
  // An agent chooses this text; a quadratic pattern would hang here and a `{20,}` quantifier would throw RangeError.
  const run = 'sk-'.repeat(1_000_000);
  assert.equal(redact(run), run, 'no digit: not a key');
  assert.equal(redact(`k ${'sk-'}${'a1'.repeat(2_000_000)}`), `k ${REDACTED}`);
  assert.equal(redact(`bearer ${'a1'.repeat(2_000_000)}`), `bearer ${REDACTED}`);
  assert.equal(redact(`AIza${'b'.repeat(4_000_000)} end`), `${REDACTED} end`);
  assert.equal(redact(`//user:${'p'.repeat(4_000_000)} no at`), `//user:${'p'.repeat(4_000_000)} no at`);
});
