// Rule `free-probes` for Codex: `codex --version`, `codex login status` and an app-server initialize; no thread, no
// inference.
import { CodexAppServerClient } from '../../codex/app-server-client.ts';
import { codexSandboxHelperProblem } from '../../codex/sandbox-helper.ts';
import { readCodexVersionOutput } from '../../codex/version.ts';
import type { ModelListResponse } from '../../generated/codex/v2/ModelListResponse.ts';
import { spawnFailure } from '../../lib/agent-path.ts';
import { captureCommand } from '../../lib/capture.ts';
import type { ChildGroup } from '../../lib/process-group.ts';
import { redact } from '../../lib/redact.ts';
import type { AgentProbe } from '../agent.ts';
import { checkTestedVersion } from '../tested-versions.ts';
import type { CodexAgentConfig } from './config.ts';
import { codexChildEnv, codexCommand } from './env.ts';
import { CODEX_CLIENT_INFO, EXIT_ON_EOF_GRACE_MS } from './session.ts';

/** Deadline of each probe command (`--version`, `login status`). */
const PROBE_COMMAND_TIMEOUT_MS = 20_000;

export interface CodexProbeOptions {
  name: string;
  config: CodexAgentConfig;
  /** The isolated home the probe runs in (its auth.json decides `login status`). */
  homeDir: string;
  initializeTimeoutMs: number;
  /** Starts `codex app-server` in the home (the same way a session does). */
  spawnAppServer: () => ChildGroup;
  /** Also ask the app-server for its models and their reasoning efforts (`model/list`; no thread, no inference). */
  catalog?: boolean;
}

/** How long `model/list` may take before the probe reports the agent without models. */
const MODEL_LIST_TIMEOUT_MS = 10_000;

export async function probeCodex(opts: CodexProbeOptions): Promise<AgentProbe> {
  const { config } = opts;
  const { file, args } = codexCommand(config);
  const base = { name: opts.name, kind: 'codex', binary: file };
  const run = (more: string[]) =>
    captureCommand([file, ...args, ...more], {
      env: codexChildEnv(config, opts.homeDir),
      timeoutMs: PROBE_COMMAND_TIMEOUT_MS,
    });
  const version = await run(['--version']);
  if (version.error || version.code !== 0) {
    return {
      ...base,
      available: false,
      detail: version.error
        ? spawnFailure(file, version.error, 'Codex')
        : `could not run ${file} --version: exit code ${version.code}`,
    };
  }
  const { text: versionText, version: parsed } = readCodexVersionOutput(version.stdout);
  // A Codex baton does not support is reported as such, without starting it (rule: free-probes).
  const verdict = checkTestedVersion('codex', parsed?.text);
  if (verdict.outcome === 'refused')
    return { ...base, available: false, version: parsed?.text, detail: verdict.message };
  const login = await run(['login', 'status']);
  const loginState = login.code === 0 ? 'ok' : login.code === 1 ? 'missing' : 'unknown';
  const details: string[] = [];
  if (!parsed) details.push(`unreadable version output`);
  if (loginState === 'missing') {
    details.push(
      config.modelProvider && config.modelProvider.requiresOpenaiAuth === false
        ? 'no Codex login (not needed by the configured model provider)'
        : 'not logged in: run `codex login`',
    );
  }
  const sandboxProblem = codexSandboxHelperProblem(opts.homeDir, codexChildEnv(config, opts.homeDir));
  if (sandboxProblem) details.push(sandboxProblem);
  const group = opts.spawnAppServer();
  const client = new CodexAppServerClient({
    transport: { type: 'stdio', readable: group.child.stdout!, writable: group.child.stdin! },
    clientInfo: CODEX_CLIENT_INFO,
    initializeTimeoutMs: opts.initializeTimeoutMs,
  });
  let available = true;
  let catalog: Pick<AgentProbe, 'models' | 'efforts'> = {};
  try {
    await client.connect();
    if (opts.catalog) catalog = await listModels(client).catch(() => ({}));
  } catch (err) {
    available = false;
    details.push(`app-server did not initialize: ${redact((err as Error).message)}`);
  } finally {
    client.close();
    await group.stop(EXIT_ON_EOF_GRACE_MS);
  }
  return {
    ...base,
    available,
    version: parsed?.text ?? (versionText.slice(0, 64) || undefined),
    login: loginState,
    ...catalog,
    ...(details.length ? { detail: details.join('; ') } : {}),
  };
}

/** The models Codex offers a client (those its picker shows) and every reasoning effort one of them supports. */
async function listModels(client: CodexAppServerClient): Promise<Pick<AgentProbe, 'models' | 'efforts'>> {
  const res = (await client.request('model/list', {}, MODEL_LIST_TIMEOUT_MS)) as ModelListResponse;
  const shown = (res.data ?? []).filter((m) => !m.hidden);
  const models = shown.map((m) => m.model);
  const efforts = [...new Set(shown.flatMap((m) => m.supportedReasoningEfforts.map((e) => e.reasoningEffort)))];
  return { ...(models.length ? { models } : {}), ...(efforts.length ? { efforts } : {}) };
}
