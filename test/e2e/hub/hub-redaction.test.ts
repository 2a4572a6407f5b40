// SE-1 end to end: agent-supplied text that crosses to a caller is redacted, whichever way it comes — an agent's error
// reply, the stderr of an agent that exits 1, events (a plan step, a permission title) and the answer itself, when the
// agent read a file holding a caller's token or baton's own config; and baton's own dirs are never a cwd. The hub is
// real (`baton serve`), the agent is the scripted ACP test agent run as a child process, the caller is the official MCP
// SDK client over Streamable HTTP; the operator's control API and the dashboard are read too, and so are the store and
// the log once the hub stopped.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { REDACTED } from '../../../src/lib/redact.ts';
import { CONTROL_TOKEN, call, connectCaller, followToEnd, startHub, TEST_CALLERS } from '../../support/hub.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const ANT = 'sk-ant-api03-Pl4nt3dAnthropicKey0123456789abcdefXYZ_-987';
const OPENAI = 'sk-proj-Pl4nt3dOpenAIKey0123456789abcdefXYZ';
const GOOGLE = 'AIzaSyPl4nt3dGoogleKey0123456789abcdefXY';
const PLANTED = [ANT, OPENAI, GOOGLE, ...Object.values(TEST_CALLERS), CONTROL_TOKEN];

