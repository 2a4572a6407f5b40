// The isolated Gemini CLI home (AG-9): GEMINI_CLI_HOME points at a private dir whose `.gemini/` holds a settings file
// baton writes (auth type only, no MCP servers, extensions, telemetry or update checks) and copies of the user's
// OAuth files, written back per credential-copy's rule.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ensurePrivateDir, writePrivateFile } from '../../lib/private-fs.ts';
import { CredentialCopy, type CredentialSnapshot, readIfPresent } from '../credential-copy.ts';

/** Auth files of the Gemini CLI that a run may need and may rotate. */
const CREDENTIAL_FILES = ['oauth_creds.json', 'google_accounts.json'] as const;

/** The user's own `.gemini` dir: $GEMINI_CLI_HOME/.gemini, else ~/.gemini. */
export function canonicalGeminiDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.GEMINI_CLI_HOME || env.HOME || homedir(), '.gemini');
}

export class GeminiHome {
  /** Value for GEMINI_CLI_HOME. */
  readonly dir: string;
  private readonly copies: CredentialCopy[];

  constructor(dir: string, canonicalDir: string, env: NodeJS.ProcessEnv) {
    this.dir = ensurePrivateDir(dir);
    const own = ensurePrivateDir(join(dir, '.gemini'));
    this.copies = CREDENTIAL_FILES.map((f) => new CredentialCopy(join(canonicalDir, f), join(own, f)));
    writePrivateFile(join(own, 'settings.json'), `${JSON.stringify(minimalSettings(canonicalDir, env), null, 2)}\n`);
  }

  beginRun(): CredentialSnapshot[] {
    return this.copies.map((c) => c.begin());
  }

  endRun(snapshots: CredentialSnapshot[]): void {
    for (const [i, copy] of this.copies.entries()) copy.end(snapshots[i]!);
  }
}

/** Only the user's chosen auth type survives; everything else is baton's. */
function minimalSettings(canonicalDir: string, env: NodeJS.ProcessEnv): Record<string, unknown> {
  let selectedType: unknown;
  try {
    const user = JSON.parse(readIfPresent(join(canonicalDir, 'settings.json'))?.toString('utf8') ?? '{}');
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
