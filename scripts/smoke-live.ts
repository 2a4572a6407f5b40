// `npm run smoke:live`: one real delegation per agent that has real credentials on this machine, through a real hub
// daemon and the official MCP SDK client. It spends a little inference, so it is never part of `npm test`. Agents
// without credentials are skipped with the reason; with none at all it says so and exits 0.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ACP_PRESETS } from '../src/agents/acp/presets.ts';
import { findOnPath } from '../src/faces/hub/config.ts';
import { bins } from '../test/support/bins.ts';
import { call, connectCaller, followToEnd, startHub } from '../test/support/hub.ts';

const home = homedir();
const has = (...paths: string[]) => paths.some((p) => existsSync(p));

interface Candidate {
  name: string;
  credentials: boolean;
  why: string;
  entry: Record<string, unknown>;
}

const candidates: Candidate[] = [
  {
    name: 'codex',
    credentials:
      Boolean(process.env.OPENAI_API_KEY) || has(join(process.env.CODEX_HOME ?? join(home, '.codex'), 'auth.json')),
    why: 'needs ~/.codex/auth.json (codex login) or OPENAI_API_KEY',
    entry: { kind: 'codex', command: findOnPath('codex') ? ['codex'] : [process.execPath, bins.codex()] },
  },
  {
    name: 'claude',
    credentials: Boolean(process.env.ANTHROPIC_API_KEY) || has(join(home, '.claude', '.credentials.json')),
    why: 'needs ~/.claude/.credentials.json (claude login) or ANTHROPIC_API_KEY',
    entry: { kind: 'claude', command: findOnPath('claude') ?? bins.claude() },
  },
  {
    name: 'gemini',
    credentials: Boolean(process.env.GEMINI_API_KEY) || has(join(home, '.gemini', 'oauth_creds.json')),
    why: 'needs ~/.gemini/oauth_creds.json or GEMINI_API_KEY',
    entry: {
      kind: 'acp',
      command: findOnPath('gemini')
        ? [...ACP_PRESETS.gemini.command]
        : [process.execPath, bins.gemini(), ...ACP_PRESETS.gemini.command.slice(1)],
    },
  },
  {
    name: 'opencode',
    credentials: has(join(home, '.local', 'share', 'opencode', 'auth.json')),
    why: 'needs ~/.local/share/opencode/auth.json (opencode auth login)',
    entry: { kind: 'opencode', binary: findOnPath('opencode') ?? bins.opencode() },
  },
];

const ready = candidates.filter((c) => c.credentials);
for (const c of candidates.filter((x) => !x.credentials)) console.log(`skip ${c.name}: ${c.why}`);
if (!ready.length) {
  console.log('no real credentials found; nothing was run');
  process.exit(0);
}

const cleanups: Array<() => unknown> = [];
const t = { after: (fn: () => unknown) => cleanups.push(fn) };
const dir = mkdtempSync(join(tmpdir(), 'baton-smoke-'));
const repo = join(dir, 'project');
mkdirSync(repo);
writeFileSync(join(repo, 'README.md'), '# smoke\n');
const git = (...args: string[]) =>
  execFileSync('git', ['-C', repo, ...args], {
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'smoke',
      GIT_AUTHOR_EMAIL: 's@s',
      GIT_COMMITTER_NAME: 'smoke',
      GIT_COMMITTER_EMAIL: 's@s',
    },
  });
git('init', '-q');
git('add', '.');
git('commit', '-qm', 'smoke');

let failures = 0;
try {
  const hub = await startHub(t, {
    dir,
    roots: [repo],
    agents: Object.fromEntries(ready.map((c) => [c.name, c.entry])),
    limits: { idleTimeoutMs: 300_000, hardTimeoutMs: 600_000 },
  });
  const client = await connectCaller(t, hub, 'alice');
  for (const c of ready) {
    const started = Date.now();
    const run = await call<{ taskId: string }>(client, 'agent_run', {
      agent: c.name,
      prompt: 'Reply with exactly the word BATON-OK and nothing else. Do not run commands or edit files.',
      cwd: repo,
      idempotencyKey: `smoke-${c.name}-${started}`,
    });
    const end = await followToEnd(client, run.taskId);
    const result = await call<{ text?: string; error?: string }>(client, 'agent_result', { taskId: run.taskId });
    const ok = end.state === 'succeeded' && /BATON-OK/.test(result.text ?? '');
    if (!ok) failures++;
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${c.name}: ${end.state} in ${((Date.now() - started) / 1000).toFixed(1)} s${ok ? '' : ` — ${JSON.stringify(result).slice(0, 300)}`}`,
    );
  }
} finally {
  for (const fn of cleanups.reverse()) await fn();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
