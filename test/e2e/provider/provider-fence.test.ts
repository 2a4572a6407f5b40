// The stdio providers' agents behind the secrets fence, for real: `baton mcp --provider codex|claude|gemini` under the
// official MCP client, each with its real binary against the suite's mock model server, and baton's files planted
// where the provider finds them (the user's config dir, its connections/, the config's `stateDir`). Codex's shell
// command and Gemini's read_file try to read them, Claude Code lists the processes it can see; every call succeeds and
// none of the files was there. The hub config's `targets.local.fence: false` shows the same probe reading them all, and
// a `bwrap` that is not there gives one warning line and an unfenced run.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { AnthropicMock, isolatedClaudeEnv } from '../../mock-models/anthropic.ts';
import { geminiEnv, startGeminiMock } from '../../mock-models/gemini.ts';
import { ResponsesMock, reply, shellCall } from '../../mock-models/responses.ts';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { spawnStdioClient } from '../../support/stdio-client.ts';
import { tempDir } from '../../support/tmp.ts';
import { connectProvider, type Layout, makeLayout, textOf } from './codex/harness.ts';

const CONTROL_TOKEN = 'control-token-PROVIDER-FENCE-5d1e9a7c3b2f4e6a';
const CALLER_TOKEN = 'caller-token-PROVIDER-FENCE-8a2c4e6f1b3d5c7e';
const STATE_TOKEN = 'state-token-PROVIDER-FENCE-2f4a6c8e0b1d3f5a';

/**
 * baton's files where a provider started with `home` as $HOME finds them: config.json (with the control token and a
 * state dir of its own) in the user's config dir, tokens.env in its connections/, a token file in the state dir.
 */
function plantBaton(home: string, targets?: Record<string, unknown>): string[] {
  const configDir = join(home, '.config', 'baton');
  const stateDir = join(home, 'baton-state');
  mkdirSync(join(configDir, 'connections'), { recursive: true, mode: 0o700 });
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const files = [join(configDir, 'config.json'), join(configDir, 'connections', 'tokens.env'), join(stateDir, 'lease')];
  const config = { version: 1, roots: [], stateDir, control: { token: CONTROL_TOKEN }, callers: {}, targets };
  writeFileSync(files[0]!, JSON.stringify(config), { mode: 0o600 });
  writeFileSync(files[1]!, `BATON_ALICE_TOKEN=${CALLER_TOKEN}\n`, { mode: 0o600 });
  writeFileSync(files[2]!, STATE_TOKEN, { mode: 0o600 });
  return files;
}

/** What a prompt-injected agent would run: each file's exit status says whether it was there to read. */
const catProbe = (files: string[]) => files.map((f, i) => `cat ${f}; echo "file${i}=$?"`).join('; ');

function shellOutput(mock: ResponsesMock): string {
  return mock.turns
    .at(-1)!
    .input.filter((i) => i.type === 'function_call_output')
    .map((i) => String(i.output))
    .join('\n');
}

async function codexReads(layout: Layout, files: string[]): Promise<{ output: string; stderr: string }> {
  const mock = await ResponsesMock.start();
  const conn = await connectProvider(bins.codex(), layout, mock);
  try {
    mock.push(shellCall(catProbe(files)), reply('codex done'));
    const res = await conn.call('codex', {
      prompt: 'read the config',
      sandbox: 'workspace-write',
      cwd: layout.workspace,
    });
    assert.equal(res.isError, undefined, textOf(res));
    assert.equal(textOf(res), 'codex done');
    return { output: shellOutput(mock), stderr: conn.stderr() };
  } finally {
    await conn.close();
    await mock.close();
  }
}

const ANY_SECRET = new RegExp([CONTROL_TOKEN, CALLER_TOKEN, STATE_TOKEN].join('|'));

test('codex provider: the real Codex’s shell command reads none of baton’s files and the call succeeds; fence: false reads them all', async (t) => {
  const layout = makeLayout('baton-provider-fence-codex-');
  t.after(() => layout.cleanup());
  const files = plantBaton(layout.home);
  const fenced = await codexReads(layout, files);
  for (let i = 0; i < files.length; i++) assert.match(fenced.output, new RegExp(`file${i}=1`), fenced.output);
  assert.match(fenced.output, /No such file or directory/);
  assert.doesNotMatch(fenced.output, ANY_SECRET);
  assert.doesNotMatch(fenced.stderr, /warning/, 'bubblewrap is here: no warning');

  // The operator's opt-out in the hub config: the same command now reads every file.
  plantBaton(layout.home, { local: { kind: 'local', fence: false } });
  const open = await codexReads(layout, files);
  for (let i = 0; i < files.length; i++) assert.match(open.output, new RegExp(`file${i}=0`), open.output);
  assert.match(open.output, new RegExp(CONTROL_TOKEN));
  assert.match(open.output, new RegExp(STATE_TOKEN));
  assert.doesNotMatch(open.stderr, /warning/, 'a chosen opt-out is not warned about');
});

