// The `gemini` agent kind (one-shot CLI runs, always sandboxed): strict config schema and factory.
import { join } from 'node:path';
import { z } from 'zod';
import type { AgentKind } from '../registry.ts';
import { GEMINI_SANDBOX_MODES, GeminiAgent } from './agent.ts';

export const geminiConfigSchema = z.strictObject({
  /** argv prefix of the CLI (default ["gemini"]); `agy` fits too. */
  command: z.array(z.string().min(1).max(4096)).min(1).max(16).optional(),
  model: z.string().min(1).max(200).optional(),
  sandboxMode: z.enum(GEMINI_SANDBOX_MODES).optional(),
});

export const geminiKind: AgentKind<typeof geminiConfigSchema> = {
  configSchema: geminiConfigSchema,
  create: (name, config, ctx) =>
    new GeminiAgent(name, {
      ...config,
      homeDir: join(ctx.stateDir, 'homes', `gemini-${name.replace(/[^A-Za-z0-9_.-]/g, '_')}`),
      logger: ctx.logger,
    }),
};

export { GeminiAgent } from './agent.ts';
