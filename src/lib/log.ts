// Structured JSON-lines logs (rule: structured-logs) to stderr and optionally a file in the state dir; always redacted.
import { appendFileSync, openSync } from 'node:fs';
import { redact } from './redact.ts';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function isLogLevel(v: string): v is LogLevel {
  return v in ORDER;
}

export function createLogger(
  opts: { level?: LogLevel; file?: string; stderr?: boolean; component?: string } = {},
): Logger {
  const min = ORDER[opts.level ?? 'info'];
  let fd: number | undefined;
  if (opts.file) fd = openSync(opts.file, 'a', 0o600);
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    const line = redact(
      JSON.stringify({ time: new Date().toISOString(), level, component: opts.component, msg, ...fields }),
    );
    if (opts.stderr !== false) process.stderr.write(`${line}\n`);
    if (fd !== undefined) {
      // A full disk must not turn logging into a crash: the line still went to stderr (when enabled).
      try {
        appendFileSync(fd, `${line}\n`);
      } catch {}
    }
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
