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

const sshTargetSchema = z.strictObject({
  kind: z.literal('ssh'),
  /** The machine, as OpenSSH names it (a name, an address, or a `Host` alias of the user's ssh config). */
  host: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Za-z0-9_.:%[\]-]+$/, 'must be a host name, an address or an ssh config alias')
    .refine((h) => !h.startsWith('-'), 'must not start with "-"'),
  user: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'must be a user name')
    .optional(),
  port: z.number().int().min(1).max(65_535).optional(),
  /** The private key to log in with (default: ssh's own choice, an ssh-agent included). */
  identityFile: absolutePath.optional(),
  /** The known-hosts file the host key must be in (default: `~/.ssh/known_hosts`); a key not there is refused. */
  knownHostsFile: absolutePath.optional(),
  /** The project dirs on that host a task may run in: remote paths, never checked against this machine. */
  roots: z
    .array(absolutePath.refine((p) => !p.includes('\n'), 'must not contain a newline'))
    .min(1, 'name at least one project dir on that host')
    .max(64),
  /** Where worktree-isolated tasks get their worktrees on that host (default `~/.local/state/baton-worktrees`). */
  worktreesDir: absolutePath.optional(),
});

export const targetConfigSchema = z.discriminatedUnion('kind', [
  localTargetSchema,
  sandboxTargetSchema,
  sshTargetSchema,
]);

export type TargetConfig = z.infer<typeof targetConfigSchema>;
export type TargetKind = TargetConfig['kind'];
export type SshTargetConfig = z.infer<typeof sshTargetSchema>;

export const targetsConfigSchema = z
  .record(
    z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be lowercase letters, digits and dashes, starting with a letter'),
    targetConfigSchema,
  )
  .refine((targets) => targets[LOCAL_TARGET_NAME]?.kind !== 'ssh', {
    message: `"${LOCAL_TARGET_NAME}" is this machine: an ssh target needs a name of its own`,
  });
