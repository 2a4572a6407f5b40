// Delegation through an `ssh` target to loopback with a warm multiplexed connection, against the same hub's agent on
// `local` (the default, secrets fence on): what the remote round trips add to a short task (the cwd check, the lock
// scope, the start check, the two snapshots, the agent's start and stop, each one session on the shared connection).
// Then 16 short tasks in flight at once over the one target, counting the connections sshd serves (its per-connection
// processes) and the hub's ssh client processes: one connection, however many tasks.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { call, connectCaller, followToEnd, startHub } from '../test/support/hub.ts';
import { until } from '../test/support/poll.ts';
import { startSshd } from '../test/support/sshd.ts';
import {
  delegate,
  expectText,
  hubEnv,
  makeGitRepo,
  SCRIPTED_AGENT_COMMAND,
  SHORT_ANSWER,
  SHORT_PROMPT,
} from './common.ts';
import {
  atMost,
  type BenchOptions,
  type Cleanup,
  info,
  interleave,
  ratioOfMedians,
  type Section,
  series,
  stats,
  timed,
} from './harness.ts';

const IN_FLIGHT = 16;

export async function ssh(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const git = makeGitRepo(join(dir, 'git'));
  const flight = join(dir, 'flight');
  const flightDirs = Array.from({ length: IN_FLIGHT }, (_, i) => join(flight, `d${i}`));
  for (const d of flightDirs) mkdirSync(d, { recursive: true });
  mkdirSync(join(dir, 'sshd'), { mode: 0o700 });
  const sshd = await startSshd(cleanup, join(dir, 'sshd'));
  // The same host as a host whose login shell reads no rc file for a command (Debian's default .bashrc returns at
  // once when not interactive): bash skips .bashrc for sshd's commands when SHLVL is already set.
  mkdirSync(join(dir, 'sshd-quiet'), { mode: 0o700 });
  const quietSshd = await startSshd(cleanup, join(dir, 'sshd-quiet'), { env: { SHLVL: '1' } });
  const agent = { kind: 'acp', command: SCRIPTED_AGENT_COMMAND };
  const hub = await startHub(
    cleanup,
    {
      dir,
      roots: [git],
      agents: { here: agent, there: { ...agent, target: 'box' }, quiet: { ...agent, target: 'quiet' } },
      targets: { box: sshd.target([git, flight]), quiet: quietSshd.target([git]) },
      limits: { maxRunning: IN_FLIGHT * 2 },
    },
    { ...hubEnv(), NODE_COMPILE_CACHE: join(homedir(), '.cache', 'baton-node-compile-cache') },
  );
  const client = await connectCaller(cleanup, hub, 'alice');
  const side = (name: string) => () =>
    timed(async () => expectText((await delegate(client, SHORT_PROMPT, git, name)).text, SHORT_ANSWER));
  // What one new remote process costs on this host over a warm connection: a session and the remote user's login
  // shell (which reads its rc files), the part of an ssh task's start that does not depend on baton.
  const control = [
    '-o',
    'ControlMaster=auto',
    '-o',
    `ControlPath=${join(dir, 'sshd', 'cm')}`,
    '-o',
    'ControlPersist=60',
  ];
  const raw = [
    ...control,
    '-T',
    '-o',
    'BatchMode=yes',
    '-i',
    sshd.identityFile,
    '-o',
    `UserKnownHostsFile=${sshd.knownHostsFile}`,
  ];
  const remoteTrue = () =>
    timed(() => promisify(execFile)('ssh', [...raw, '-p', String(sshd.port), '-l', sshd.user, '127.0.0.1', 'true']));
  const closeRaw = () =>
    promisify(execFile)('ssh', [...raw, '-O', 'exit', '-p', String(sshd.port), '127.0.0.1']).catch(() => {});
  cleanup.after(closeRaw);
  const notes: string[] = [];
  const s = await interleave(
    opts.runs,
    { here: side('here'), there: side('there'), quiet: side('quiet'), login: remoteTrue },
    { ms: 40_000, notes },
  );

  // Only the hub's connection is left to count.
  await closeRaw();
  await until(() => sshd.sessions().length <= 1, { what: "the bench's own connection to close" });
  // 16 at once: each waits for its gate file, so all are running together while the processes are counted.
  const gate = JSON.stringify({ steps: [{ waitFor: 'go' }, { reply: 'done' }] });
  const runs = await Promise.all(
    flightDirs.map((cwd, i) =>
      call<{ taskId: string }>(client, 'agent_run', {
        agent: 'there',
        prompt: gate,
        cwd,
        idempotencyKey: `flight-${i}`,
      }),
    ),
  );
  let connections = 0;
  let clients = 0;
  for (const deadline = Date.now() + 60_000; ; ) {
    connections = Math.max(connections, sshd.sessions().length);
    clients = Math.max(clients, sshClients(sshd.port));
    const running = await Promise.all(
      runs.map((r) => call<{ state: string }>(client, 'agent_status', { taskId: r.taskId, limit: 1 })),
    );
    if (running.every((r) => r.state === 'running') && clients >= IN_FLIGHT) {
      connections = Math.max(connections, sshd.sessions().length);
      clients = Math.max(clients, sshClients(sshd.port));
      break;
    }
    if (Date.now() > deadline) throw new Error('the 16 tasks never ran at once');
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const cwd of flightDirs) writeFileSync(join(cwd, 'go'), '');
  for (const r of runs) {
    const end = await followToEnd(client, r.taskId);
    if (end.state !== 'succeeded') throw new Error(`flight task ${r.taskId} ended ${end.state}`);
  }
  if (!flightDirs.every((d) => existsSync(join(d, 'go')))) throw new Error('a gate file went missing');
  await hub.stop();
  return {
    name: 'ssh',
    title: 'Hub delegation, scripted ACP agent on a git repo: ssh target to loopback (warm connection) vs local',
    series: [
      series('local (secrets fence)', 'ms', s.here!),
      series('ssh to loopback', 'ms', s.there!),
      series('ssh to loopback, login shell reads no rc', 'ms', s.quiet!),
      series('ssh host true (warm connection)', 'ms', s.login!),
    ],
    checks: [
      atMost("ssh / local (median), this host's login shell as it is", ratioOfMedians(s.there!, s.here!), 1.5),
      atMost('ssh / local (median), a login shell that reads no rc file', ratioOfMedians(s.quiet!, s.here!), 1.5),
      info(
        "ssh / local, the remote login shell's start (ssh host true) taken out",
        (stats(s.there!).median - stats(s.login!).median) / stats(s.here!).median,
      ),
      atMost(`sshd connections, ${IN_FLIGHT} tasks in flight`, connections, 1, ''),
      info(
        `hub ssh client processes, ${IN_FLIGHT} tasks in flight (one per agent, the remote shell, the master)`,
        clients,
        '',
      ),
    ],
    notes,
  };
}

/** The ssh client processes (`ssh …` command lines naming the port) running on this machine. */
function sshClients(port: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
      if (cmd[0] === 'ssh' && cmd.includes(String(port))) n++;
    } catch {}
  }
  return n;
}
