// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests (pure functions, no processes) for the inert acquire record and command parsing of the browser provider.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCommandText } from '../../../../src/faces/provider/browser/downstream.ts';
import {
  LeaseRecordError,
  parseLeaseCommand,
  parseLeaseRecord,
} from '../../../../src/faces/provider/browser/lease-helper.ts';

const record = (port: number, extra = '') =>
  Buffer.from(
    `record_version=1\nstate=ready\ngeneration=g-1\nlocal_cdp_port=${port}\nbrowser_url=http://127.0.0.1:${port}\n${extra}`,
  );

test('a well-formed acquire record is read as data', () => {
  assert.deepEqual(parseLeaseRecord(record(9333), 9333), {
    generation: 'g-1',
    localCdpPort: 9333,
    browserUrl: 'http://127.0.0.1:9333',
  });
});

test('anything beyond the five keys, or off the handed-over port, is refused', () => {
  const refused: [string, Buffer][] = [
    ['unknown key', record(9333, 'exec=rm -rf /\n')],
    ['duplicate key', record(9333, 'state=ready\n')],
    ['other port', record(9444)],
    ['missing key', Buffer.from('record_version=1\nstate=ready\ngeneration=g\nlocal_cdp_port=9333\n')],
    ['not ready', Buffer.from(record(9333).toString().replace('state=ready', 'state=starting'))],
    ['version 2', Buffer.from(record(9333).toString().replace('record_version=1', 'record_version=2'))],
    ['non-loopback url', Buffer.from(record(9333).toString().replace('127.0.0.1', 'example.com'))],
    ['not key=value', record(9333, 'hello\n')],
    ['control chars in generation', Buffer.from(record(9333).toString().replace('g-1', 'g 1'))],
    ['invalid UTF-8', Buffer.concat([record(9333), Buffer.from([0xff, 0xfe])])],
  ];
  for (const [why, stdout] of refused) {
    assert.throws(() => parseLeaseRecord(stdout, 9333), LeaseRecordError, why);
  }
});

test('commands: lease helper is JSON argv only; browser command is JSON argv or a plain command line', () => {
  assert.deepEqual(parseLeaseCommand('["bin/box","--browser"]'), ['bin/box', '--browser']);
  assert.throws(() => parseLeaseCommand('bin/box --browser'), /JSON argv array/);
  assert.throws(() => parseLeaseCommand('[]'), /non-empty/);
  assert.deepEqual(parseCommandText('["/opt/cdm", "--x"]', 'flag'), ['/opt/cdm', '--x']);
  assert.deepEqual(parseCommandText('  /opt/cdm   --x ', 'flag'), ['/opt/cdm', '--x']);
  assert.throws(() => parseCommandText('[1]', 'flag'), /JSON array of non-empty strings/);
});
