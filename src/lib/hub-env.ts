// The hub's own environment holds no caller's token and no credential of baton's (rule: hub-env-clean): a process's
// environment as it was exec'd is readable at /proc/<pid>/environ by every process of the same user, a delegated
// agent included, and no later change to process.env removes it from there. So the daemon is exec'd without them:
// `baton start` spawns it so, `baton serve` replaces itself (execve, same pid) by a copy without them. A credential the
// hub itself uses (a user-run OpenCode server's password) is handed over through a private file the new process reads
// into memory and removes before it starts any agent.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { registerSecret, SECRET_ENV_NAMES } from './redact.ts';

/** Callers' tokens as tokens.env exports them. */
const TOKEN_PREFIX = 'BATON_TOKEN_';
/** Names the handover file of a daemon being exec'd (a path, no secret). */
const HANDOVER = 'BATON_SECRETS_HANDOVER';
const HANDOVER_DIR_PREFIX = 'baton-handover-';
/** baton's credentials the hub itself reads from its environment. */
const HUB_USES: readonly string[] = ['OPENCODE_SERVER_PASSWORD'];

/** A variable a hub's environment must not hold: a caller's token or a credential of baton's. */
export function isHubSecret(name: string): boolean {
  return name.startsWith(TOKEN_PREFIX) || (SECRET_ENV_NAMES as readonly string[]).includes(name);
}

/**
 * The environment to exec a daemon with: `env` without secrets. Those the hub uses go into a new 0600 file in a 0700
 * dir of their own, named by BATON_SECRETS_HANDOVER.
 */
export function daemonEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const clean: Record<string, string> = {};
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || name === HANDOVER) continue;
    if (!isHubSecret(name)) clean[name] = value;
    else if (HUB_USES.includes(name)) kept[name] = value;
  }
  if (Object.keys(kept).length) {
    const file = join(mkdtempSync(join(tmpdir(), HANDOVER_DIR_PREFIX)), 'secrets.json');
    writeFileSync(file, JSON.stringify(kept), { mode: 0o600, flag: 'wx' });
    clean[HANDOVER] = file;
  }
  return clean;
}

/**
 * In the daemon, first thing: the handed-over credentials into process.env (memory only; registered for redaction)
 * and their file removed.
 */
export function takeHandover(): void {
  const file = process.env[HANDOVER];
  if (!file) return;
  delete process.env[HANDOVER];
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    for (const name of HUB_USES) {
      const value = kept[name];
      if (typeof value !== 'string') continue;
      process.env[name] = value;
      registerSecret(value);
    }
  } catch {
    // No file (already taken, or never written): the hub runs without it, as without the variable.
  } finally {
    const dir = dirname(file);
    if (basename(dir).startsWith(HANDOVER_DIR_PREFIX)) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `baton serve` in an environment holding secrets replaces itself by the same command without them (same pid, same
 * stdio); where the platform cannot exec, it refuses with the reason rather than run with them.
 */
export function execWithoutSecrets(): void {
  const held = Object.keys(process.env).filter(isHubSecret);
  if (!held.length) return;
  if (typeof process.execve !== 'function') {
    throw new Error(
      `refusing to serve with ${held.join(', ')} in the environment (a delegated agent could read them from the hub's ` +
        'process); start the hub from an environment without them, or with `baton start`',
    );
  }
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], daemonEnv());
}
