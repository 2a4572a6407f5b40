// `baton mcp --provider codex` (rule: codex-provider), the default provider: the mcp-agents `codex` / `codex-reply`
// contract plus background jobs. One `codex --version` probe picks the path: Codex ≥ 0.154 (or an unparsable version)
// is served over `codex app-server`; older Codex through a byte-for-byte passthrough to its own `codex mcp-server`.
import { randomBytes } from 'node:crypto';
import { readFileSync, realpathSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { type CodexModelProvider, codexModelProviderSchema } from '../../../agents/codex/config.ts';
import { codexChildEnv } from '../../../agents/codex/env.ts';
import { codexSandboxHelperProblem } from '../../../codex/sandbox-helper.ts';
import { type CodexVersion, parseCodexVersion, readCodexVersionOutput } from '../../../codex/version.ts';
import { findAgentBinary } from '../../../lib/agent-path.ts';
import { captureCommand } from '../../../lib/capture.ts';
import { createLogger, isLogLevel, type Logger, type LogLevel } from '../../../lib/log.ts';
import { redact } from '../../../lib/redact.ts';
import { providerTarget } from '../fence.ts';
import {
  type CodexHomeSettings,
  codexHomesRoot,
  isAppServerCodex,
  prepareProviderHome,
  userWantsFastMode,
  wantsAgentsTable,
} from './home.ts';
import { APPROVAL_POLICIES, CODEX_EFFORTS, DEFAULT_CURATED_MODELS, SANDBOX_MODES } from './schemas.ts';
import { ThreadRecords } from './threads.ts';

/** Defaults of the operator flags (seconds). */
export const DEFAULT_IDLE_TIMEOUT_S = 600;
export const DEFAULT_HARD_TIMEOUT_S = 7_200;
export const DEFAULT_CANCEL_GRACE_S = 30;
export const DEFAULT_STATUS_INTERVAL_S = 30;
export const DEFAULT_PROGRESS_HEARTBEAT_S = 10;
export const DEFAULT_EFFORT = 'xhigh';
const VERSION_PROBE_TIMEOUT_MS = 20_000;
/** `codex --version` prints one short line; anything past this is not a version. */
const VERSION_PROBE_MAX_CHARS = 4096;

export interface CodexProviderFlags {
  codexCommand: string;
  model: string;
  modelReasoningEffort: string;
  codexModels: [string, ...string[]];
  sandboxMode: string;
  approvalPolicy: string;
  goal?: string;
  codexWorkspaceNetwork?: boolean;
  codexIdleTimeout: number;
  timeout: number;
  codexCancelGrace: number;
  codexStatusInterval: number;
  codexProgressHeartbeat: number;
  codexModelProvider?: CodexModelProvider;
  codexTerminalGrace: number;
  codexMaxSuppressed?: number;
  userCodexHome?: string;
  logLevel: LogLevel;
}

/** The seed spells flags both ways (`--codex_idle_timeout`, `--codex-cancel-grace`): accept either. */
export function normaliseFlagSpelling(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const m = /^--([A-Za-z0-9_-]+)(=.*)?$/s.exec(arg);
    return m ? `--${m[1]!.replaceAll('_', '-')}${m[2] ?? ''}` : arg;
  });
}

