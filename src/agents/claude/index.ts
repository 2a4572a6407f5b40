// The `claude` agent kind: strict config schema and factory (registered in src/agents/registry.ts).
import { z } from 'zod';
import type { AgentKind } from '../agent.ts';
import { ClaudeAgent, claudeHomeDir } from './agent.ts';
import { CLAUDE_EFFORTS } from './policy.ts';

export const claudeConfigSchema = z.strictObject({
  /** Path of the `claude` binary; default `claude` on PATH. */
  command: z.string().min(1).max(4096).optional(),
  model: z.string().min(1).max(200).optional(),
  effort: z.enum(CLAUDE_EFFORTS).optional(),
  /** The user's Claude config dir to copy credentials from; default $CLAUDE_CONFIG_DIR or ~/.claude. */
  userConfigDir: z.string().min(1).max(4096).optional(),
  maxRetries: z.number().int().min(0).max(10).optional(),
});

export const claudeKind: AgentKind<typeof claudeConfigSchema> = {
  configSchema: claudeConfigSchema,
  create: (name, config, ctx) =>
    new ClaudeAgent(name, { ...config, homeDir: claudeHomeDir(ctx.stateDir, name), logger: ctx.logger }),
};
