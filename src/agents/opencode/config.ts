// The `opencode` agent kind's config schema: a small module of its own, so reading the hub config (every CLI command)
// does not load the adapter and its HTTP client (rule: lazy-commands).
import { z } from 'zod';

export const MODEL_PATTERN = /^[^/\s]+\/\S+$/;

export const openCodeConfigSchema = z.strictObject({
  /** The opencode binary (default `opencode` on PATH). */
  binary: z.string().min(1).optional(),
  /** Use this running server instead of starting one; its password comes from OPENCODE_SERVER_PASSWORD. */
  serverUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** `provider/model`, passed on every message (a bad model otherwise sticks to a session). */
  model: z.string().regex(MODEL_PATTERN, 'model must be "provider/model"').optional(),
  /** Extra environment for a server baton starts (for example OPENCODE_CONFIG_CONTENT). */
  env: z.record(z.string(), z.string()).optional(),
  cancelGraceMs: z.int().min(0).max(600_000).optional(),
});

export type OpenCodeAgentConfig = z.infer<typeof openCodeConfigSchema>;
