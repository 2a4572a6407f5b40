// Paths of the real agent binaries installed from npm as devDependencies. Two Codex versions share the `codex` bin
// name, so tests always name the package, never rely on node_modules/.bin.
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = (name: string, bin: string) => realpathSync(join(REPO_ROOT, 'node_modules', name, bin));

export const bins = {
  /** Current Codex (app-server; no mcp-server). */
  codex: () => pkg('@openai/codex', 'bin/codex.js'),
  /** Codex 0.153.4, the last with `codex mcp-server` (npm alias codex-legacy). */
  codexLegacy: () => pkg('codex-legacy', 'bin/codex.js'),
  opencode: () => pkg('opencode-ai', 'bin/opencode.exe'),
  gemini: () => pkg('@google/gemini-cli', 'bundle/gemini.js'),
  claude: () => pkg('@anthropic-ai/claude-code', 'bin/claude.exe'),
  chromeDevtoolsMcp: () => pkg('chrome-devtools-mcp', 'build/src/bin/chrome-devtools-mcp.js'),
};

/**
 * The Node compile cache `npm test` turns on (NODE_COMPILE_CACHE), for the clean environments tests build for Node
 * children (baton, Codex's launcher, Gemini CLI): a cache of compiled code only, so behaviour is the same without it.
 */
export const NODE_CACHE_ENV: Record<string, string> = process.env.NODE_COMPILE_CACHE
  ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
  : {};
