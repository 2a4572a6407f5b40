// The real Claude Code and Gemini CLI binaries with a shimmed version: each runs behind a small script named as the
// agent's command that answers `--version` (or, for ACP, initialize's agentInfo.version) with an old release and
// otherwise runs the real binary unchanged. The round refuses the old version in one line, before any model call.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ACP_PRESETS, AcpAgent, acpConfigSchema } from '../../../src/agents/acp/index.ts';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { ClaudeAgent } from '../../../src/agents/claude/agent.ts';
import { GeminiAgent } from '../../../src/agents/gemini/agent.ts';
import { TESTED_VERSIONS } from '../../../src/agents/tested-versions.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { isGroupAlive } from '../../../src/lib/process-group.ts';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { type GeminiMock, geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { bins, binVersions } from '../../support/bins.ts';
import { tempDir } from '../../support/tmp.ts';

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** A `command` script in `dir`: `--version` prints `printed`; anything else runs `real` with the same arguments. */
function versionShim(dir: string, command: string, printed: string, real: readonly string[]): string {
  const path = join(dir, command);
  writeFileSync(
    path,
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo ${q(printed)}; exit 0; fi\nexec ${real.map(q).join(' ')} "$@"\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

async function collect(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

describe('Claude Code older than the tested range', () => {
  let mock: AnthropicMock;
  before(async () => {
    mock = await AnthropicMock.start();
  });
  after(() => mock.close());

  test('the round ends failed with the one-line refusal and no model call; after an upgrade in place the next round runs', async (t) => {
    const root = tempDir(t);
    const shimDir = join(root, 'bin');
    mkdirSync(shimDir);
    const workspace = join(root, 'ws');
    mkdirSync(workspace);
    const claude = versionShim(shimDir, 'claude', '2.0.5 (Claude Code)', [bins.claude()]);
    const agent = new ClaudeAgent('claude', {
      command: claude,
      homeDir: join(root, 'state', 'homes', 'claude'),
      env: isolatedClaudeEnv(mock.origin, root),
      logger: silentLogger,
    });
    const session = await agent.openSession({
      cwd: workspace,
      sandbox: 'read-only',
      signal: new AbortController().signal,
    });
    const events = await collect(session.turn('hello', { signal: new AbortController().signal }));
    const range = TESTED_VERSIONS['claude-code'];
    assert.deepEqual(events, [
      {
        kind: 'end',
        outcome: 'failed',
        error: `Claude Code 2.0.5 is older than baton supports (tested ${range.min} – 2.1.x): upgrade it (${range.install})`,
      },
    ]);
    assert.equal(mock.messageRequests.length, 0, 'no model call was made');
    const blocking = await agent.runBlocking('hello', { cwd: workspace });
    assert.deepEqual(blocking, { ok: false, error: (events[0] as { error: string }).error });

    // The same path now answers with the real release: the refusal is not remembered.
    versionShim(shimDir, 'claude', `${binVersions.claude()} (Claude Code)`, [bins.claude()]);
    mock.push({ kind: 'text', text: 'upgraded answer' });
    const next = await collect(session.turn('hello again', { signal: new AbortController().signal }));
    assert.deepEqual(next.at(-1), { kind: 'end', outcome: 'succeeded' });
    assert.deepEqual(next.at(-2), { kind: 'message', text: 'upgraded answer' });
    await session.close();
  });
});

describe('Gemini CLI older than the tested range', () => {
  let mock: GeminiMock;
  before(async () => {
    mock = await startGeminiMock();
  });
  after(() => mock.close());

  test('a one-shot run is refused in one line before Gemini starts', async (t) => {
    const root = tempDir(t);
    const shimDir = join(root, 'bin');
    mkdirSync(shimDir);
    const gemini = versionShim(shimDir, 'gemini', '0.50.2', [process.execPath, bins.gemini()]);
    const agent = new GeminiAgent('gemini', {
      command: [gemini],
      homeDir: join(root, 'state', 'homes', 'gemini'),
      sandboxMode: 'external',
      env: geminiEnv(join(root, 'home'), mock),
      logger: silentLogger,
    });
    const range = TESTED_VERSIONS['gemini-cli'];
    const res = await agent.runBlocking('hello', { cwd: root });
    assert.deepEqual(res, {
      ok: false,
      error: `Gemini CLI 0.50.2 is older than baton supports (tested ${range.min} – 0.61.x): upgrade it (${range.install})`,
    });
    assert.equal(mock.mainCalls().length, 0);
  });

  test('gemini --acp naming an older release at initialize: the session does not open, the process is stopped', async (t) => {
    const root = tempDir(t);
    const shimDir = join(root, 'bin');
    mkdirSync(shimDir);
    // The real `gemini --acp` with initialize's agentInfo.version rewritten on its way out; all else passes through.
    const gemini = join(shimDir, 'gemini');
    writeFileSync(
      gemini,
      `#!${process.execPath}
const { spawn } = require('node:child_process');
const { createInterface } = require('node:readline');
const child = spawn(${JSON.stringify(process.execPath)}, [${JSON.stringify(bins.gemini())}, ...process.argv.slice(2)], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
process.stdin.pipe(child.stdin);
createInterface({ input: child.stdout }).on('line', (line) => {
  try {
    const msg = JSON.parse(line);
    if (msg.result && msg.result.agentInfo) {
      msg.result.agentInfo.version = '0.50.2';
      line = JSON.stringify(msg);
    }
  } catch {}
  process.stdout.write(line + '\\n');
});
child.on('exit', (code) => process.exit(code ?? 1));
`,
    );
    chmodSync(gemini, 0o755);
    const agent = new AcpAgent(
      'gemini',
      acpConfigSchema.parse({
        command: [gemini, ...ACP_PRESETS.gemini.command.slice(1)],
        env: geminiEnv(join(root, 'home'), mock),
      }),
      { logger: silentLogger },
    );
    const pgids: number[] = [];
    const range = TESTED_VERSIONS['gemini-cli'];
    await assert.rejects(
      agent.openSession({
        cwd: root,
        sandbox: 'workspace-write',
        signal: new AbortController().signal,
        onProcessGroup: (p) => pgids.push(p),
      }),
      {
        message: `Gemini CLI 0.50.2 is older than baton supports (tested ${range.min} – 0.61.x): upgrade it (${range.install})`,
      },
    );
    assert.equal(pgids.length, 1);
    assert.equal(isGroupAlive(pgids[0]!), false, 'the refused agent was stopped');
    assert.equal(mock.mainCalls().length, 0);
  });
});
