// The `targets.<name>` entries of config.json: where an agent's processes run and what baton fences around them.
// Strict, so a typo is refused at load. Only the schemas live here (every command that reads the config loads them).
import { z } from 'zod';

const absolutePath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith('/'), 'must be an absolute path');

/** The built-in target every agent uses unless its entry names another. */
export const LOCAL_TARGET_NAME = 'local';

const localTargetSchema = z.strictObject({
  kind: z.literal('local'),
  /**
   * The secrets fence (baton's config, connections and state dirs empty in the agent's view, its own /proc): on by
   * default where bubblewrap runs; `false` turns it off for this target.
   */
  fence: z.boolean().optional(),
  /** The bubblewrap binary (default: `bwrap` found in /usr/bin, /bin or /usr/local/bin). */
  bwrap: absolutePath.optional(),
});

const sandboxTargetSchema = z.strictObject({
  kind: z.literal('sandbox'),
  /** Paths the agent may write besides its work dir, its private home and its private /tmp (e.g. a tool cache). */
  writable: z.array(absolutePath).max(64).optional(),
  bwrap: absolutePath.optional(),
});

export const targetConfigSchema = z.discriminatedUnion('kind', [localTargetSchema, sandboxTargetSchema]);

export type TargetConfig = z.infer<typeof targetConfigSchema>;
export type TargetKind = TargetConfig['kind'];

export const targetsConfigSchema = z.record(
  z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be lowercase letters, digits and dashes, starting with a letter'),
  targetConfigSchema,
);
