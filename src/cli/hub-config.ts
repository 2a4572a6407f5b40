// The hub config, loaded on use. faces/hub/config.ts brings zod and every agent kind's config schema (never an
// adapter), so a command imports it only inside its action: `baton mcp` and `baton attach` never read the config and
// must not pay for it at start (rule: lazy-commands).
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { HubConfig } from '../faces/hub/config.ts';
import { readListenRecord } from '../faces/hub/listen-record.ts';
import { locateConfig } from '../faces/locate.ts';
import { isObject } from '../lib/json-value.ts';
import { registerSecret } from '../lib/redact.ts';

export const hubConfigModule = () => import('../faces/hub/config.ts');

/** The config named by --config (else $BATON_CONFIG, $BATON_HOME, the per-user dir), as every command finds it. */
export async function loadHubConfig(flag: string | undefined): Promise<HubConfig> {
  const { loadConfig } = await hubConfigModule();
  return loadConfig(locateConfig({ flag }));
}

/**
 * Where the running hub listens and its control token: all that `health`, `stop`, `tasks` and `ui` need. `listen` is
 * the address the running hub recorded in its state dir (it may have been started with --port), else the config's.
 */
export type HubAddress = Pick<HubConfig, 'listen' | 'control'>;

/** The config's address with the running hub's recorded one in its place, when there is one. */
export function runningAddress<T extends HubAddress>(cfg: T, stateDir: string): T {
  const rec = readListenRecord(stateDir);
  return rec ? { ...cfg, listen: { host: rec.host, port: rec.port } } : cfg;
}

/**
 * The running hub's address from the config, read without its schema: zod and the agent kinds' schemas would cost a
 * command that only talks to the hub most of its start-up, and the hub checked the whole config when it started. Only
 * a plainly well-formed `listen` and `control` are taken this way; anything else (a missing or unreadable file, a
 * default left out, a bad value, an unknown key there) goes through the full load, so its error is the config's usual
 * one (rule: lazy-commands).
 */
export async function loadHubAddress(flag: string | undefined): Promise<HubAddress> {
  const loc = locateConfig({ flag });
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(loc.configPath, 'utf8'));
  } catch {
    raw = undefined;
  }
  const address = plainAddress(raw);
  if (!address) {
    const cfg = (await hubConfigModule()).loadConfig(loc);
    return runningAddress(cfg, cfg.stateDirPath);
  }
  // As the full load does: the tokens never appear in what a command prints.
  registerSecret(address.control.token);
  const callers = (raw as { callers?: unknown }).callers;
  if (isObject(callers)) for (const c of Object.values(callers)) if (isObject(c)) registerSecret(stringOr(c.token));
  // As the full load resolves it: `stateDir` relative to the config's dir, else the location's default.
  const stateDir = stringOr((raw as { stateDir?: unknown }).stateDir);
  return runningAddress(address, stateDir ? resolve(dirname(loc.configPath), stateDir) : loc.stateDir);
}

function plainAddress(raw: unknown): HubAddress | undefined {
  if (!isObject(raw) || raw.version !== 1) return undefined;
  const { listen, control } = raw;
  if (!isObject(listen) || !hasOnlyKeys(listen, ['host', 'port']) || !isObject(control)) return undefined;
  if (!hasOnlyKeys(control, ['token'])) return undefined;
  const { host, port } = listen;
  const { token } = control;
  if (typeof host !== 'string' || !host || !Number.isInteger(port) || (port as number) < 0 || (port as number) > 65535)
    return undefined;
  if (typeof token !== 'string' || token.length < 32 || token.length > 512) return undefined;
  return { listen: { host, port: port as number }, control: { token } };
}

const stringOr = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const hasOnlyKeys = (o: Record<string, unknown>, keys: string[]): boolean =>
  Object.keys(o).length === keys.length && keys.every((k) => Object.hasOwn(o, k));
