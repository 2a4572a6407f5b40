// `baton mcp --provider claude` (rule: claude-reviewer): Claude Code as an isolated leaf reviewer. One blocking tool
// for small prompts (`claude_code`) and connection-scoped background reviews (`claude-start` / `-status` / `-result` /
// `-cancel`). Model and effort are the operator's; only sanitised phase status and the final verdict cross MCP.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { z } from 'zod';
import { ClaudeAgent } from '../../../agents/claude/agent.ts';
import { CLAUDE_EFFORTS, HIGHEST_CLAUDE_EFFORT, STRONGEST_CLAUDE_MODEL } from '../../../agents/claude/policy.ts';
import { callerBound } from '../../../core/deadlines.ts';
import { JobTable, MAX_STATUS_WAIT_MS } from '../../../core/jobs.ts';
import { createLogger, isLogLevel, type LogLevel } from '../../../lib/log.ts';
import { ensurePrivateDir } from '../../../lib/private-fs.ts';
import { redact } from '../../../lib/redact.ts';
import { providerTarget } from '../fence.ts';
import { jobTaskBackend } from '../job-tasks.ts';
import { defineProviderTool, serveProviderStdio, structuredResult, ToolFailure } from '../stdio-server.ts';

/** Default bound of a blocking `claude_code` call, sized for deep reviews (a 960 s client timeout fits it). */
export const DEFAULT_BLOCKING_TIMEOUT_S = 900;
/** Default hard deadline of a background review. */
export const DEFAULT_JOB_TIMEOUT_S = 2 * 60 * 60;
/** A status read waits this long for news unless the caller says otherwise. */
export const DEFAULT_STATUS_WAIT_MS = 10_000;
/** Bounded input (rule: strict-inputs): a prompt, a path. */
const MAX_PROMPT_CHARS = 1_000_000;
const MAX_PATH_CHARS = 4_096;
const MAX_ID_CHARS = 128;

interface ClaudeProviderFlags {
  timeout?: number;
  model: string;
  effort: string;
  claudeCommand: string;
  stateDir?: string;
  logLevel: LogLevel;
}

function flagsCommand(): Command {
  const program = new Command('baton mcp --provider claude')
    .exitOverride()
    .option(
      '--timeout <seconds>',
      `bound of claude_code calls (default ${DEFAULT_BLOCKING_TIMEOUT_S}) and hard deadline of background reviews (default ${DEFAULT_JOB_TIMEOUT_S})`,
      positiveSeconds,
    )
    .option('--model <model>', 'Claude model for every run (the strongest by default)', STRONGEST_CLAUDE_MODEL)
    .option(
      '--effort <level>',
      `effort for every run: ${CLAUDE_EFFORTS.join(', ')}`,
      effortLevel,
      HIGHEST_CLAUDE_EFFORT,
    )
    .option('--claude-command <path>', 'the claude binary', process.env.BATON_CLAUDE_COMMAND || 'claude')
    .option('--state-dir <dir>', 'where the private Claude config dir lives (default: a temp dir removed at exit)')
    .option('--log-level <level>', 'debug, info, warn or error', logLevel, 'warn' as LogLevel);
  return program;
}

/** The provider's flags as `--help` shows them; `baton mcp --help` lists every provider's. */
export function help(): string {
  return flagsCommand().helpInformation();
}

function parseFlags(argv: string[]): ClaudeProviderFlags {
  const program = flagsCommand();
  program.parse(argv, { from: 'user' });
  return program.opts<ClaudeProviderFlags>();
}

