// The `claude` agent kind's config schema: a small module of its own, so reading the hub config (every CLI command)
// does not load the adapter (rule: lazy-commands).
import { z } from 'zod';
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