test('hub: planted keys and tokens in agent errors, stderr, events and answers reach no caller', async (t) => {
  const dir = tempDir(t, 'baton-hub-redact-');
  const work = join(dir, 'work');
  mkdirSync(work);
  // What a delegated agent could read in a project: the caller tokens and the control token (from an old layout's
  // config, a .env, anything) and provider keys.
  writeFileSync(
    join(work, 'leaky.txt'),
    `alice=${TEST_CALLERS.alice}\nbob=${TEST_CALLERS.bob}\ncontrol=${CONTROL_TOKEN}\nkey: ${ANT}\n`,
  );
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      scripted: {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        // What the agent reports about itself reaches the operator through the preflight.
        env: { ACP_TEST_AGENT_VERSION: `9.8.7 (licensed to ${GOOGLE})` },
        cancelGraceMs: 1_000,
      },
      // The same agent with nothing fenced: what every agent gets where bubblewrap is missing, so the redaction
      // behind the fence is tested on its own.
      unfenced: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT], target: 'open', cancelGraceMs: 1_000 },
    },
    targets: { open: { kind: 'local', fence: false } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const seen: string[] = [];

  const runScript = async (key: string, steps: unknown[], agent = 'scripted') => {
    const { taskId } = await call<{ taskId: string }>(alice, 'agent_run', {
      agent,
      prompt: acpScript(steps),
      cwd: work,
      idempotencyKey: key,
    });
    const done = await followToEnd(alice, taskId);
    seen.push(JSON.stringify(done));
    const status = await call(alice, 'agent_status', { taskId });
    const result = await call<{ text: string; error?: string }>(alice, 'agent_result', { taskId });
    seen.push(JSON.stringify(status), JSON.stringify(result));
    return { taskId, state: done.state, status, result };
  };

  // "error-reply": the agent answers the prompt with a JSON-RPC error quoting the keys.
  const errorReply = await runScript('error-reply', [
    { reply: 'working on it' },
    { fail: `upstream refused key ${ANT} (fallback ${OPENAI} also refused)` },
  ]);
  assert.equal(errorReply.state, 'failed');
  assert.ok(
    String(errorReply.result.error).includes(`upstream refused key ${REDACTED} (fallback ${REDACTED} also refused)`),
    String(errorReply.result.error),
  );

  // "exit1": the agent prints the keys on stderr and exits 1 mid-turn.
  const exit1 = await runScript('exit1', [{ stderr: `fatal: bad credentials ${OPENAI} ${GOOGLE}`, crash: 1 }]);
  assert.equal(exit1.state, 'failed');
  assert.match(String(exit1.result.error), /fatal: bad credentials \[redacted\] \[redacted\]/);

  // Events: a plan step and a permission title quoting a key.
  const events = await runScript('events', [
    { plan: [{ content: `use ${ANT} for the call`, status: 'in_progress', priority: 'high' }] },
    { permission: { kind: 'edit', title: `write ${OPENAI} to .env` } },
  ]);
  assert.equal(events.state, 'succeeded');
  assert.match(JSON.stringify(events.status), /use \[redacted\] for the call/);

  // Exfiltration: the agent reads a file holding every token and answers with it.
  const exfil = await runScript('exfil', [{ readFile: 'leaky.txt' }]);
  assert.equal(exfil.state, 'succeeded');
  assert.equal(
    exfil.result.text,
    `alice=${REDACTED}\nbob=${REDACTED}\ncontrol=${REDACTED}\nkey: ${REDACTED}\n`,
    'the answer arrives with every secret masked',
  );

  // An unfenced agent reads baton's own config (outside every root, but an absolute path opens) and answers with it:
  // every token in it is a registered secret. (Behind the fence the read fails: test/e2e/hub/targets-fence.test.ts.)
  const config = await runScript('read-config', [{ readFile: hub.configPath }], 'unfenced');
  assert.equal(config.state, 'succeeded');
  assert.match(config.result.text, /"token": "\[redacted\]"/);

  // baton's own dirs are never a cwd, even reached through a symlink inside a root.
  symlinkSync(hub.stateDir, join(work, 'state-link'));
  symlinkSync(dirname(hub.configPath), join(work, 'home-link'));
  for (const cwd of [join(work, 'state-link'), join(work, 'home-link'), join(work, 'home-link', 'state')]) {
    await assert.rejects(
      call(alice, 'agent_run', { agent: 'scripted', prompt: 'x', cwd, idempotencyKey: `own-${cwd}` }),
      /inside baton's own files/,
    );
  }

  // A config edited while the hub runs to authorise a dir holding baton's own files is refused; the old roots stay.
  const edited = JSON.parse(readFileSync(hub.configPath, 'utf8'));
  writeFileSync(hub.configPath, JSON.stringify({ ...edited, roots: [work, dir] }), { mode: 0o600 });
  await assert.rejects(
    call(alice, 'agent_run', { agent: 'scripted', prompt: 'x', cwd: dir, idempotencyKey: 'the-whole-dir' }),
    /outside the authorised roots/,
  );

  const listed = await call<{ tasks: unknown[] }>(alice, 'agent_list', {});
  assert.equal(listed.tasks.length, 5, 'the refused cwds created nothing');
  seen.push(JSON.stringify(listed));

  // The operator's control API and the dashboard read the same tasks.
  const control = (path: string) =>
    fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${CONTROL_TOKEN}` } }).then((r) => r.text());
  seen.push(await control('/control/tasks'));
  const health = await control('/control/health');
  assert.match(health, /"version":"9\.8\.7 \(licensed to \[redacted\]\)"/);
  seen.push(health);
  for (const { taskId } of [errorReply, exit1, events, exfil, config])
    seen.push(await control(`/control/tasks/${taskId}`));
  const login = await fetch(`${hub.url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: hub.url },
    body: new URLSearchParams({ token: CONTROL_TOKEN }).toString(),
    redirect: 'manual',
  });
  assert.equal(login.status, 303);
  const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
  for (const path of ['/ui', ...[errorReply, exit1, events, exfil, config].map((x) => `/ui/tasks/${x.taskId}`)]) {
    const page = await fetch(`${hub.url}${path}`, { headers: { cookie } });
    assert.equal(page.status, 200, path);
    seen.push(await page.text());
  }

  await hub.stop();
  const db = new DatabaseSync(join(hub.stateDir, 'baton.db'), { readOnly: true });
  // The prompts are the caller's own words (they quote the keys to script the agent) and stay as given: the agent needs
  // them. Everything the agent produced is checked.
  const dump = JSON.stringify([
    db.prepare('SELECT * FROM tasks').all(),
    db.prepare('SELECT * FROM events').all(),
    db.prepare('SELECT result, error FROM rounds').all(),
  ]);
  db.close();
  const haystacks = {
    'what callers saw': seen.join('\n'),
    store: dump,
    log: readFileSync(join(hub.stateDir, 'baton.log'), 'utf8'),
  };
  assert.match(haystacks.log, /config change refused.*contains baton's own files/);
  for (const [where, text] of Object.entries(haystacks)) {
    for (const secret of PLANTED) assert.equal(text.includes(secret), false, `${secret.slice(0, 12)}… in ${where}`);
  }
  assert.ok(haystacks['what callers saw'].includes(REDACTED));
});
