// The Codex agent (rule: codex-app-server): `codex app-server` over stdio in an isolated CODEX_HOME, one process per
// session. The parts live beside this file: env.ts (argv and environment), session.ts (thread, turns, cancel),
// events.ts (notification mapping), probe.ts (rule: free-probes); the declined server requests are the shared table in
// src/codex/declines.ts.
import { codexSandboxHelperProblem } from '../../codex/sandbox-helper.ts';
import { spawnFailure } from '../../lib/agent-path.ts';
import { spawnGroup } from '../../lib/process-group.ts';
import { redact } from '../../lib/redact.ts';
import type { Agent, AgentContext, AgentProbe, AgentSession, OpenSessionOptions, ProbeRequest } from '../agent.ts';
import { UNFENCED } from '../targets/target.ts';
import type { CodexAgentConfig } from './config.ts';
import { codexChildEnv, codexCommand, overrideArgs } from './env.ts';
import { prepareCodexHome } from './home.ts';
import { probeCodex } from './probe.ts';
import { type CodexAgentExtras, CodexSession } from './session.ts';

export type { CodexAgentExtras } from './session.ts';

/** A cold app-server can take a while to answer initialize. */
const DEFAULT_INITIALIZE_TIMEOUT_MS = 30_000;

export function createCodexAgent(
  name: string,
  config: CodexAgentConfig,
  ctx: AgentContext,
  extras: CodexAgentExtras = {},
): Agent {
  const initializeTimeoutMs = config.initializeTimeoutMs ?? DEFAULT_INITIALIZE_TIMEOUT_MS;
  const spawnAppServer = (codexHome: string, cwd: string, forTask: boolean) => {
    const { file, args } = codexCommand(config);
    const argv = [...args, ...overrideArgs(config), 'app-server'];
    const env = codexChildEnv(config, codexHome);
    // A task's app-server runs on the agent's target; the probe (no prompt, no task) runs here as it always did,
    // unless the agent lives on another machine: then it asks the app-server there, in the target's first root, and
    // the remote user's own Codex home applies (baton's private home is a path of this machine, never sent).
    const remote = ctx.target?.remote;
    if (!forTask && !remote) return spawnGroup(file, argv, { cwd, env, stdio: ['pipe', 'pipe', 'ignore'] });
    return (ctx.target ?? UNFENCED).spawn(file, argv, {
      cwd: !forTask && remote ? (remote.roots[0] ?? cwd) : cwd,
      env,
      stdio: ['pipe', 'pipe', 'ignore'],
      keep: [codexHome],
    });
  };
  return {
    name,
    kind: 'codex',
    probe(request?: ProbeRequest): Promise<AgentProbe> {
      const home = prepareCodexHome(ctx.stateDir, name, config);
      return probeCodex({
        name,
        config,
        homeDir: home.dir,
        initializeTimeoutMs,
        catalog: request?.catalog === true,
        spawnAppServer: () => spawnAppServer(home.dir, ctx.stateDir, false),
      });
    },
    async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
      const home = extras.prepareHome
        ? extras.prepareHome({ cwd: opts.cwd })
        : prepareCodexHome(ctx.stateDir, name, config, { cwd: opts.cwd });
      if (opts.sandbox !== 'danger-full-access') {
        const problem = codexSandboxHelperProblem(home.dir, codexChildEnv(config, home.dir));
        if (problem) ctx.logger.warn(`codex: ${problem}`, { agent: name });
      }
      const group = spawnAppServer(home.dir, opts.cwd, true);
      if (group.pgid > 0) opts.onProcessGroup?.(group.pgid);
      const spawnFailed = new Promise<never>((_, reject) =>
        group.child.once('error', (err) => reject(new Error(spawnFailure(codexCommand(config).file, err, 'Codex')))),
      );
      spawnFailed.catch(() => {});
      const session = new CodexSession(group, config, ctx, home, initializeTimeoutMs, extras);
      const onAbort = () => void session.close();
      opts.signal.addEventListener('abort', onAbort, { once: true });
      try {
        await Promise.race([session.start(opts), spawnFailed]);
      } catch (err) {
        await session.close();
        throw new Error(`Codex session could not start: ${redact((err as Error).message)}`);
      } finally {
        opts.signal.removeEventListener('abort', onAbort);
      }
      const effort = opts.effort;
      return {
        get id() {
          return session.id;
        },
        turn: (prompt, turnOpts) => session.turn(prompt, { ...turnOpts, effort }),
        close: () => session.close(),
      };
    },
  };
}
