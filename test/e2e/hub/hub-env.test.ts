// The hub never holds callers' tokens or baton's attach credentials in its own environment (rule: hub-env-clean):
// /proc/<pid>/environ is readable by every process of the user, a delegated agent included. `baton serve` started from
// a shell that sourced tokens.env replaces itself by a copy without them; `baton start` launches the daemon without
// them. The escape form has a delegated ACP agent read its own environment and its hub's.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { daemonEnv, takeHandover } from '../../../src/lib/hub-env.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  runGroup,
  startHub,
  writeCliConfig,
} from '../../support/hub.ts';
import { acpScript, scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const SECRETS = {
  BATON_TOKEN_MALLORY: 'caller-token-of-mallory-0123456789abcdef',
  CODEX_REMOTE_TOKEN: 'codex-remote-token-0123456789abcdef',
  OPENCODE_SERVER_PASSWORD: 'opencode-server-password-0123456789',
};

function environOf(pid: number): string {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').replaceAll('\0', '\n');
}

function assertNoSecrets(text: string, what: string): void {
  for (const [name, value] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(value), `${what} holds ${name}'s value`);
    assert.ok(!new RegExp(`^${name}=`, 'm').test(text), `${what} holds ${name}`);
  }
}

test('serve re-executes itself without secrets; a delegated agent finds none in its hub or itself', async (t) => {
  const dir = tempDir(t);
  const { work, entry } = scriptedAgentSetup(dir);
  // Unfenced, as where bubblewrap is missing: behind the secrets fence the agent could not read the hub's /proc at all
  // (test/e2e/hub/targets-fence.test.ts), and a clean environment is what protects the hub without it.
  const hub = await startHub(
    t,
    {
      dir,
      roots: [work],
      agents: { scripted: { ...entry, target: 'unfenced' } },
      targets: { unfenced: { kind: 'local', fence: false } },
    },
    SECRETS,
  );
  const pid = hub.group.child.pid!;
  const environ = environOf(pid);
  assertNoSecrets(environ, 'the hub environment');
  assert.match(environ, /^BATON_HOME=/m, 'what the hub needs stays');

  const alice = await connectCaller(t, hub, 'alice');
  // The agent's parent is the hub: it reads the hub's environment and its own, as an escape would.
  const script = 'tr "\\0" "\\n" < /proc/$(awk \'{print $4}\' /proc/$PPID/stat)/environ; echo ---; env';
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    prompt: acpScript([{ sh: script }]),
    cwd: work,
    idempotencyKey: 'read-env',
  });
  assert.equal((await followToEnd(alice, run.taskId)).state, 'succeeded');
  const seen = (await call<{ text: string }>(alice, 'agent_result', { taskId: run.taskId })).text;
  assert.match(seen, /^BATON_HOME=/m, 'the agent did read its hub environment');
  assertNoSecrets(seen, "what the agent read (its hub's and its own environment)");
});

test('start launches the daemon without secrets', async (t) => {
  const dir = tempDir(t);
  const { work, entry } = scriptedAgentSetup(dir);
  // A hub started once to fix a free port in the config, then stopped: start then runs on that config.
  const first = await startHub(t, { dir, roots: [work], agents: { scripted: entry } });
  const cfg = writeCliConfig(first, join(dir, 'cli', 'config.json'));
  await first.stop();
  const env = isolatedEnv(dir, SECRETS);
  const baton = (...args: string[]) => runGroup(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), ...args], env);
  t.after(() => baton('--config', cfg, 'stop', '--force'));
  const started = await baton('--config', cfg, 'start');
  assert.equal(started.code, 0, started.stderr);
  const pid = Number(/\(pid (\d+)\)/.exec(started.stdout)?.[1]);
  assert.ok(pid > 0, started.stdout);
  assertNoSecrets(environOf(pid), 'the started daemon environment');
  assert.equal((await baton('--config', cfg, 'stop')).code, 0);
});

test('the credential the hub itself uses is handed over in memory, its file removed', (t) => {
  const saved = process.env.OPENCODE_SERVER_PASSWORD;
  t.after(() => {
    if (saved === undefined) delete process.env.OPENCODE_SERVER_PASSWORD;
    else process.env.OPENCODE_SERVER_PASSWORD = saved;
  });
  const env = daemonEnv({ PATH: '/usr/bin', BATON_HOME: '/h', ...SECRETS });
  assert.deepEqual(Object.keys(env).sort(), ['BATON_HOME', 'BATON_SECRETS_HANDOVER', 'PATH']);
  const file = env.BATON_SECRETS_HANDOVER!;
  delete process.env.OPENCODE_SERVER_PASSWORD;
  process.env.BATON_SECRETS_HANDOVER = file;
  takeHandover();
  assert.equal(process.env.OPENCODE_SERVER_PASSWORD, SECRETS.OPENCODE_SERVER_PASSWORD);
  assert.equal(process.env.BATON_SECRETS_HANDOVER, undefined);
  assert.equal(existsSync(file), false);
  assert.deepEqual(Object.keys(daemonEnv({ PATH: '/usr/bin', BATON_TOKEN_X: 'x' })), ['PATH']);
});
