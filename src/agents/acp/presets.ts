// Known ACP agents, configured by command. Binaries resolve from PATH; users may override any key in config.json.
import type { AcpConfig } from './config.ts';

/** An MCP server name nobody uses: as Gemini CLI's allow-list it admits none of the user's servers. */
export const NO_MCP_SERVER = 'baton-allows-no-mcp-servers';

export const ACP_PRESETS = {
  /**
   * Gemini CLI's ACP mode (rule `gemini-sandboxed` through rule `acp-agents`). Rule `no-recursion`: the user's own MCP
   * servers (settings.json) are filtered out by an allow-list naming no real server, and extensions (which bring MCP
   * servers, hooks and skills) are off. Antigravity's `agy` is command-compatible.
   */
  gemini: {
    command: ['gemini', '--acp', '--allowed-mcp-server-names', NO_MCP_SERVER, '--extensions', 'none'],
  },
  /**
   * OpenCode as an ACP agent (rule `opencode-server`; the HTTP-server adapter is a separate kind). `--pure`: no
   * external plugins (rule: no-recursion). MCP servers in the user's own opencode config are still started by opencode:
   * ACP offers no way to turn them off.
   */
  'opencode-acp': { command: ['opencode', 'acp', '--pure'] },
  /**
   * DeepSeek Harness's ACP profile (`dsh --profile acp`, the automation-only server of `@deepseek-ai/dsh-acp`): the
   * profile, its provider and model are the user's DSH config (docs/agents-acp.md). It cannot load a saved session.
   */
  dsh: { command: ['dsh', '--profile', 'acp'] },
} as const satisfies Record<string, AcpConfig>;

/** Binaries known to answer `--version` without starting anything (others report initialize's agentInfo.version). */
export const VERSION_FLAG_BINARIES: ReadonlySet<string> = new Set(['gemini', 'agy', 'opencode', 'dsh']);
