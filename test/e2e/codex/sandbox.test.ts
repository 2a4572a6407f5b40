// Which sandbox Codex runs a command in, seen from outside: a system bubblewrap on PATH when the machine has one,
// the copy bundled with Codex otherwise. Both put the command in a pid namespace of its own; a cancelled turn and a
// group stop still leave none of its processes behind. And the one machine where Codex cannot sandbox a command at all
// is named in one line.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import type { AgentEvent } from '../../../src/agents/agent.ts';
import { createAgent } from '../../../src/agents/registry.ts';
import { codexSandboxHelperProblem } from '../../../src/codex/sandbox-helper.ts';
import { silentLogger } from '../../../src/lib/log.ts';
import { ensurePrivateDir } from '../../../src/lib/private-fs.ts';
import { shellCall } from '../../mock-models/responses.ts';
import { codexTestDir, mockCodexAgentEntry, startResponsesMock } from '../../support/codex.ts';
import { until } from '../../support/poll.ts';

/** The bubblewrap Codex finds first on PATH, resolved; undefined when there is none. */
function systemBwrap(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      return realpathSync(join(dir, 'bwrap'));
    } catch {}
  }
  return undefined;
}

interface Proc {
  pid: number;
  ppid: number;
  exe: string;
  cmdline: string;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      let exe = '';
      try {
        exe = readlinkSync(`/proc/${entry}/exe`);
      } catch {}
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      out.push({ pid: Number(entry), ppid, exe, cmdline });
    } catch {}
  }
  return out;
}

/** The processes between `pid` and the process `top` (exclusive), nearest first. */
function ancestors(pid: number, top: number, all = processes()): Proc[] {
  const chain: Proc[] = [];
  const byPid = new Map(all.map((p) => [p.pid, p]));
  for (let p = byPid.get(byPid.get(pid)?.ppid ?? -1); p && p.pid !== top; p = byPid.get(p.ppid)) chain.push(p);
  return chain;
}

const isBwrap = (p: Proc) => /(^|\/)bwrap( \(deleted\))?$/.test(p.exe);

test('a command runs under the system bubblewrap when PATH has one, else Codex’s bundled copy; cancel and a group stop end it', async (t) => {
  const mock = await startResponsesMock(t);
  const root = codexTestDir('baton-codex-sandbox-');
  const pgids: number[] = [];
  const agent = createAgent('codex', mockCodexAgentEntry(mock, ensurePrivateDir(join(root, 'user-codex'))), {
    stateDir: ensurePrivateDir(join(root, 'state')),
    logger: silentLogger,
  });
  const session = await agent.openSession({
    cwd: ensurePrivateDir(join(root, 'work')),
    sandbox: 'workspace-write',
    signal: new AbortController().signal,
    onProcessGroup: (pgid) => pgids.push(pgid),
  });
  t.after(async () => {
    await session.close();
    rmSync(root, { recursive: true, force: true });
  });
  const codexPid = pgids[0]!;
  const sleeping = (marker: string) => processes().filter((p) => p.cmdline === `${marker} `);
  const runCommand = async (marker: string) => {
    mock.push(shellCall(marker));
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const turn = (async () => {
      for await (const e of session.turn('run it', { signal: controller.signal })) events.push(e);
    })();
    // Running, and reported as a command (the tool events are the same on either sandbox path).
    const started = (e: AgentEvent) => e.kind === 'tool' && e.phase === 'start' && e.family === 'command';
    const [command] = await until(async () => (events.some(started) ? sleeping(marker) : []), {
      what: 'the command to run and be reported',
      ok: (r) => r.length > 0,
    });
    return { command: command!, controller, events, turn };
  };

  // 1. Which bubblewrap: the command's ancestors below Codex hold one, the system's when PATH has one.
  const first = `sleep 47.${process.pid}`;
  const run = await runCommand(first);
  const chain = ancestors(run.command.pid, codexPid);
  const bwraps = chain.filter(isBwrap);
  const describe = chain.map((p) => p.exe).join(' < ');
  assert.ok(bwraps.length > 0, `no bubblewrap above the command: ${describe}`);
  const system = systemBwrap();
  for (const b of bwraps)
    if (system) assert.equal(b.exe, system, describe);
    else assert.match(b.exe, /\/codex-resources\/bwrap$/, describe);

  // 2. A cancelled turn: Codex acknowledges through its protocol (it may keep the command as a background process).
  run.controller.abort();
  await run.turn;
  assert.deepEqual(run.events.at(-1), { kind: 'end', outcome: 'cancelled', acknowledged: true });

  // 3. The stop baton falls back to when Codex does not answer a cancel (SIGKILL to Codex's process group) reaches the
  // commands, though bubblewrap moved them to a session and process group of their own: they die with their parent.
  const second = `sleep 48.${process.pid}`;
  const again = await runCommand(second);
  assert.notEqual(
    readFileSync(`/proc/${again.command.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2],
    String(codexPid),
  );
  process.kill(-codexPid, 'SIGKILL');
  await again.turn.catch(() => {});
  await until(async () => sleeping(first).length + sleeping(second).length, {
    what: 'the commands to end with Codex',
    ok: (n) => n === 0,
  });
});

test('a home under the temp directory with a bubblewrap older than 0.9 on PATH is reported in one line, else nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bwrap-'));
  try {
    const fake = (name: string, help: string) => {
      const bin = ensurePrivateDir(join(dir, name));
      writeFileSync(join(bin, 'bwrap'), `#!/bin/sh\necho '${help}'\n`, { mode: 0o755 });
      return bin;
    };
    const old = fake(
      'old',
      'usage: bwrap [OPTIONS...] [--] COMMAND [ARGS...]\n    --unshare-pid  Create new pid namespace',
    );
    const recent = fake('recent', 'usage: bwrap [OPTIONS...]\n    --argv0 VALUE  Set argv[0] to the value VALUE');
    const tempHome = join(dir, 'state', 'homes', 'codex-x');
    const problem = codexSandboxHelperProblem(tempHome, { TMPDIR: dir, PATH: `${old}:/usr/bin` }, 'linux');
    assert.equal(
      problem,
      `Codex cannot run sandboxed commands: its home ${tempHome} is under the temp directory ${dir}, where Codex makes ` +
        `no helper links, and ${join(old, 'bwrap')} (older than bubblewrap 0.9) needs them; move baton's state ` +
        `directory (or the launch directory) out of ${dir}, or install bubblewrap 0.9 or later`,
    );
    // Unset TMPDIR means /tmp, as Codex reads it.
    assert.ok(codexSandboxHelperProblem('/tmp/x/home', { PATH: old }, 'linux'));
    // Fine: a bubblewrap that sets argv0, none on PATH (Codex's bundled copy), a home outside the temp dir, not Linux.
    assert.equal(codexSandboxHelperProblem(tempHome, { TMPDIR: dir, PATH: recent }, 'linux'), undefined);
    assert.equal(codexSandboxHelperProblem(tempHome, { TMPDIR: dir, PATH: join(dir, 'none') }, 'linux'), undefined);
    assert.equal(
      codexSandboxHelperProblem('/home/u/.local/state/baton/homes/codex-x', { TMPDIR: dir, PATH: old }, 'linux'),
      undefined,
    );
    assert.equal(codexSandboxHelperProblem(tempHome, { TMPDIR: dir, PATH: old }, 'darwin'), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
