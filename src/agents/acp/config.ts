// Config of an ACP agent entry in config.json (`agents.<name>` with `kind: "acp"`): strict, so a typo is refused at load.
import { z } from 'zod';

/**
 * Default wait for a turn to stop after session/cancel before the cancel counts as unacknowledged (rule:
 * cancel-then-stop).
 */
export const DEFAULT_CANCEL_GRACE_MS = 5_000;
const MAX_CANCEL_GRACE_MS = 600_000;

export const acpConfigSchema = z.strictObject({
  /** The agent's ACP stdio command: binary (resolved from PATH when not absolute) and arguments. */
  command: z.array(z.string().min(1)).min(1, 'command must name the agent binary'),
  /** Extra environment for the agent, on top of the allowlisted part of the user's (BATON_* never passes). */
  env: z.record(z.string(), z.string()).optional(),
  /** Grant the agent's permission requests instead of denying them (rule: deny-and-report). */
  allowPermissions: z.boolean().optional(),
  cancelGraceMs: z.int().min(0).max(MAX_CANCEL_GRACE_MS).optional(),
});

export type AcpConfig = z.infer<typeof acpConfigSchema>;
