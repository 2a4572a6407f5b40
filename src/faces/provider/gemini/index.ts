// `baton mcp --provider gemini` (rule: gemini-provider): one blocking tool, `gemini {prompt, cwd?}`. The CLI always
// runs with its sandbox on; the sandbox mode is the operator's choice for the whole server (--gemini-sandbox), never a
// per-call one.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { z } from 'zod';
import { GEMINI_SANDBOX_MODES, GeminiAgent, type GeminiSandboxMode } from '../../../agents/gemini/agent.ts';
import { createLogger, isLogLevel, type LogLevel } from '../../../lib/log.ts';
import { ensurePrivateDir } from '../../../lib/private-fs.ts';
import { redact } from '../../../lib/redact.ts';
import { providerTarget } from '../fence.ts';
import { defineProviderTool, serveProviderStdio, ToolFailure } from '../stdio-server.ts';

/** Default bound of one `gemini` call (a 360 s client tool timeout fits it). */
export const DEFAULT_GEMINI_TIMEOUT_S = 300;
const MAX_PROMPT_CHARS = 1_000_000;
const MAX_PATH_CHARS = 4_096;

interface GeminiProviderFlags {
  timeout: number;
  model?: string;
  geminiCommand: string[];
  geminiSandbox: GeminiSandboxMode;
  stateDir?: string;
  logLevel: LogLevel;
}

function flagsCommand(): Command {
  const program = new Command('baton mcp --provider gemini')
    .exitOverride()
    .option('--timeout <seconds>', 'bound of one gemini call', positiveSeconds, DEFAULT_GEMINI_TIMEOUT_S)
    .option('--model <model>', 'Gemini model for every call (default: the CLI chooses)')
    .option(
      '--gemini-command <command>',
      'the Gemini CLI (or a compatible `agy`): a command name or a JSON argv array',
      commandArgv,
      commandArgv(process.env.BATON_GEMINI_COMMAND || 'gemini'),
    )
    .option(
      '--gemini-sandbox <mode>',
      `sandbox mode for every call: ${GEMINI_SANDBOX_MODES.join(', ')} ("external": baton already runs inside a sandbox you provide)`,
      sandboxMode,
      'auto' as GeminiSandboxMode,
    )
    .option('--state-dir <dir>', 'where the private Gemini home lives (default: a temp dir removed at exit)')
    .option('--log-level <level>', 'debug, info, warn or error', logLevel, 'warn' as LogLevel);
  return program;
}

/** The provider's flags as `--help` shows them; `baton mcp --help` lists every provider's. */
export function help(): string {
  return flagsCommand().helpInformation();
}

function parseFlags(argv: string[]): GeminiProviderFlags {
  const program = flagsCommand();
  program.parse(argv, { from: 'user' });
  return program.opts<GeminiProviderFlags>();
}

export async function run(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  const logger = createLogger({ level: flags.logLevel, component: 'provider-gemini' });
  const ownsStateDir = flags.stateDir === undefined;
  const stateDir = flags.stateDir
    ? ensurePrivateDir(resolve(flags.stateDir))
    : mkdtempSync(join(tmpdir(), 'baton-gemini-'));
  const agent = new GeminiAgent('gemini', {
    command: flags.geminiCommand,
    model: flags.model,
    sandboxMode: flags.geminiSandbox,
    homeDir: join(stateDir, 'gemini-home'),
    logger,
    target: providerTarget('gemini'),
  });
  const timeoutMs = flags.timeout * 1000;
  if (flags.geminiSandbox === 'external') {
    logger.warn('gemini runs with --gemini-sandbox external: the operator vouches for the sandbox around baton');
  }

  const gemini = defineProviderTool({
    name: 'gemini',
    description:
      'Ask the Gemini CLI and wait for its answer. It always runs in its sandbox; model and sandbox are fixed by the ' +
      'server and other arguments are ignored.',
    input: z.object({
      prompt: z.string().min(1).max(MAX_PROMPT_CHARS).describe('the full prompt'),
      cwd: z.string().min(1).max(MAX_PATH_CHARS).optional().describe('working directory (default: server cwd)'),
    }),
    async handler(args, ctx) {
      const cwd = existingDir(args.cwd ? resolve(args.cwd) : process.cwd());
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
      const startedAt = Date.now();
      ctx.progress('Gemini: started');
      const heartbeat = setInterval(
        () => ctx.progress(`Gemini: still running (${Math.round((Date.now() - startedAt) / 1000)} s)`),
        10_000,
      );
      try {
        const res = await agent.runBlocking(args.prompt, { cwd, signal, onProcessGroup: ctx.trackGroup });
        if (res.ok) return { content: [{ type: 'text', text: redact(res.text) }] };
        if (res.cancelled && !ctx.signal.aborted) {
          throw new ToolFailure(`Gemini did not finish within ${flags.timeout} s`);
        }
        throw new ToolFailure(res.error, res.sandboxFailure ? { code: 'sandbox_unavailable' } : undefined);
      } finally {
        clearInterval(heartbeat);
      }
    },
  });

  await serveProviderStdio({
    provider: 'gemini',
    version: '0.1.0',
    tools: [gemini],
    logger,
    onExit: () => {
      if (ownsStateDir) rmSync(stateDir, { recursive: true, force: true });
    },
  });
}

function existingDir(dir: string): string {
  try {
    if (statSync(dir).isDirectory()) return dir;
  } catch {}
  throw new ToolFailure(`cwd ${JSON.stringify(dir)} is not an existing directory`);
}

/** A command name, or a JSON array of strings for a command with fixed leading arguments. */
function commandArgv(value: string): string[] {
  const trimmed = value.trim();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      throw new InvalidArgumentError('expected a JSON array of strings');
    }
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((s) => typeof s === 'string' && s)) {
      throw new InvalidArgumentError('expected a non-empty JSON array of strings');
    }
    return parsed as string[];
  }
  if (!trimmed) throw new InvalidArgumentError('expected a command');
  return [trimmed];
}

function sandboxMode(value: string): GeminiSandboxMode {
  if (!(GEMINI_SANDBOX_MODES as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`expected one of ${GEMINI_SANDBOX_MODES.join(', ')}`);
  }
  return value as GeminiSandboxMode;
}

function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return n;
}

function logLevel(value: string): LogLevel {
  if (!isLogLevel(value)) throw new InvalidArgumentError('expected debug, info, warn or error');
  return value;
}
