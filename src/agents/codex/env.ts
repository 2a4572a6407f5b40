// How a Codex child is started: its argv (the configured command, `-c` overrides) and its environment (the shared
// child allowlist plus the configured provider's key variable, CODEX_HOME pointing at the isolated home).

import { tomlValue } from '../../codex/config-toml.ts';
import { childEnv } from '../../lib/child-env.ts';
import type { CodexAgentConfig } from './config.ts';

export function codexChildEnv(config: CodexAgentConfig, codexHome: string): Record<string, string> {
  return childEnv('codex', { pass: [config.modelProvider?.envKey], set: { CODEX_HOME: codexHome } });
}

/** The configured argv that runs Codex (default `codex` on PATH). */
export function codexCommand(config: CodexAgentConfig): { file: string; args: string[] } {
  const [file, ...args] = config.command ?? ['codex'];
  return { file: file!, args };
}

export function overrideArgs(config: CodexAgentConfig): string[] {
  const args: string[] = [];
  for (const [key, value] of Object.entries(config.configOverrides ?? {}))
    args.push('-c', `${key}=${tomlValue(value)}`);
  return args;
}
