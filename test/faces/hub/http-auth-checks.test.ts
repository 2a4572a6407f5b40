// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// The hub makes its own Host, Origin and bearer checks (faces/hub/http-auth.ts) where the MCP SDK has helpers for the
// same: validateHostHeader, validateOriginHeader and verifyBearerToken. This pins the copy: every input below goes to
// both, and the table says what each answers. Where they differ the hub is the stricter one, for the reason given; an
// SDK upgrade that changes its answers fails here instead of drifting unnoticed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AuthInfo,
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader,
  verifyBearerToken,
} from '@modelcontextprotocol/server';
import { bearerToken, loopbackChecks } from '../../../src/faces/hub/http-auth.ts';

const PORT = 4242;
const LISTEN_HOST = '127.0.0.1';
const checks = loopbackChecks(LISTEN_HOST, PORT);
/** The SDK's allow-list for the same hub: its loopback names and the listen host, by name only. */
const names = [...new Set([...localhostAllowedHostnames(), LISTEN_HOST])];

/** An input, what the hub answers, what the SDK answers, and why they differ when they do. */
type Row<T> = [input: string | undefined, hub: T, sdk: T, why?: string];

const HOSTS: Row<boolean>[] = [
  ['127.0.0.1:4242', true, true],
  ['localhost:4242', true, true],
  ['[::1]:4242', true, true],
  [undefined, false, false],
  ['', false, false],
  ['evil.example:4242', false, false],
  ['localhost.evil.example:4242', false, false],
  ['127.0.0.1.nip.io:4242', false, false],
  ['localhost:4242:1', false, false],
  ['localhost:4243', false, true, 'another port is another service; the hub names its own'],
  ['localhost', false, true, 'no port: a browser always sends the hub’s'],
  ['[::1]', false, true, 'no port: a browser always sends the hub’s'],
  ['LOCALHOST:4242', false, true, 'the hub compares exactly what browsers send (lower case)'],
  ['0x7f.1:4242', false, true, 'a spelling of 127.0.0.1 no browser sends for the hub'],
  ['user@localhost:4242', false, true, 'not a Host value at all; the SDK parses it as a URL'],
  ['127.0.0.1:4242/x', false, true, 'not a Host value at all; the SDK parses it as a URL'],
];

const ORIGINS: Row<boolean>[] = [
  [undefined, true, true],
  ['http://127.0.0.1:4242', true, true],
  ['http://localhost:4242', true, true],
  ['http://[::1]:4242', true, true],
  ['http://evil.example', false, false],
  ['http://localhost.evil.example:4242', false, false],
  ['null', false, false],
  ['moz-extension://abcdef', false, false],
  ['', false, true, 'a present Origin must be the hub’s own; only an absent one means "not a browser"'],
  ['https://localhost:4242', false, true, 'the hub serves http only, so no page of its own has an https origin'],
  ['http://localhost:4243', false, true, 'a page on another port is another site'],
  ['http://localhost', false, true, 'a page on another port is another site'],
  ['http://LOCALHOST:4242', false, true, 'browsers send origins in lower case'],
  ['http://localhost:4242/', false, true, 'browsers send origins without a path'],
];

/** The token each side finds in an Authorization header, or null when it finds none. */
const BEARERS: Row<string | null>[] = [
  [undefined, null, null],
  ['', null, null],
  ['Bearer abc', 'abc', 'abc'],
  ['bearer abc', 'abc', 'abc'],
  ['BEARER abc', 'abc', 'abc'],
  ['Bearer', null, null],
  ['Bearer ', null, null],
  ['Bearer  abc', null, null],
  ['Bearer\tabc', null, null],
  [' Bearer abc', null, null],
  ['Basic abc', null, null],
  ['Bearer abc def', null, 'abc', 'a header that is not exactly one token is refused, not cut'],
  ['Bearer abc ', null, 'abc', 'a header that is not exactly one token is refused, not cut'],
];

function check<T>(rows: Row<T>[], hub: (input: string | undefined) => T, sdk: (input: string | undefined) => T) {
  for (const [input, hubAnswer, sdkAnswer, why] of rows) {
    const label = JSON.stringify(input);
    assert.deepEqual(hub(input), hubAnswer, `the hub's answer to ${label}`);
    assert.deepEqual(sdk(input), sdkAnswer, `the SDK's answer to ${label}`);
    if (hubAnswer === sdkAnswer) assert.equal(why, undefined, `${label}: no reason needed where both agree`);
    else {
      assert.ok(why, `${label}: the two differ, so the table says why`);
      assert.ok(hubAnswer === false || hubAnswer === null, `${label}: where the two differ, the hub is the stricter`);
    }
  }
}

test('Host: the hub accepts only its own loopback names with its port; the SDK agrees or is the looser', () => {
  check(HOSTS, checks.hostAllowed, (h) => validateHostHeader(h, names).ok);
});

test('Origin: the hub accepts none or its own http origin; the SDK agrees or is the looser', () => {
  check(ORIGINS, checks.originAllowed, (o) => validateOriginHeader(o, names).ok);
});

test('Authorization: the hub and the SDK find the same bearer token, or the hub refuses a header the SDK would cut', async () => {
  const verifier = {
    verifyAccessToken: async (token: string): Promise<AuthInfo> => ({
      token,
      clientId: 'pin',
      scopes: [],
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    }),
  };
  const sdk = new Map<string | undefined, string | null>();
  for (const [input] of BEARERS) {
    sdk.set(
      input,
      await verifyBearerToken(input, { verifier }).then(
        (a) => a.token,
        () => null,
      ),
    );
  }
  check(
    BEARERS,
    (h) => {
      const parsed = bearerToken(h);
      return 'token' in parsed ? parsed.token : null;
    },
    (h) => sdk.get(h) ?? null,
  );
});