function flagsCommand(): Command {
  const seconds = (allowZero: boolean) => (value: string) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
      throw new InvalidArgumentError(allowZero ? 'expected seconds ≥ 0' : 'expected seconds > 0');
    return n;
  };
  const oneOf = (values: readonly string[]) => (value: string) => {
    if (!values.includes(value)) throw new InvalidArgumentError(`expected one of ${values.join(', ')}`);
    return value;
  };
  const program = new Command('baton mcp --provider codex')
    .exitOverride()
    .option('--codex-command <path>', 'the codex binary', process.env.BATON_CODEX_COMMAND || 'codex')
    .option('--model <model>', 'model of new sessions when the caller picks none', DEFAULT_CURATED_MODELS[0])
    .option(
      '--model-reasoning-effort <effort>',
      `effort of new sessions when the caller picks none: ${CODEX_EFFORTS.join(', ')}`,
      oneOf(CODEX_EFFORTS),
      DEFAULT_EFFORT,
    )
    .option(
      '--codex-models <a,b>',
      'the two models callers may pick',
      (v: string) => {
        const list = v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        if (list.length !== 2) throw new InvalidArgumentError('expected exactly two comma-separated models');
        return list;
      },
      [...DEFAULT_CURATED_MODELS],
    )
    .option('--sandbox-mode <mode>', 'default sandbox of the isolated config', oneOf(SANDBOX_MODES), 'workspace-write')
    .option('--approval-policy <policy>', 'approval policy of every session', oneOf(APPROVAL_POLICIES), 'never')
    .option('--goal <text>', 'default goal of new sessions (developer instructions)')
    .option('--codex-workspace-network [bool]', 'network access for workspace-write sessions (default true)', (v) => {
      if (v === 'true') return true;
      if (v === 'false') return false;
      throw new InvalidArgumentError('expected true or false');
    })
    .option('--codex-idle-timeout <seconds>', 'per-call idle deadline, 0 = off', seconds(true), DEFAULT_IDLE_TIMEOUT_S)
    .option('--timeout <seconds>', 'hard deadline of every Codex call and job', seconds(false), DEFAULT_HARD_TIMEOUT_S)
    .option(
      '--codex-cancel-grace <seconds>',
      'how long Codex may take to confirm a cancel',
      seconds(false),
      DEFAULT_CANCEL_GRACE_S,
    )
    .option(
      '--codex-status-interval <seconds>',
      'codex-status cursor advances at most this often for intermediate progress; 0 = every change',
      seconds(true),
      DEFAULT_STATUS_INTERVAL_S,
    )
    .option(
      '--codex-progress-heartbeat <seconds>',
      '"Codex: still running" progress during silence',
      seconds(false),
      DEFAULT_PROGRESS_HEARTBEAT_S,
    )
    .option('--codex-model-provider <json>', 'a model provider table for the isolated config (JSON)', (v) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(v);
      } catch {
        throw new InvalidArgumentError('expected JSON');
      }
      const res = codexModelProviderSchema.safeParse(parsed);
      if (!res.success) throw new InvalidArgumentError(res.error.issues.map((i) => i.message).join('; '));
      return res.data;
    })
    .option(
      '--codex-terminal-grace <seconds>',
      'legacy path: how long after task completion Codex may take to answer before the bridge answers for it',
      seconds(false),
      5,
    )
    .option(
      '--codex-max-suppressed <n>',
      'legacy path: late responses pending suppression before the bridge ends',
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
        return n;
      },
    )
    .option('--user-codex-home <dir>', "the user's Codex home (auth.json, Fast mode); default $CODEX_HOME or ~/.codex")
    .option('--log-level <level>', 'debug, info, warn or error', logLevel, 'warn' as LogLevel);
  return program;
}

/** The provider's flags as `--help` shows them; `baton mcp --help` lists every provider's. */
export function help(): string {
  return flagsCommand().helpInformation();
}

export function parseFlags(argv: string[]): CodexProviderFlags {
  const program = flagsCommand();
  program.parse(normaliseFlagSpelling(argv), { from: 'user' });
  return program.opts<CodexProviderFlags>();
}

/** Workspace network: on by default; the flag wins over BATON_CODEX_WORKSPACE_NETWORK_ACCESS. */
export function workspaceNetwork(flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  if (flag !== undefined) return flag;
  return env.BATON_CODEX_WORKSPACE_NETWORK_ACCESS?.trim().toLowerCase() !== 'false';
}

/** The `codex` command as argv: a `.js` entry point runs under this Node. */
export function codexArgv(command: string): string[] {
  return /\.[cm]?js$/.test(command) ? [process.execPath, command] : [command];
}

/**
 * The version of an npm-installed Codex read from its package.json, when `command` is (a link to) the npm launcher
 * `<@openai/codex>/bin/codex.js`: that package pins its native binary to its own version, so this is what
 * `codex --version` would print, without starting a Node launcher and Codex during the provider's start.
 * Null for anything else (a native binary, a wrapper script, a fake), which is then asked with --version.
 */
export function npmCodexVersion(command: string[]): CodexVersion | null {
  try {
    const script = command.length === 1 ? findAgentBinary(command[0]!) : command[1];
    if (!script || command.length > 2 || (command.length === 2 && command[0] !== process.execPath)) return null;
    const real = realpathSync(script);
    if (!real.endsWith('/bin/codex.js')) return null;
    const pkg = JSON.parse(readFileSync(join(dirname(dirname(real)), 'package.json'), 'utf8')) as {
      name?: unknown;
      version?: unknown;
    };
    return pkg.name === '@openai/codex' && typeof pkg.version === 'string' ? parseCodexVersion(pkg.version) : null;
  } catch {
    return null;
  }
}

/**
 * `codex --version` once; null when it cannot be read (treated as current). Its environment is the Codex child
 * allowlist like every other Codex child (no BATON_* variable); CODEX_HOME stays the user's, as an inherited
 * environment had it, since no isolated home exists before the version picks the path.
 */
export async function probeCodexVersion(
  command: string[],
  logger: Logger,
  home: { userCodexHome: string; modelProvider?: CodexModelProvider },
): Promise<CodexVersion | null> {
  const env = codexChildEnv(home.modelProvider ? { modelProvider: home.modelProvider } : {}, home.userCodexHome);
  const { stdout } = await captureCommand([...command, '--version'], {
    env,
    timeoutMs: VERSION_PROBE_TIMEOUT_MS,
    maxChars: VERSION_PROBE_MAX_CHARS,
  });
  const { text, version } = readCodexVersionOutput(stdout);
  if (!version)
    logger.warn('codex --version was not readable; assuming a current Codex', { output: text.slice(0, 64) });
  return version;
}

