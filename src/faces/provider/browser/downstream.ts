// The local chrome-devtools-mcp baton proxies to: how it is found, how it is started, and the loopback facts around it.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BROWSER_COMMAND_ENV = 'BATON_BROWSER_COMMAND';
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

export interface DownstreamCommand {
  file: string;
  args: string[];
  /** Where it came from, for logs and docs: flag/env, package, package-bin or npx. */
  source: 'flag' | 'env' | 'package' | 'package-bin' | 'npx';
}

/** A command given as text: a JSON argv array, or a plain command line split on whitespace (no shell). */
export function parseCommandText(text: string, what: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new Error(`${what} looks like a JSON argv array but is not valid JSON`);
    }
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((a) => typeof a === 'string' && a.length > 0)) {
      throw new Error(`${what} must be a non-empty JSON array of non-empty strings`);
    }
    return parsed as string[];
  }
  const parts = trimmed.split(/\s+/).filter(Boolean);
  if (!parts.length) throw new Error(`${what} is empty`);
  return parts;
}

/**
 * Resolution order (rule: leased-browser): --browser-command / BATON_BROWSER_COMMAND; the chrome-devtools-mcp package
 * resolvable from baton (run with this Node); baton's node_modules/.bin/chrome-devtools-mcp; `npx -y
 * chrome-devtools-mcp@latest`.
 */
export function resolveDownstreamCommand(flag: string | undefined, env = process.env): DownstreamCommand {
  if (flag) {
    const [file, ...args] = parseCommandText(flag, '--browser-command');
    return { file: file!, args, source: 'flag' };
  }
  const fromEnv = env[BROWSER_COMMAND_ENV];
  if (fromEnv?.trim()) {
    const [file, ...args] = parseCommandText(fromEnv, BROWSER_COMMAND_ENV);
    return { file: file!, args, source: 'env' };
  }
  const packaged = packageLocalBin();
  if (packaged) return { file: process.execPath, args: [packaged], source: 'package' };
  const dotBin = join(PACKAGE_ROOT, 'node_modules', '.bin', 'chrome-devtools-mcp');
  if (existsSync(dotBin)) return { file: dotBin, args: [], source: 'package-bin' };
  return { file: 'npx', args: ['-y', 'chrome-devtools-mcp@latest'], source: 'npx' };
}

function packageLocalBin(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const manifestPath = require.resolve('chrome-devtools-mcp/package.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
    const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.['chrome-devtools-mcp'];
    if (!rel) return undefined;
    const bin = join(dirname(manifestPath), rel);
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Arguments baton adds after the resolved command. `--viewport` is deliberately absent (it goes to the lease helper;
 * chrome-devtools-mcp ignores it on --browserUrl), `--allowUnrestrictedPaths` is never passed (file tools stay limited
 * to the client's roots), and page-id routing stays off: one process owns one lease, one profile, one port.
 */
export function downstreamArgs(browserUrl: string, allowedUrlPatterns: readonly string[]): string[] {
  const args = ['--browserUrl', browserUrl, '--no-page-id-routing'];
  for (const pattern of allowedUrlPatterns) args.push('--allowedUrlPattern', pattern);
  return args;
}

const BROWSER_PROBE_TIMEOUT_MS = 3_000;
const BROWSER_PROBE_MAX_BYTES = 64 * 1024;

/**
 * The identity of the browser currently answering on the leased port: the id in its DevTools WebSocket URL, unique
 * per browser process. A result produced after the id changed came from a different browser than the lease's, whatever
 * chrome-devtools-mcp's reconnect logic did. Undefined when the endpoint does not answer.
 */
export async function probeBrowserIdentity(browserUrl: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${browserUrl}/json/version`, {
      signal: AbortSignal.timeout(BROWSER_PROBE_TIMEOUT_MS),
      redirect: 'error',
    });
    if (!res.ok || !res.body) return undefined;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > BROWSER_PROBE_MAX_BYTES) return undefined;
      chunks.push(chunk);
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { webSocketDebuggerUrl?: unknown };
    if (typeof body.webSocketDebuggerUrl !== 'string') return undefined;
    const match = /\/devtools\/browser\/([^/?#]+)$/.exec(body.webSocketDebuggerUrl);
    return match?.[1];
  } catch {
    return undefined;
  }
}
