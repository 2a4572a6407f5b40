// `baton serve` and `baton start` before they start a hub: is one already running for this config (at the address it
// recorded), is the port free; and why a background hub exited at start.
import { readFileSync } from 'node:fs';
import type { HubConfig } from '../faces/hub/config.ts';
import { healthOf } from './control.ts';

/**
 * The hub running for this config, if it recorded where it listens and answers there. Only the record is asked: a
 * configured port held by something that is not a hub would leave the question hanging until its timeout.
 */
export async function runningHub(cfg: HubConfig): Promise<{ url: string; port: number; pid: number } | undefined> {
  const { readListenRecord } = await import('../faces/hub/listen-record.ts');
  const rec = readListenRecord(cfg.stateDirPath);
  if (!rec) return undefined;
  const addr = { ...cfg, listen: { host: rec.host, port: rec.port } };
  const h = await healthOf(addr).catch(() => null);
  if (!h) return undefined;
  return { url: `http://${addr.listen.host}:${addr.listen.port}`, port: addr.listen.port, pid: h.pid };
}

export async function refuseSecondHub(cfg: HubConfig): Promise<void> {
  const running = await runningHub(cfg);
  if (running)
    throw new Error(
      `a hub for this config already runs on ${running.url} (pid ${running.pid}); \`baton stop\` stops it`,
    );
}

export function portInUse(port: number): Error {
  return new Error(`port ${port} is in use; stop the other process or pass --port N`);
}

/** Fails at once, in one line, when the hub could not listen on `port` (0: any free port, always possible). */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const { createServer } = await import('node:net');
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(portInUse(port));
      else if (err.code === 'EACCES')
        reject(new Error(`port ${port} needs privileges on ${host}; pass --port N above 1023`));
      else if (err.code === 'EADDRNOTAVAIL')
        reject(new Error(`cannot listen on ${host}: no such address here; fix "listen.host" in the config`));
      else reject(err);
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/** Why the background hub exited at start: its own error line(s) from daemon.out, else where to look. */
export function startFailure(daemonOut: string, from: number): string {
  let text = '';
  try {
    text = readFileSync(daemonOut).subarray(from).toString('utf8');
  } catch {}
  const at = text.search(/^baton: /m);
  if (at >= 0) return text.slice(at + 'baton: '.length).trim();
  return `the hub exited at start; see ${daemonOut}`;
}