export async function run(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  const logger = createLogger({ level: flags.logLevel, component: 'provider-claude' });
  const ownsStateDir = flags.stateDir === undefined;
  const stateDir = flags.stateDir
    ? ensurePrivateDir(resolve(flags.stateDir))
    : mkdtempSync(join(tmpdir(), 'baton-claude-'));
  const agent = new ClaudeAgent('claude', {
    command: flags.claudeCommand,
    model: flags.model,
    effort: flags.effort,
    policy: 'reviewer',
    homeDir: join(stateDir, 'claude-config'),
    logger,
    target: providerTarget('claude'),
  });
  const blockingTimeoutMs = (flags.timeout ?? DEFAULT_BLOCKING_TIMEOUT_S) * 1000;
  const jobs = new JobTable({ hardDeadlineMs: (flags.timeout ?? DEFAULT_JOB_TIMEOUT_S) * 1000, logger });

  const jobId = z.string().min(1).max(MAX_ID_CHARS);
  const tools = [
    defineProviderTool({
      name: 'claude_code',
      description:
        'Ask Claude Code (an isolated, read-only leaf reviewer) a small question and wait for the answer. For deep ' +
        'reviews use claude-start. Model and effort are fixed by the server; other arguments are ignored.',
      input: z.object({
        prompt: z.string().min(1).max(MAX_PROMPT_CHARS).describe('the full prompt'),
        cwd: z.string().min(1).max(MAX_PATH_CHARS).optional().describe('directory to review (default: server cwd)'),
        timeout_ms: z.number().int().positive().optional().describe('a shorter bound than the server default'),
      }),
      async handler(args, ctx) {
        const cwd = existingDir(args.cwd ? resolve(args.cwd) : process.cwd());
        const bound = callerBound(blockingTimeoutMs, args.timeout_ms);
        const stop = AbortSignal.any([ctx.signal, AbortSignal.timeout(bound)]);
        const startedAt = Date.now();
        ctx.progress('Claude: started');
        const heartbeat = setInterval(
          () => ctx.progress(`Claude: still running (${Math.round((Date.now() - startedAt) / 1000)} s)`),
          10_000,
        );
        try {
          const res = await agent.runBlocking(args.prompt, { cwd, signal: stop, onProcessGroup: ctx.trackGroup });
          if (res.ok) return { content: [{ type: 'text', text: redact(res.text) }] };
          if (res.cancelled && !ctx.signal.aborted) {
            throw new ToolFailure(
              `Claude did not finish within ${Math.round(bound / 1000)} s; use claude-start for long reviews`,
            );
          }
          throw new ToolFailure(res.error);
        } finally {
          clearInterval(heartbeat);
        }
      },
    }),
    defineProviderTool({
      name: 'claude-start',
      description:
        'Start a background review by Claude Code (isolated, read-only leaf reviewer). Returns {jobId, cursor}; poll ' +
        'claude-status with them until the state is terminal, then read claude-result. Jobs end with this connection.',
      input: z.object({
        prompt: z.string().min(1).max(MAX_PROMPT_CHARS).describe('the full review prompt'),
        cwd: z
          .string()
          .min(1)
          .max(MAX_PATH_CHARS)
          .refine(isAbsolute, 'cwd must be an absolute path')
          .describe('absolute path of the directory to review'),
      }),
      async handler(args) {
        const cwd = existingDir(args.cwd);
        const started = jobs.start({ agent, prompt: args.prompt, cwd, sandbox: 'read-only', label: 'Claude' });
        return structuredResult(started);
      },
    }),
    defineProviderTool({
      name: 'claude-status',
      description:
        'State of a background review. Returns at once when something happened after `cursor`, else waits up to ' +
        '`wait_ms` (default 10 s, at most 60 s). Pass the returned cursor to the next call. Cancelling this wait does ' +
        'not cancel the review.',
      input: z.object({
        jobId,
        cursor: z.number().int().min(0),
        wait_ms: z.number().int().min(0).max(MAX_STATUS_WAIT_MS).optional(),
      }),
      async handler(args, ctx) {
        const view = await jobs.status(args.jobId, args.cursor, args.wait_ms ?? DEFAULT_STATUS_WAIT_MS, ctx.signal);
        return structuredResult({ ...view });
      },
    }),
    defineProviderTool({
      name: 'claude-result',
      description:
        'The verdict of a completed review, in pages of 32,768 Unicode code points. Continue with nextOffset until ' +
        'done is true.',
      input: z.object({ jobId, offset: z.number().int().min(0).optional() }),
      async handler(args) {
        const page = jobs.result(args.jobId, args.offset ?? 0);
        return structuredResult({ ...page }, page.text);
      },
    }),
    defineProviderTool({
      name: 'claude-cancel',
      description: 'Cancel a background review that is no longer needed; returns its final status.',
      input: z.object({ jobId }),
      async handler(args) {
        const view = await jobs.cancel(args.jobId);
        return structuredResult({ ...view });
      },
    }),
  ];

  await serveProviderStdio({
    provider: 'claude',
    version: '0.1.0',
    tools,
    // claude_code as an MCP Task runs as the job claude-start would run, under the job deadline.
    tasks: jobTaskBackend(jobs, {
      claude_code: {
        start: (args: { prompt: string; cwd?: string }) =>
          jobs.start({
            agent,
            prompt: args.prompt,
            cwd: existingDir(args.cwd ? resolve(args.cwd) : process.cwd()),
            sandbox: 'read-only',
            label: 'Claude',
          }),
        answer: (_jobId, text) => ({ content: [{ type: 'text', text }] }),
      },
    }),
    logger,
    onShutdown: () => jobs.closeAll(),
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

function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return n;
}

function effortLevel(value: string): string {
  if (!(CLAUDE_EFFORTS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`expected one of ${CLAUDE_EFFORTS.join(', ')}`);
  }
  return value;
}

function logLevel(value: string): LogLevel {
  if (!isLogLevel(value)) throw new InvalidArgumentError('expected debug, info, warn or error');
  return value;
}
