// Provider start-up as an MCP client sees it: spawn over stdio with the official SDK client, initialize + tools/list.
// baton's providers (`baton mcp --provider codex|claude|gemini`, compiled dist/) vs a plain-JS one-tool SDK server and
// vs the peer MCP servers installed as bench-only devDependencies, each started offline with the one setting it needs:
//   codex-mcp-server       none: it only looks for the codex CLI when a tool is called
//   claude-code-mcp        CLAUDE_CLI_NAME = the installed Claude Code binary (else it warns and falls back to PATH)
//   gemini-mcp-tool        GEMINI_MCP_BACKEND=gemini (past the Gemini CLI's retirement date it defaults to the
//                          Antigravity CLI backend and prints a migration notice)
// Every server gets a fresh empty HOME (and BATON_HOME), so no user config or login is read.
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bins, REPO_ROOT } from '../test/support/bins.ts';
import {
  atMost,
  type BenchOptions,
  info,
  interleave,
  ratioOfMedians,
  rssMiB,
  type Section,
  series,
  stats,
} from './harness.ts';

interface Server {
  args: string[];
  env?: Record<string, string>;
}

const ONE_TOOL_SERVER = fileURLToPath(new URL('./one-tool-server.js', import.meta.url));
const pkg = (name: string, bin: string) => realpathSync(join(REPO_ROOT, 'node_modules', name, bin));

export async function startup(opts: BenchOptions, dir: string): Promise<Section> {
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const userCodexHome = join(dir, 'user-codex-home');
  mkdirSync(userCodexHome, { mode: 0o700 });
  const baton = join(REPO_ROOT, 'bin', 'baton.js');
  const servers: Record<string, Server> = {
    'one-tool SDK server (plain JS)': { args: [ONE_TOOL_SERVER] },
    'baton mcp --provider codex': {
      args: [baton, 'mcp', '--provider', 'codex', '--codex-command', bins.codex(), '--user-codex-home', userCodexHome],
    },
    'baton mcp --provider claude': { args: [baton, 'mcp', '--provider', 'claude'] },
    'baton mcp --provider gemini': { args: [baton, 'mcp', '--provider', 'gemini'] },
    'peer codex-mcp-server': { args: [pkg('codex-mcp-server', 'dist/index.js')] },
    'peer claude-code-mcp': {
      args: [pkg('@steipete/claude-code-mcp', 'dist/server.js')],
      env: { CLAUDE_CLI_NAME: bins.claude() },
    },
    'peer gemini-mcp-tool': {
      args: [pkg('gemini-mcp-tool', 'dist/index.js')],
      env: { GEMINI_MCP_BACKEND: 'gemini' },
    },
  };
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('BATON_')) base[k] = v;
  // Nobody gets the test suite's compile cache: each server starts the way a user's Node starts it.
  delete base.NODE_COMPILE_CACHE;
  Object.assign(base, { HOME: home, BATON_HOME: join(dir, 'baton-home') });
  const rss: Record<string, number[]> = Object.fromEntries(Object.keys(servers).map((n) => [n, []]));
  const sides = Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      async () => {
        const { ms, rss: mib } = await startOnce(server, { ...base, ...server.env }, dir);
        rss[name]!.push(mib);
        return ms;
      },
    ]),
  );
  const notes: string[] = [];
  const s = await interleave(opts.runs, sides, { ms: 50_000, notes });
  const peers = Object.keys(servers).filter((n) => n.startsWith('peer '));
  const fastestPeer = peers.reduce((a, b) => (stats(s[a]!).median <= stats(s[b]!).median ? a : b));
  const providers = Object.keys(servers).filter((n) => n.startsWith('baton '));
  const oneTool = Object.keys(servers)[0]!;
  return {
    name: 'startup',
    title: 'Provider start + tools/list over stdio (spawn → initialize → tools/list answered)',
    series: [
      ...Object.keys(servers).map((n) => series(n, 'ms', s[n]!)),
      ...Object.keys(servers).map((n) => series(`${n}, RSS after tools/list`, 'MiB', rss[n]!.slice(1))),
    ],
    checks: [
      ...providers.map((p) =>
        atMost(
          `${p.replace('baton mcp --provider ', 'baton ')} / fastest peer (median)`,
          ratioOfMedians(s[p]!, s[fastestPeer]!),
          1.3,
        ),
      ),
      ...providers.map((p) =>
        info(
          `${p.replace('baton mcp --provider ', 'baton ')} / one-tool server (median)`,
          ratioOfMedians(s[p]!, s[oneTool]!),
        ),
      ),
    ],
    notes: [`fastest peer this run: ${fastestPeer.replace('peer ', '')}`, ...notes],
  };
}

async function startOnce(
  server: Server,
  env: Record<string, string>,
  cwd: string,
): Promise<{ ms: number; rss: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: server.args,
    cwd,
    env,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'baton-bench', version: '0' });
  const start = performance.now();
  await client.connect(transport);
  const { tools } = await client.listTools();
  const ms = performance.now() - start;
  if (tools.length === 0) throw new Error(`${server.args[0]} listed no tools`);
  const rss = rssMiB(transport.pid!);
  await client.close();
  return { ms, rss };
}
