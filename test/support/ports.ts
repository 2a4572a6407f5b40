// A loopback port for a hub that must listen on a port known before it starts (a --port flag, a config another command
// reads, a restart on the same address). A port the OS handed out for a moment (listen on 0, then close) can be handed
// again to any process that binds port 0 or connects out before the hub binds it; a port below the ephemeral range is
// never handed out that way, so only another explicit pick could take it.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { pickFreeLoopbackPort } from '../../src/lib/net.ts';

/** Lowest port the picks below use. */
const FLOOR = 10_000;

/** Start of the range the OS hands out for port 0 and outgoing connections (Linux; elsewhere it lies higher). */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32_768;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free loopback port that no port-0 bind or outgoing connection can take before the hub binds it. */
export async function portForLater(): Promise<number> {
  const ceiling = ephemeralStart();
  // A system whose ephemeral range starts this low leaves nothing outside it: the plain pick is all there is.
  if (!(ceiling - FLOOR >= 1_000)) return pickFreeLoopbackPort();
  for (let i = 0; i < 100; i++) {
    const port = FLOOR + Math.floor(Math.random() * (ceiling - FLOOR));
    if (await isFree(port)) return port;
  }
  throw new Error(`no free loopback port found between ${FLOOR} and ${ceiling}`);
}
