// Codex ≤ 0.153: a byte-for-byte passthrough to Codex's own `codex mcp-server` (P-CX legacy path).
import type { Logger } from '../../../lib/log.ts';
import type { CodexHomeSettings } from './home.ts';
import type { CallLimits } from './turns.ts';

export interface LegacyOptions {
  command: string[];
  homeDir: string;
  settings: CodexHomeSettings;
  userCodexHome: string;
  launchDir: string;
  models: readonly [string, ...string[]];
  defaultGoal?: string;
  limits: CallLimits;
  statusIntervalMs: number;
  heartbeatMs: number;
  logger: Logger;
  onExit: () => void;
}

export async function runLegacyPassthrough(_opts: LegacyOptions): Promise<void> {
  throw new Error('the legacy Codex passthrough is not available yet');
}
