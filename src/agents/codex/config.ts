// The `codex` agent kind's entry in config.json (strict: unknown keys are refused).
import { z } from 'zod';

/** A model provider the operator configured; written to the isolated home as `[model_providers.<id>]`. */
export const codexModelProviderSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'modelProvider.id: letters, digits, "_" or "-" (at most 64)')
    .refine((id) => id !== 'openai', 'modelProvider.id "openai" is built in; omit modelProvider to use it'),
  name: z.string().min(1).max(200).optional(),
  baseUrl: z.url({ protocol: /^https?$/ }).max(2048),
  wireApi: z.enum(['responses']).optional(),
  /** Name of an environment variable holding the provider's API key; passed to Codex, never stored. */
  envKey: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)
    .refine(
      (k) => !k.startsWith('BATON_'),
      'modelProvider.envKey cannot name a BATON_* variable (none reaches a child)',
    )
    .optional(),
  requiresOpenaiAuth: z.boolean().optional(),
  requestMaxRetries: z.number().int().min(0).max(10).optional(),
  streamMaxRetries: z.number().int().min(0).max(10).optional(),
  streamIdleTimeoutMs: z.number().int().min(1_000).max(3_600_000).optional(),
});

export type CodexModelProvider = z.infer<typeof codexModelProviderSchema>;

const TOML_KEY_PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export const codexAgentConfigSchema = z.strictObject({
  /** argv that runs Codex (default: `codex` on PATH), e.g. ["node", "/path/to/@openai/codex/bin/codex.js"]. */
  command: z.array(z.string().min(1).max(4096)).min(1).max(16).optional(),
  /** Model for new threads (a per-task model overrides it). */
  model: z.string().min(1).max(200).optional(),
  modelProvider: codexModelProviderSchema.optional(),
  /** Extra Codex config (`-c key=value`); MCP servers cannot be added this way (rule: no-recursion). */
  configOverrides: z
    .record(
      z
        .string()
        .regex(TOML_KEY_PATH, 'configOverrides keys are dotted config paths')
        .refine((k) => !/^(mcp_servers|model_providers)(\.|$)/.test(k), 'configOverrides cannot add MCP servers'),
      z.union([z.string().max(4096), z.number(), z.boolean()]),
    )
    .optional(),
  /** Where the user's own Codex login lives (default $CODEX_HOME, else ~/.codex): auth.json is copied from here. */
  userCodexHome: z.string().min(1).max(4096).optional(),
  /** Grace after turn/interrupt before the process group is stopped (rule: cancel-then-stop). */
  cancelGraceMs: z.number().int().min(100).max(120_000).optional(),
  /** Deadline for the app-server's initialize answer (a cold start can be slow). */
  initializeTimeoutMs: z.number().int().min(1).max(120_000).optional(),
});

export type CodexAgentConfig = z.infer<typeof codexAgentConfigSchema>;
