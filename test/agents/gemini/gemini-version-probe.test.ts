// Version probes of Gemini CLI (the `gemini` kind's and the ACP preset's) ask it not to relaunch itself: Gemini CLI
// otherwise starts a second Node process with a bigger heap before anything else, two start-ups of its large bundle
// for a `--version`. A stand-in binary named `gemini` (not the real CLI: what is checked is the environment the probe
// gives it) records its argv and environment and prints a version.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { AcpAgent } from '../../../src/agents/acp/agent.ts';
import { GeminiAgent } from '../../../src/agents/gemini/agent.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { tempDir } from '../../support/tmp.ts';

function standIn(t: TestContext): { gemini: string; seen: () => { argv: string[]; env: Record<string, string> } } {
  const dir = tempDir(t, 'baton-gemini-probe-');
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const gemini = join(bin, 'gemini');
  const seen = join(dir, 'seen.json');
  writeFileSync(
    gemini,
    `#!${process.execPath}\nrequire('node:fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ argv: process.argv.slice(2), env: process.env }));\nconsole.log('0.99.1');\n`,
  );
  chmodSync(gemini, 0o700);
  return { gemini, seen: () => JSON.parse(readFileSync(seen, 'utf8')) };
}

test('the gemini kind probes `gemini --version` with GEMINI_CLI_NO_RELAUNCH set', async (t) => {
  const { gemini, seen } = standIn(t);
  const agent = new GeminiAgent('g', { command: [gemini], homeDir: join(tempDir(t), 'home'), env: process.env });
  const probe = await agent.probe();
  assert.equal(probe.available, true, probe.detail);
  assert.equal(probe.version, '0.99.1');
  assert.deepEqual(seen().argv, ['--version']);
  assert.equal(seen().env.GEMINI_CLI_NO_RELAUNCH, 'true');
});

test('the ACP gemini preset probes `gemini --version` with GEMINI_CLI_NO_RELAUNCH set', async (t) => {
  const { gemini, seen } = standIn(t);
  const agent = new AcpAgent('g', { command: [gemini, '--acp'] }, { logger: silentLogger });
  const probe = await agent.probe();
  assert.equal(probe.available, true, probe.detail);
  assert.equal(probe.version, '0.99.1');
  assert.deepEqual(seen().argv, ['--version']);
  assert.equal(seen().env.GEMINI_CLI_NO_RELAUNCH, 'true');
});