test('codex provider without bubblewrap: one warning line with the fix, and the calls run unfenced as before', async (t) => {
  const layout = makeLayout('baton-provider-fence-none-');
  t.after(() => layout.cleanup());
  const files = plantBaton(layout.home, { local: { kind: 'local', bwrap: join(layout.root, 'no-such-bwrap') } });
  const mock = await ResponsesMock.start();
  const conn = await connectProvider(bins.codex(), layout, mock);
  try {
    for (const key of ['first', 'second']) {
      mock.push(shellCall(catProbe(files)), reply(`codex ${key}`));
      const res = await conn.call('codex', { prompt: key, sandbox: 'workspace-write', cwd: layout.workspace });
      assert.equal(textOf(res), `codex ${key}`);
      assert.match(shellOutput(mock), /file0=0/, 'it ran unfenced');
    }
    const warnings = conn.stderr().match(/^.*warning.*$/gm) ?? [];
    assert.equal(warnings.length, 1, conn.stderr());
    assert.match(
      warnings[0]!,
      /^\[baton\] warning: provider codex: agents run without the secrets fence \(bubblewrap not found at .*no-such-bwrap\) and can read baton's tokens; install it \(Debian\/Ubuntu: apt-get install bubblewrap/,
    );
  } finally {
    await conn.close();
    await mock.close();
  }
});

test('claude provider: Claude Code sees its own /proc behind bubblewrap, and the review succeeds', async (t) => {
  const root = tempDir(t, 'baton-provider-fence-claude-');
  const workspace = join(root, 'ws');
  mkdirSync(workspace);
  const mock = await AnthropicMock.start();
  t.after(() => mock.close());
  const env = isolatedClaudeEnv(mock.origin, root) as Record<string, string>;
  const [config] = plantBaton(env.HOME!);
  const { client, stderr, close } = await spawnStdioClient({
    command: process.execPath,
    args: [join(REPO_ROOT, 'bin/baton.js'), 'mcp', '--provider', 'claude', '--claude-command', bins.claude()],
    env,
    cwd: workspace,
  });
  try {
    // Claude's reviewer policy asks before reading outside the work dir, so its look is `ps`.
    mock.push(
      { kind: 'tool_use', name: 'Bash', input: { command: 'ps -e', description: 'list processes' } },
      { kind: 'text', text: 'claude done' },
    );
    const res = (await client.callTool({
      name: 'claude_code',
      arguments: { prompt: 'look around' },
    })) as CallToolResult;
    assert.equal(res.isError, undefined, JSON.stringify(res.content));
    assert.equal((res.content[0] as { text: string }).text, 'claude done');
    const seen = mock.messageRequests
      .at(-1)!
      .messages!.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((c: { type?: string }) => c.type === 'tool_result')
      .map((c: { content?: unknown }) => String(c.content))
      .join('\n');
    assert.match(seen, /^\s+1 \S+\s+\S+ bwrap$/m, seen);
    assert.doesNotMatch(seen, /baton\.js/, 'the provider is not in its view');
    assert.ok(seen.trim().split('\n').length < 10, seen);
    assert.doesNotMatch(stderr(), /warning/);

    // A work dir inside baton's own files would be bound back into the fence: refused before Claude starts.
    const calls = mock.messageRequests.length;
    const inside = (await client.callTool({
      name: 'claude_code',
      arguments: { prompt: 'look around', cwd: join(dirname(config!), 'connections') },
    })) as CallToolResult;
    assert.equal(inside.isError, true);
    assert.match(
      (inside.content[0] as { text: string }).text,
      /lies inside baton's own files .*give a project directory/,
    );
    assert.equal(mock.messageRequests.length, calls, 'no model call');
  } finally {
    await close();
  }
});

test('gemini provider: the real Gemini CLI’s read_file finds no baton config under the dir it works in', async (t) => {
  const root = tempDir(t, 'baton-provider-fence-gemini-');
  const home = join(root, 'home');
  const mock = await startGeminiMock();
  t.after(() => mock.close());
  const env = geminiEnv(home, mock);
  const [config] = plantBaton(home);
  const { client, close } = await spawnStdioClient({
    command: process.execPath,
    args: [
      join(REPO_ROOT, 'bin/baton.js'),
      'mcp',
      '--provider',
      'gemini',
      '--gemini-command',
      JSON.stringify([process.execPath, bins.gemini()]),
      '--gemini-sandbox',
      'external',
      '--model',
      'gemini-mock',
    ],
    env,
    cwd: home,
  });
  try {
    // The user asked about their home dir, which holds baton's config: inside Gemini's workspace, so Gemini allows the
    // read, and only the fence stands between it and the token.
    mock.script.push(
      { type: 'functionCall', name: 'read_file', args: { file_path: config } },
      { type: 'text', chunks: ['gemini done'] },
    );
    const res = (await client.callTool({
      name: 'gemini',
      arguments: { prompt: 'read my baton config', cwd: home },
    })) as CallToolResult;
    assert.equal(res.isError, undefined, JSON.stringify(res.content));
    assert.equal((res.content[0] as { text: string }).text, 'gemini done');
    const sent = mock.mainCalls().at(-1)!.rawBody;
    assert.match(sent, /functionResponse/, sent);
    assert.doesNotMatch(sent, ANY_SECRET, 'the token never reached the model');
    assert.match(sent, /not found|does not exist|ENOENT/i, sent);
  } finally {
    await close();
  }
});
