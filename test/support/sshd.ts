// A real OpenSSH server (Debian `openssh-server`) for the ssh target's tests: started by the test on a free loopback
// port, with a host key it generates, its own sshd_config and one authorised client key, all in a temp dir; it runs as
// the current user (root in CI), who is the only user that can log in. Stopped when the test ends.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { signalGroup } from '../../src/lib/process-group.ts';
import { until } from './poll.ts';
import { portForLater } from './ports.ts';

export const SSHD = '/usr/sbin/sshd';

export interface Sshd {
  port: number;
  user: string;
  /** The client's private key, authorised on this server. */
  identityFile: string;
  /** A known-hosts file with this server's host key. */
  knownHostsFile: string;
  /** A known-hosts file that names another key for this server. */
  wrongKnownHostsFile: string;
  /** The `targets.<name>` entry that reaches it, with `roots`. */
  target(roots: string[]): Record<string, unknown>;
  /** The pids of the sshd processes serving a connection (children of the listener): one per connection. */
  sessions(): number[];
  /** SIGKILLs every sshd process serving a connection (not the processes they started): the connections drop. */
  dropConnections(): void;
  /**
   * SIGSTOPs every sshd process serving a connection: the TCP connections stay open and the kernel still acknowledges
   * them, but nothing answers, as when a network path goes silent. Returns their pids, for the caller to SIGKILL.
   */
  freezeConnections(): number[];
}

const keygen = (file: string) =>
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'baton-test', '-f', file], { stdio: 'ignore' });

/**
 * `env`: variables sshd sets in every session (`SetEnv`), as a remote user's login would have them (a CODEX_HOME of
 * the remote user's own).
 */
export async function startSshd(
  t: Pick<TestContext, 'after'>,
  dir: string,
  opts: { env?: Record<string, string> } = {},
): Promise<Sshd> {
  const port = await portForLater();
  const user = userInfo().username;
  for (const key of ['host_key', 'other_host_key', 'client_key']) keygen(join(dir, key));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')), { mode: 0o600 });
  const hostLine = (pub: string) =>
    `[127.0.0.1]:${port} ${readFileSync(join(dir, pub), 'utf8').split(' ').slice(0, 2).join(' ')}\n`;
  writeFileSync(join(dir, 'known_hosts'), hostLine('host_key.pub'), { mode: 0o600 });
  writeFileSync(join(dir, 'wrong_known_hosts'), hostLine('other_host_key.pub'), { mode: 0o600 });
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `AllowUsers ${user}`,
      'UsePAM no',
      // The key files lie in a temp dir under the world-writable /tmp, which strict modes refuse.
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding no',
      'X11Forwarding no',
      'PermitUserEnvironment no',
      // Every task's session shares one connection.
      'MaxSessions 64',
      'MaxStartups 64',
      'LogLevel ERROR',
      // One SetEnv line: sshd takes the first line of a keyword only.
      ...(opts.env
        ? [
            `SetEnv ${Object.entries(opts.env)
              .map(([k, v]) => JSON.stringify(`${k}=${v}`))
              .join(' ')}`,
          ]
        : []),
      '',
    ].join('\n'),
  );
  // As root sshd wants its privilege separation dir, which a freshly installed package in a container may lack.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.after(async () => {
    // The per-connection sshd processes lead sessions of their own.
    for (const pid of sshdDescendants(child.pid!))
      try {
        process.kill(pid, 'SIGTERM');
      } catch {}
    signalGroup(child.pid!, 'SIGTERM');
    await exited;
  });
  await until(
    () => {
      if (child.exitCode !== null) throw new Error(`sshd exited: ${stderr}`);
      return new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
    },
    { what: `sshd to listen on port ${port}` },
  );
  const listener = child.pid!;
  return {
    port,
    user,
    identityFile: join(dir, 'client_key'),
    knownHostsFile: join(dir, 'known_hosts'),
    wrongKnownHostsFile: join(dir, 'wrong_known_hosts'),
    target: (roots) => ({
      kind: 'ssh',
      host: '127.0.0.1',
      port,
      user,
      identityFile: join(dir, 'client_key'),
      knownHostsFile: join(dir, 'known_hosts'),
      roots,
    }),
    sessions: () => childrenOf(listener),
    dropConnections: () => {
      for (const pid of sshdDescendants(listener))
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
    },
    freezeConnections: () => {
      const pids = sshdDescendants(listener);
      for (const pid of pids)
        try {
          process.kill(pid, 'SIGSTOP');
        } catch {}
      return pids;
    },
  };
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/** The sshd processes below the listener (each connection's monitor and its session process). */
function sshdDescendants(listener: number): number[] {
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const c of childrenOf(pid)) {
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${c}/cmdline`, 'latin1');
      } catch {}
      if (!cmd.startsWith('sshd')) continue;
      found.push(c);
      walk(c);
    }
  };
  walk(listener);
  return found;
}
