// Known ACP agents, configured by command. Binaries resolve from PATH; users may override any key in config.json.
import type { AcpConfig } from './config.ts';

export const ACP_PRESETS = {
  /** Gemini CLI's ACP mode (AG-5 through AG-4). Also fits Antigravity's `agy`, a command-compatible binary. */
  gemini: { command: ['gemini', '--acp'] },
  /** OpenCode as an ACP agent (AG-3); the HTTP-server adapter is a separate kind. */
  'opencode-acp': { command: ['opencode', 'acp'] },
  /** DeepSeek Harness: its native ACP stdio agent (`dsh acp`, dsh ≥ 0.1.6). */
  dsh: { command: ['dsh', 'acp'] },
} as const satisfies Record<string, AcpConfig>;

export type AcpPresetName = keyof typeof ACP_PRESETS;

/** Binaries known to answer `--version` without starting anything (others report initialize's agentInfo.version). */
export const VERSION_FLAG_BINARIES: ReadonlySet<string> = new Set(['gemini', 'agy', 'opencode', 'dsh']);

export function acpPreset(name: string): AcpConfig | undefined {
  const preset = (ACP_PRESETS as Record<string, AcpConfig>)[name];
  return preset && { command: [...preset.command] };
}
