// The isolated Claude config dir (rule: isolated-homes): a private CLAUDE_CONFIG_DIR holding a copy of the user's
// credentials file, so no user-level settings, hooks, MCP servers or plugins reach a run; rotated credentials flow back
// per lib/auth-mirror.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type AuthMirror, mirrorAuthFile } from '../../lib/auth-mirror.ts';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';

export const CREDENTIALS_FILE = '.credentials.json';

/** The user's own Claude config dir: $CLAUDE_CONFIG_DIR, else ~/.claude. */
export function canonicalClaudeConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
}

export class ClaudeConfigHome {
  readonly dir: string;
  private readonly canonicalCredentials: string;
  readonly isolatedCredentials: string;

  constructor(dir: string, canonicalDir: string) {
    this.dir = ensurePrivateDir(dir);
    this.canonicalCredentials = join(canonicalDir, CREDENTIALS_FILE);
    this.isolatedCredentials = join(this.dir, CREDENTIALS_FILE);
    const settings = join(this.dir, 'settings.json');
    if (!existsSync(settings)) writePrivateFile(settings, `${JSON.stringify({ disableAllHooks: true }, null, 2)}\n`);
  }

  beginRun(): AuthMirror {
    return mirrorAuthFile(this.canonicalCredentials, this.isolatedCredentials);
  }

  /** True when rotated credentials were written back to the user's file. */
  endRun(mirror: AuthMirror): boolean {
    return mirror.writeBack();
  }
}
