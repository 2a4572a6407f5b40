// `baton doctor` (AG-6): reports each configured agent without spending inference — a real ACP session is opened and
// closed for agents that can do that, a missing binary is a FAIL with the reason (worded the same for every kind), and
// any FAIL makes the exit code 1.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/bins.ts';
import { isolatedEnv, writeHubConfig } from '../../support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);

async function doctor(configPath: string, cwd: string): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, 'doctor'], {
    cwd,
    env: isolatedEnv(cwd),
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );
}

test('doctor: a session-capable agent is ok (a real session, no prompt), a missing binary FAILs and exits 1', async (t) => {
  const dir = tempDir(t, 'baton-doctor-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const record = join(dir, 'record.jsonl');
  const configPath = writeHubConfig({
    dir,
    roots: [work],
    agents: {
      scripted: {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        // What the agent says about itself is agent text: the doctor prints it redacted (SE-1).
        env: { ACP_TEST_AGENT_RECORD: record, ACP_TEST_AGENT_VERSION: `9.8.7 key=sk-Pl4nt3dDoctorKey0123456789abc` },
      },
      ghost: { kind: 'acp', command: [join(dir, 'no-such-agent')] },
    },
  });
  const res = await doctor(configPath, dir);
  assert.equal(res.code, 1, `a FAIL beside a usable agent still exits 1:\n${res.stdout}`);
  assert.match(res.stdout, /^1 agent\(s\) FAIL: install them or remove them from the config/m);
  assert.match(res.stdout, /^status\s+agent\s+kind\s+binary\s+version\s+login\s+result$/m);
  assert.match(res.stdout, /^ok\s+scripted\s+acp\s+\S+.*session ok/m);
  assert.ok(res.stdout.includes(process.execPath), 'the row names the binary it runs');
  assert.match(res.stdout, new RegExp(`^FAIL\\s+ghost\\s+acp\\s.*"${join(dir, 'no-such-agent')}" not found`, 'm'));
  // What the agent printed about itself is redacted like every other output.
  assert.match(res.stdout, /9\.8\.7 key=\[redacted\]/);
  assert.doesNotMatch(res.stdout, /Pl4nt3d/);
  const seen = readFileSync(record, 'utf8');
  assert.match(seen, /session\/new/, 'a real session was opened');
  assert.doesNotMatch(seen, /session\/prompt/, 'and no prompt was sent');

  const onlyGhost = writeHubConfig({
    dir: join(dir, 'second'),
    roots: [work],
    agents: { ghost: { kind: 'acp', command: [join(dir, 'no-such-agent')] } },
  });
  const bad = await doctor(onlyGhost, dir);
  assert.equal(bad.code, 1, 'no usable agent: exit 1');

  const onlyScripted = writeHubConfig({
    dir: join(dir, 'third'),
    roots: [work],
    agents: { scripted: { kind: 'acp', command: [process.execPath, SCRIPTED_ACP_AGENT] } },
  });
  const good = await doctor(onlyScripted, dir);
  assert.equal(good.code, 0, `every agent ok: exit 0\n${good.stdout}`);
});

test('doctor: a missing binary is worded one way for every agent kind (rule: missing-binary)', async (t) => {
  const dir = tempDir(t, 'baton-doctor-missing-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const gone = (name: string) => join(dir, `no-such-${name}`);
  const configPath = writeHubConfig({
    dir,
    roots: [work],
    agents: {
      acp: { kind: 'acp', command: [gone('acp')] },
      claude: { kind: 'claude', command: gone('claude') },
      codex: { kind: 'codex', command: [gone('codex')] },
      opencode: { kind: 'opencode', binary: gone('opencode') },
      bare: { kind: 'acp', command: ['baton-no-such-agent-binary'] },
    },
  });
  const res = await doctor(configPath, dir);
  assert.equal(res.code, 1, res.stdout);
  for (const [kind, what] of [
    ['acp', 'it'],
    ['claude', 'Claude Code'],
    ['codex', 'Codex'],
    ['opencode', 'OpenCode'],
  ]) {
    const row = res.stdout.split('\n').find((l) => l.startsWith(`FAIL    ${kind} `));
    assert.ok(row, `a FAIL row for ${kind}:\n${res.stdout}`);
    assert.ok(
      row.endsWith(`binary "${gone(kind!)}" not found; install ${what} or set its path in the agent's config`),
      row,
    );
  }
  assert.match(
    res.stdout,
    /binary "baton-no-such-agent-binary" not found on PATH or in the usual install places; install it or set its path in the agent's config$/m,
  );
  assert.match(res.stdout, /^FAIL\s+bare\s+acp\s+baton-no-such-agent-binary \(not found\)/m, 'bare name unresolved');
  assert.match(res.stdout, /^5 agent\(s\) FAIL/m);
});
