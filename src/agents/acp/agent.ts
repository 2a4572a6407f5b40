// The ACP agent kind (rule: acp-agents): any ACP v1 agent configured by its stdio command.
import { basename } from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { binaryNotFound } from '../../lib/agent-path.ts';
import { captureCommand } from '../../lib/capture.ts';
import type { Logger } from '../../lib/log.ts';
import { findVersion } from '../../lib/version.ts';
import type { Agent, AgentContext, AgentProbe, OpenSessionOptions, ProbeRequest } from '../agent.ts';
import { NO_RELAUNCH } from '../gemini/no-relaunch.ts';
import type { ExecutionTarget } from '../targets/target.ts';
import type { AcpConfig } from './config.ts';
import { VERSION_FLAG_BINARIES } from './presets.ts';
import { AcpProcess, agentEnvironment, resolveBinary } from './process.ts';
import { AcpAgentSession } from './session.ts';
import { offeredChoices } from './session-options.ts';

const VERSION_PROBE_TIMEOUT_MS = 15_000;
const VERSION_OUTPUT_MAX_CHARS = 4 * 1024;

export interface AcpSessionProbe {
  version?: string;
  /** Whether the agent can resume saved sessions (session/load). */
  loadSession: boolean;
  /** What session/new offered to choose (only when a session was opened). */
  models?: string[];
  efforts?: string[];
}

export class AcpAgent implements Agent {
  readonly kind = 'acp';
  readonly name: string;
  private readonly config: AcpConfig;
  private readonly logger: Logger;
  private readonly target: ExecutionTarget | undefined;

  constructor(name: string, config: AcpConfig, ctx: Pick<AgentContext, 'logger' | 'target'>) {
    this.name = name;
    this.config = config;
    this.logger = ctx.logger;
    this.target = ctx.target;
  }

  openSession(opts: OpenSessionOptions): Promise<AcpAgentSession> {
    return AcpAgentSession.open(this.name, this.config, this.logger, opts, this.target);
  }

  /**
   * Rule `free-probes`: binary and version without spending inference. Known CLIs answer `--version`; any other ACP
   * agent is started and asked `initialize` (its agentInfo.version), then stopped. A catalog probe opens a session
   * anyway, so its `initialize` names the version and `--version` (a second start of the agent) is asked only when it
   * does not, or when no session could be opened.
   */
  async probe(request: ProbeRequest = {}): Promise<AgentProbe> {
    const base: AgentProbe = { name: this.name, kind: this.kind, available: false, login: 'unknown' };
    const command = this.config.command[0]!;
    const remote = this.target?.remote;
    // On another machine the binary, its version and its login are the host's: asked there (rule: ssh-target).
    const binary = remote
      ? await this.remoteBinary(command)
      : resolveBinary(command, agentEnvironment(this.config.env));
    if (typeof binary === 'object') return { ...base, binary: command, detail: binary.detail };
    if (!binary) return { ...base, binary: command, detail: binaryNotFound(command) };
    const versionFlag = () =>
      VERSION_FLAG_BINARIES.has(basename(command)) ? this.versionFlag(binary) : Promise.resolve(undefined);
    if (request.catalog) {
      // The models and efforts are what session/new offers: a session is opened and closed, no prompt is sent.
      try {
        const probed = await this.probeSession();
        const version = probed.version ?? (await versionFlag());
        return {
          ...base,
          available: true,
          binary,
          ...(version ? { version } : {}),
          ...(probed.models ? { models: probed.models } : {}),
          ...(probed.efforts ? { efforts: probed.efforts } : {}),
        };
      } catch (err) {
        // Installed but no session (often a missing login): still reported, with what failed.
        const version = await versionFlag();
        if (version)
          return {
            ...base,
            available: true,
            binary,
            version,
            detail: err instanceof Error ? err.message : String(err),
          };
        return { ...base, binary, detail: err instanceof Error ? err.message : String(err) };
      }
    }
    let version = await versionFlag();
    if (!version) {
      try {
        version = (await this.probeSession(undefined, { withSession: false })).version;
      } catch (err) {
        return { ...base, binary, detail: err instanceof Error ? err.message : String(err) };
      }
    }
    return { ...base, available: true, binary, version };
  }

  /**
   * Doctor check (rules: free-probes, hub-commands): initialize and, unless `withSession` is false, session/new (no MCP
   * servers) + session/close where the agent supports closing, then stop the process. Sends no prompt, so no inference
   * is spent. Rejects with an AgentStartError saying what failed.
   */
  async probeSession(
    cwd: string = this.target?.remote?.roots[0] ?? process.cwd(),
    opts: { withSession?: boolean; signal?: AbortSignal } = {},
  ): Promise<AcpSessionProbe> {
    const proc = await AcpProcess.start({
      agentName: this.name,
      config: this.config,
      cwd,
      // A probe carries no prompt and runs here unfenced, unless the agent lives on another machine.
      ...(this.target?.remote ? { target: this.target } : {}),
      logger: this.logger,
      signal: opts.signal,
      handlers: { onUpdate: () => {}, onPermission: () => ({ outcome: { outcome: 'cancelled' } }) },
    });
    try {
      const init = proc.initializeResult;
      let offered: { models?: string[]; efforts?: string[] } = {};
      if (opts.withSession !== false) {
        const created = await proc.startupStep(
          'session/new',
          proc.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
          opts.signal,
        );
        if (init?.agentCapabilities?.sessionCapabilities?.close)
          await proc.startupStep(
            'session/close',
            proc.agent.request(acp.methods.agent.session.close, { sessionId: created.sessionId }),
            opts.signal,
          );
        offered = offeredChoices(created);
      }
      return {
        version: init?.agentInfo?.version,
        loadSession: init?.agentCapabilities?.loadSession === true,
        ...offered,
      };
    } finally {
      await proc.stop();
    }
  }

  /** The agent's command on the target's host (its path there), or why it cannot be had there. */
  private async remoteBinary(command: string): Promise<string | { detail: string }> {
    const target = this.target!;
    try {
      const r = await target.remote!.exec('command -v "$1"', [command]);
      const path = r.stdout.toString('utf8').trim();
      if (r.code !== 0 || !path) return { detail: `"${command}" was not found on target "${target.name}"` };
      return path;
    } catch (err) {
      return { detail: (err as Error).message };
    }
  }

  private async versionFlag(binary: string): Promise<string | undefined> {
    const remote = this.target?.remote;
    if (remote) {
      const r = await remote.exec('"$1" --version 2>&1', [binary]).catch(() => undefined);
      return r?.code === 0 ? findVersion(r.stdout.toString('utf8').slice(0, VERSION_OUTPUT_MAX_CHARS)) : undefined;
    }
    const out = await captureCommand([binary, '--version'], {
      env: { ...agentEnvironment(this.config.env), [NO_RELAUNCH]: 'true' },
      timeoutMs: VERSION_PROBE_TIMEOUT_MS,
      maxChars: VERSION_OUTPUT_MAX_CHARS,
    });
    return out.code === 0 ? findVersion(out.stdout) : undefined;
  }
}
