// `npm run bench:mcp-startup`: how long an MCP client waits for baton's providers, measured the way clients launch
// them. Writes a real `.mcp.json` in a temp project, starts every entry with the official SDK client over stdio, and
// times initialize + tools/list (no model is called; the codex entry runs the real current Codex once, for the
// `codex --version` probe its provider makes at start, with an empty user Codex home so no login is read). The
// baseline is a bare MCP SDK server with one tool, launched the same way, so the printed ratio is baton's own overhead
// on this machine.
//
//   node bench/mcp-startup.ts [--runs N]
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const SELF = fileURLToPath(import.meta.url);
const REPO_ROOT = join(dirname(SELF), '..');

if (process.argv.includes('--bare-server')) {
  await runBareServer();
} else {
  await runBench();
}

/** The baseline: the smallest useful MCP SDK server (one tool), nothing else. */
async function runBareServer(): Promise<void> {
  const { McpServer } = await import('@modelcontextprotocol/sdk/server/mcp.js');
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const { z } = await import('zod');
  const server = new McpServer({ name: 'bare', version: '0' });
  server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  await server.connect(new StdioServerTransport());
}

interface McpJsonEntry {
  command: string;
  args: string[];
}

async function runBench(): Promise<void> {
  const runsFlag = process.argv.indexOf('--runs');
  const runs = runsFlag > 0 ? Math.max(1, Number(process.argv[runsFlag + 1]) || 5) : 5;
  const project = mkdtempSync(join(tmpdir(), 'baton-bench-mcp-'));
  try {
    const baton = join(REPO_ROOT, 'bin', 'baton.js');
    // The current Codex from npm (node_modules/.bin/codex may be the legacy one: both packages claim the bin).
    const codex = realpathSync(join(REPO_ROOT, 'node_modules', '@openai', 'codex', 'bin', 'codex.js'));
    const userCodexHome = join(project, 'user-codex-home');
    mkdirSync(userCodexHome, { mode: 0o700 });
    const mcpJson: { mcpServers: Record<string, McpJsonEntry> } = {
      mcpServers: {
        bare: { command: process.execPath, args: [SELF, '--bare-server'] },
        claude: { command: process.execPath, args: [baton, 'mcp', '--provider', 'claude'] },
        gemini: { command: process.execPath, args: [baton, 'mcp', '--provider', 'gemini'] },
        codex: {
          command: process.execPath,
          args: [baton, 'mcp', '--provider', 'codex', '--codex-command', codex, '--user-codex-home', userCodexHome],
        },
      },
    };
    const file = join(project, '.mcp.json');
    writeFileSync(file, `${JSON.stringify(mcpJson, null, 2)}\n`);
    // Read back what a client would read: the entries under test are the file's, not the object above.
    const entries = (JSON.parse(readFileSync(file, 'utf8')) as typeof mcpJson).mcpServers;
    const results: Record<string, number[]> = {};
    for (let i = 0; i < runs; i++) {
      // Interleave entries so drift on a shared machine affects all of them alike.
      for (const [name, entry] of Object.entries(entries)) {
        const samples = results[name] ?? [];
        samples.push(await timeStartup(entry, project));
        results[name] = samples;
      }
    }
    const baseline = median(results.bare!);
    console.log(`initialize + tools/list over stdio, median of ${runs} runs (${file})`);
    for (const [name, samples] of Object.entries(results)) {
      const m = median(samples);
      const ratio = name === 'bare' ? 'baseline' : `${(m / baseline).toFixed(2)}× bare`;
      console.log(`  ${name.padEnd(8)} ${m.toFixed(0).padStart(6)} ms   ${ratio}`);
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

async function timeStartup(entry: McpJsonEntry, cwd: string): Promise<number> {
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args,
    cwd,
    env: process.env as Record<string, string>,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'baton-bench', version: '0' });
  const started = performance.now();
  await client.connect(transport);
  const { tools } = await client.listTools();
  const elapsed = performance.now() - started;
  if (tools.length === 0) throw new Error('a server listed no tools');
  await client.close();
  return elapsed;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
