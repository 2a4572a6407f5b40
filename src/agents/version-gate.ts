// The version check at round start for adapters that start their CLI once per turn (Claude Code, Gemini CLI's
// one-shot mode) and so never hear a version from a handshake: `--version` is asked before the first round, an
// older-than-tested binary refuses the round with the one-line verdict, a newer one is warned about once. A binary
// that passed is not asked again; a refused one is asked again next round, so an upgrade in place is picked up.
import { captureCommand } from '../lib/capture.ts';
import type { Logger } from '../lib/log.ts';
import { checkTestedVersion, type TestedAgent } from './tested-versions.ts';

const VERSION_TIMEOUT_MS = 15_000;
const VERSION_OUTPUT_MAX_CHARS = 4 * 1024;

export interface VersionGateOptions {
  argv: () => readonly string[];
  env: () => NodeJS.ProcessEnv;
  logger?: Logger;
  /** Runs the `--version` command elsewhere (an agent on another machine); default: here, with `env`. */
  ask?: (argv: readonly string[]) => Promise<{ code: number | null; stdout: string }>;
}

export class VersionGate {
  private passed = false;
  private readonly agent: TestedAgent;
  private readonly argv: () => readonly string[];
  private readonly logger: Logger | undefined;
  private readonly ask: NonNullable<VersionGateOptions['ask']>;

  constructor(agent: TestedAgent, opts: VersionGateOptions) {
    this.agent = agent;
    this.argv = opts.argv;
    this.logger = opts.logger;
    this.ask =
      opts.ask ??
      ((argv) =>
        captureCommand(argv, { env: opts.env(), timeoutMs: VERSION_TIMEOUT_MS, maxChars: VERSION_OUTPUT_MAX_CHARS }));
  }

  /**
   * The refusal to report as the round's error, or undefined when the round may run. A `--version` that cannot run or
   * prints no release number leaves the round to meet the real failure itself.
   */
  async refusal(): Promise<string | undefined> {
    if (this.passed) return undefined;
    const out = await this.ask([...this.argv(), '--version']).catch(() => undefined);
    const verdict = checkTestedVersion(
      this.agent,
      out?.code === 0 ? out.stdout.slice(0, VERSION_OUTPUT_MAX_CHARS) : undefined,
    );
    if (verdict.outcome === 'refused') return verdict.message;
    if (verdict.outcome === 'untested') this.logger?.warn(verdict.message);
    this.passed = true;
    return undefined;
  }
}
