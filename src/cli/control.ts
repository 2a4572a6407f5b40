// The CLI's requests to the running hub's control endpoint: `stop`, `health`, `tasks`, `ui` and `start` use these.
import type { IncomingMessage } from 'node:http';
import { readBodyText } from '../lib/net.ts';
import type { HubAddress } from './hub-config.ts';

/** What the CLI reads of a control answer. */
export interface ControlResponse {
  status: number;
  ok: boolean;
  /** The body parsed as JSON (rejects when it is not JSON). */
  json(): Promise<unknown>;
}

/** Largest control answer the CLI reads; a page of tasks or events is far smaller. */
const MAX_CONTROL_BODY_BYTES = 64 * 1024 * 1024;

/**
 * A request to the hub's control endpoint with the control token from the config (never printed). node:http taken
 * with process.getBuiltinModule, not fetch and not an ESM `import`: both load Node's bundled undici (an ESM import
 * of node:http reads every export, WebSocket's lazy getter included), which costs a short command about as much CPU
 * as the rest of its work. One connection, closed after the answer; no redirect is followed; `timeoutMs` bounds the
 * whole exchange.
 */
export async function control(
  cfg: HubAddress,
  method: string,
  path: string,
  timeoutMs = 5_000,
): Promise<ControlResponse> {
  const host = cfg.listen.host === '0.0.0.0' ? '127.0.0.1' : cfg.listen.host;
  const { request } = process.getBuiltinModule('node:http');
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({
      host,
      port: cfg.listen.port,
      path,
      method,
      headers: { authorization: `Bearer ${cfg.control.token}` },
      agent: false,
      signal: AbortSignal.timeout(timeoutMs),
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
  const text = await readBodyText(res, MAX_CONTROL_BODY_BYTES);
  if (text === null) throw new Error(`the hub's answer to ${method} ${path} exceeds ${MAX_CONTROL_BODY_BYTES} bytes`);
  const status = res.statusCode ?? 0;
  return { status, ok: status >= 200 && status < 300, json: async () => JSON.parse(text) };
}

export async function healthOf(cfg: HubAddress): Promise<{ pid: number } & Record<string, unknown>> {
  const res = await control(cfg, 'GET', '/control/health');
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as { pid: number };
}
