// `baton mcp --provider browser`: stdio MCP proxy to a local chrome-devtools-mcp driving a leased remote Chrome (rule:
// leased-browser).
import { randomBytes } from 'node:crypto';
import { Command, InvalidArgumentError } from 'commander';
import { createLogger, isLogLevel, type LogLevel } from '../../../lib/log.ts';
import { resolveDownstreamCommand } from './downstream.ts';
import { DEFAULT_ACQUIRE_TIMEOUT_MS, parseLeaseCommand } from './lease-helper.ts';
import { BrowserProxy } from './proxy.ts';

export const DEFAULT_VIEWPORT = '1280x720';
/** Idle release after this long without a downstream frame (and no browser call in flight). */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 600;
const MAX_TIMEOUT_SECONDS = 7 * 24 * 3600;

interface BrowserFlags {
  browserLeaseCommand?: string;
  browserCommand?: string;
  viewport: string;
  appPort?: number;
  browserAllowedUrlPattern: string[];
  browserIdleTimeout: number;
  browserAcquireTimeout: number;
  logLevel: string;
}

/**
 * The snake_case spellings of earlier releases, kept as documented aliases of the kebab-case flags (rule:
 * operator-cli): `--browser_lease_command x` and `--browser_lease_command=x` both still work.
 */
const SNAKE_ALIASES = [
  'browser_lease_command',
  'browser_command',
  'browser_allowed_url_pattern',
  'browser_idle_timeout',
  'browser_acquire_timeout',
];

function kebabAliases(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const m = /^--([a-z_]+)(=.*)?$/s.exec(arg);
    return m && SNAKE_ALIASES.includes(m[1]!) ? `--${m[1]!.replaceAll('_', '-')}${m[2] ?? ''}` : arg;
  });
}

export async function run(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  const level: LogLevel = isLogLevel(flags.logLevel) ? flags.logLevel : 'info';
  const log = createLogger({ level, component: 'browser' });
  const proxy = new BrowserProxy({
    leaseCommand: flags.browserLeaseCommand ? parseLeaseCommand(flags.browserLeaseCommand) : undefined,
    downstream: resolveDownstreamCommand(flags.browserCommand),
    viewport: flags.viewport,
    appPort: flags.appPort,
    allowedUrlPatterns: flags.browserAllowedUrlPattern,
    idleTimeoutMs: Math.round(flags.browserIdleTimeout * 1000),
    acquireTimeoutMs: Math.round(flags.browserAcquireTimeout * 1000),
    sessionId: `baton-${process.pid}-${randomBytes(6).toString('hex')}`,
    input: process.stdin,
    output: process.stdout,
    log,
  });

  // Keeps Node alive while stdin's EOF races the children's handles; cleared once every child is reaped.
  const keepalive = setInterval(() => {}, 1 << 30);
  const stop = () => void proxy.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.on('error', stop);
  try {
    await proxy.start();
  } catch (err) {
    await proxy.shutdown();
    clearInterval(keepalive);
    throw err;
  }
  process.stderr.write('[baton] ready (provider: browser)\n');
  await proxy.closed;
  clearInterval(keepalive);
  process.exit(0);
}

function flagsCommand(): Command {
  const program = new Command('baton mcp --provider browser')
    .description('Proxy chrome-devtools-mcp to a remote Chrome leased through an operator-supplied helper.')
    .option(
      '--browser-lease-command <json>',
      'lease helper argv as a JSON array, e.g. \'["bin/box","--browser"]\' (alias --browser_lease_command)',
    )
    .option(
      '--browser-command <command>',
      'chrome-devtools-mcp command (string or JSON argv); also BATON_BROWSER_COMMAND (alias --browser_command)',
    )
    .option(
      '--viewport <WxH>',
      'window size the lease helper gives the remote Chromium',
      parseViewport,
      DEFAULT_VIEWPORT,
    )
    .option(
      '--app-port <port>',
      'local port of the app under test, passed to the helper for a reverse tunnel',
      parsePort,
    )
    .option(
      '--browser-allowed-url-pattern <pattern>',
      'only allow these URL patterns in the browser (repeatable; passed as --allowedUrlPattern) (alias --browser_allowed_url_pattern)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      '--browser-idle-timeout <seconds>',
      'release the lease after this much inactivity (0 = never) (alias --browser_idle_timeout)',
      parseSeconds,
      DEFAULT_IDLE_TIMEOUT_SECONDS,
    )
    .option(
      '--browser-acquire-timeout <seconds>',
      'bound on one acquire run of the lease helper (alias --browser_acquire_timeout)',
      parseSeconds,
      DEFAULT_ACQUIRE_TIMEOUT_MS / 1000,
    )
    .option('--log-level <level>', 'debug, info, warn or error', 'info')
    .exitOverride()
    .allowExcessArguments(false);
  return program;
}

/** The provider's flags as `--help` shows them; `baton mcp --help` lists every provider's. */
export function help(): string {
  return flagsCommand().helpInformation();
}

function parseFlags(argv: string[]): BrowserFlags {
  const program = flagsCommand();
  program.parse(kebabAliases(argv), { from: 'user' });
  return program.opts<BrowserFlags>();
}

function parseViewport(value: string): string {
  const m = /^(\d{2,5})x(\d{2,5})$/.exec(value);
  if (!m || Number(m[1]) < 100 || Number(m[2]) < 100 || Number(m[1]) > 16384 || Number(m[2]) > 16384) {
    throw new InvalidArgumentError('expected WIDTHxHEIGHT in pixels, e.g. 1280x720 (each 100-16384)');
  }
  return value;
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n < 1 || n > 65535) throw new InvalidArgumentError('expected a port 1-65535');
  return n;
}

function parseSeconds(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(n >= 0) || n > MAX_TIMEOUT_SECONDS) {
    throw new InvalidArgumentError(`expected seconds, 0-${MAX_TIMEOUT_SECONDS}`);
  }
  return n;
}
