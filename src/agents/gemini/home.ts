// The isolated Gemini CLI home (rule: isolated-homes): GEMINI_CLI_HOME points at a private dir whose `.gemini/` holds a
// settings file baton writes (auth type only, no MCP servers, extensions, telemetry or update checks) and copies of the
// user's OAuth files, written back per lib/auth-mirror's rule.

import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type AuthMirror, mirrorAuthFile } from '../../lib/auth-mirror.ts';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';

/** Auth files of the Gemini CLI that a run may need and may rotate. */
const CREDENTIAL_FILES = ['oauth_creds.json', 'google_accounts.json'] as const;

/** The user's own `.gemini` dir: $GEMINI_CLI_HOME/.gemini, else ~/.gemini. */
export function canonicalGeminiDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.GEMINI_CLI_HOME || env.HOME || homedir(), '.gemini');
}

export class GeminiHome {
  /** Value for GEMINI_CLI_HOME. */
  readonly dir: string;
  private readonly files: Array<{ canonical: string; isolated: string }>;

  constructor(dir: string, canonicalDir: string, env: NodeJS.ProcessEnv) {
    this.dir = ensurePrivateDir(dir);
    const own = ensurePrivateDir(join(dir, '.gemini'));
    this.files = CREDENTIAL_FILES.map((f) => ({ canonical: join(canonicalDir, f), isolated: join(own, f) }));
    writePrivateFile(join(own, 'settings.json'), `${JSON.stringify(minimalSettings(canonicalDir, env), null, 2)}\n`);
  }

  beginRun(): AuthMirror[] {
    return this.files.map((f) => mirrorAuthFile(f.canonical, f.isolated));
  }

  endRun(mirrors: AuthMirror[]): void {
    for (const m of mirrors) m.writeBack();
  }
}

/** Only the user's chosen auth type survives; everything else is baton's. */
function minimalSettings(canonicalDir: string, env: NodeJS.ProcessEnv): Record<string, unknown> {
  let selectedType: unknown;
  try {
    const user = JSON.parse(readFileSync(join(canonicalDir, 'settings.json'), 'utf8'));
    selectedType = user?.security?.auth?.selectedType;
  } catch {}
  if (typeof selectedType !== 'string' && env.GEMINI_API_KEY) selectedType = 'gemini-api-key';
  return {
    ...(typeof selectedType === 'string' ? { security: { auth: { selectedType } } } : {}),
    privacy: { usageStatisticsEnabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
    telemetry: { enabled: false },
  };
}
