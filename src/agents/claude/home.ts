// The isolated Claude config dir (AG-9): a private CLAUDE_CONFIG_DIR holding a copy of the user's credentials file, so
// no user-level settings, hooks, MCP servers or plugins reach a run. Rotated credentials flow back to the canonical
// file only when the run changed them and nobody else did meanwhile (a stale run never overwrites a newer login).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';

export const CREDENTIALS_FILE = '.credentials.json';

/** The user's own Claude config dir: $CLAUDE_CONFIG_DIR, else ~/.claude. */
export function canonicalClaudeConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
}

export interface CredentialSnapshot {
  /** Canonical file bytes at the start of the run; undefined when there was none. */
  canonical: Buffer | undefined;
  /** What we copied into the isolated dir. */
  copied: Buffer | undefined;
}

export class ClaudeConfigHome {
  readonly dir: string;
  readonly canonicalDir: string;

  constructor(dir: string, canonicalDir: string) {
    this.dir = ensurePrivateDir(dir);
    this.canonicalDir = canonicalDir;
    const settings = join(this.dir, 'settings.json');
    if (!existsSync(settings)) writePrivateFile(settings, `${JSON.stringify({ disableAllHooks: true }, null, 2)}\n`);
  }

  get canonicalCredentials(): string {
    return join(this.canonicalDir, CREDENTIALS_FILE);
  }

  get isolatedCredentials(): string {
    return join(this.dir, CREDENTIALS_FILE);
  }

  /** Takes the start snapshot and refreshes the private copy (0600) from the canonical file when there is one. */
  beginRun(): CredentialSnapshot {
    const canonical = readIfPresent(this.canonicalCredentials);
    if (canonical) writePrivateFile(this.isolatedCredentials, canonical);
    return { canonical, copied: canonical };
  }

  /**
   * Writes rotated credentials back. Returns true when it did: only if the private copy differs from what was copied
   * and the canonical file still equals the start snapshot.
   */
  endRun(snapshot: CredentialSnapshot): boolean {
    if (!snapshot.copied) return false;
    const now = readIfPresent(this.isolatedCredentials);
    if (!now || now.equals(snapshot.copied)) return false;
    const canonicalNow = readIfPresent(this.canonicalCredentials);
    if (!canonicalNow || !snapshot.canonical || !canonicalNow.equals(snapshot.canonical)) return false;
    writePrivateFile(this.canonicalCredentials, now);
    return true;
  }
}

function readIfPresent(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}
