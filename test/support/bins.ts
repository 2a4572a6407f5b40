// Paths of the real agent binaries installed from npm as devDependencies. Two Codex versions share the `codex` bin
// name, so tests always name the package, never rely on node_modules/.bin.
//
// BATON_TEST_AGENTS_DIR (used by `npm run test:latest`) names another node_modules directory: a current agent
// (Codex, Claude Code, Gemini CLI, OpenCode, DeepSeek Harness) installed there is taken from there instead of the pinned
// copy; the legacy Codex and the MCP servers stay the pinned ones.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PINNED = join(REPO_ROOT, 'node_modules');
const agentsDir = (name: string) => {
  const dir = process.env.BATON_TEST_AGENTS_DIR;
  return dir && existsSync(join(dir, name, 'package.json')) ? resolve(dir) : PINNED;
};
const pkg = (name: string, bin: string, root = PINNED) => realpathSync(join(root, name, bin));
const agent = (name: string, bin: string) => pkg(name, bin, agentsDir(name));
const packageVersion = (name: string, root = agentsDir(name)) =>
  (JSON.parse(readFileSync(join(root, name, 'package.json'), 'utf8')) as { version: string }).version;

export const bins = {
  /** Current Codex (app-server; no mcp-server). */
  codex: () => agent('@openai/codex', 'bin/codex.js'),
  /** Codex 0.153.4, the last with `codex mcp-server` (npm alias codex-legacy). */
  codexLegacy: () => pkg('codex-legacy', 'bin/codex.js'),
  opencode: () => agent('opencode-ai', 'bin/opencode.exe'),
  gemini: () => agent('@google/gemini-cli', 'bundle/gemini.js'),
  claude: () => agent('@anthropic-ai/claude-code', 'bin/claude.exe'),
  /** DeepSeek Harness's launcher (pinned with its parts; its ACP bridge is @deepseek-ai/dsh-acp). */
  dsh: () => agent('@deepseek-ai/dsh', 'lib/bin.js'),
  dshAcp: () => agent('@deepseek-ai/dsh-acp', '.'),
  chromeDevtoolsMcp: () => pkg('chrome-devtools-mcp', 'build/src/bin/chrome-devtools-mcp.js'),
};

/** The versions of the binaries above, from their packages (what `--version` prints). */
export const binVersions = {
  codex: () => packageVersion('@openai/codex'),
  codexLegacy: () => packageVersion('codex-legacy', PINNED),
  opencode: () => packageVersion('opencode-ai'),
  gemini: () => packageVersion('@google/gemini-cli'),
  claude: () => packageVersion('@anthropic-ai/claude-code'),
};

/**
 * The Node compile cache `npm test` turns on (NODE_COMPILE_CACHE), for the clean environments tests build for Node
 * children (baton, Codex's launcher, Gemini CLI): a cache of compiled code only, so behaviour is the same without it.
 */
export const NODE_CACHE_ENV: Record<string, string> = process.env.NODE_COMPILE_CACHE
  ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
  : {};