export async function run(argv: string[]): Promise<void> {
  const flags = parseFlags(argv);
  const logger = createLogger({ level: flags.logLevel, component: 'provider-codex' });
  const launchDir = process.cwd();
  const command = codexArgv(flags.codexCommand);
  const userCodexHome = flags.userCodexHome ?? process.env.CODEX_HOME ?? join(homedir(), '.codex');
  const installed = npmCodexVersion(command);
  const probe = installed
    ? Promise.resolve(installed)
    : probeCodexVersion(command, logger, {
        userCodexHome,
        ...(flags.codexModelProvider ? { modelProvider: flags.codexModelProvider } : {}),
      });
  // The server's modules (and the MCP SDK under them) load while `codex --version` runs in its own process: start-up
  // pays for the slower of the two, not their sum. The legacy bridge is loaded only for a legacy Codex.
  const modules = Promise.all([import('../stdio-server.ts'), import('./app-server.ts')]);
  modules.catch(() => {});
  const version = await probe;
  const [{ serveProviderStdio }, { appServerTools }] = await modules;
  const settings: CodexHomeSettings = {
    model: flags.model,
    effort: flags.modelReasoningEffort,
    sandboxMode: flags.sandboxMode,
    approvalPolicy: flags.approvalPolicy,
    workspaceNetwork: workspaceNetwork(flags.codexWorkspaceNetwork),
    fastMode: userWantsFastMode(userCodexHome),
    version,
    ...(flags.codexModelProvider ? { modelProvider: flags.codexModelProvider } : {}),
  };
  const root = codexHomesRoot(launchDir);
  if (settings.sandboxMode !== 'danger-full-access') {
    const problem = codexSandboxHelperProblem(
      root,
      codexChildEnv(settings.modelProvider ? { modelProvider: settings.modelProvider } : {}, root),
    );
    if (problem) logger.warn(`codex: ${problem}`);
  }
  // Every Codex that gets a prompt runs behind the secrets fence; the version probe above needs none.
  const target = providerTarget('codex');
  const limits = {
    idleMs: flags.codexIdleTimeout * 1000,
    hardMs: flags.timeout * 1000,
    cancelGraceMs: flags.codexCancelGrace * 1000,
  };

  if (!isAppServerCodex(version)) {
    // Legacy Codex: one `codex mcp-server` per bridge, in a home of its own removed at exit.
    const home = join(root, `legacy-${process.pid}-${randomBytes(4).toString('hex')}`);
    const { runLegacyPassthrough } = await import('./legacy.ts');
    await runLegacyPassthrough({
      command,
      homeDir: home,
      settings,
      userCodexHome,
      launchDir,
      models: flags.codexModels,
      defaultGoal: flags.goal,
      limits,
      statusIntervalMs: flags.codexStatusInterval * 1000,
      heartbeatMs: flags.codexProgressHeartbeat * 1000,
      terminalGraceMs: flags.codexTerminalGrace * 1000,
      ...(flags.codexMaxSuppressed ? { maxSuppressed: flags.codexMaxSuppressed } : {}),
      logger,
      target,
      onExit: () => rmSync(home, { recursive: true, force: true }),
    });
    return;
  }

  // Current Codex: one stable home per launch directory, so threads outlive a bridge restart.
  const homeDir = join(root, 'app-server');
  // Auth is snapshotted once per bridge and written back (rule: isolated-homes) when the bridge exits; calls only
  // refresh the config.
  const home = prepareProviderHome(homeDir, settings, userCodexHome);
  const codex = appServerTools({
    runtime: {
      command,
      ...(settings.modelProvider ? { modelProvider: settings.modelProvider } : {}),
      userCodexHome,
      approvalPolicy: flags.approvalPolicy,
      agentsTable: wantsAgentsTable(version),
      prepareHome: (cwd) => prepareProviderHome(homeDir, settings, userCodexHome, cwd, true),
      logger,
      stateDir: homeDir,
      target,
    },
    threads: new ThreadRecords(homeDir),
    launchDir,
    models: flags.codexModels,
    defaultModel: flags.model,
    defaultEffort: flags.modelReasoningEffort,
    ...(flags.goal !== undefined ? { defaultGoal: flags.goal } : {}),
    limits,
    statusIntervalMs: flags.codexStatusInterval * 1000,
    heartbeatMs: flags.codexProgressHeartbeat * 1000,
  });
  await serveProviderStdio({
    provider: 'codex',
    version: '0.1.0',
    tools: codex.tools,
    tasks: codex.tasks,
    logger,
    onShutdown: () => codex.shutdown(),
    onExit: () => {
      try {
        if (home.writeBackAuth()) logger.info('codex: rotated login written back to the user auth.json');
      } catch (err) {
        logger.warn('codex: could not write the rotated login back', { error: redact(String(err)) });
      }
    },
  });
}

function logLevel(value: string): LogLevel {
  if (!isLogLevel(value)) throw new InvalidArgumentError('expected debug, info, warn or error');
  return value;
}
