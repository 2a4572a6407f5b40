// AG-9's rule for one credential file copied into a private agent home: copy at the start of a run (0600), and write a
// rotated copy back only when the run changed it and the canonical file still equals the start snapshot, so a stale
// run never overwrites a newer login.
import { readFileSync } from 'node:fs';
import { writePrivateFile } from '../lib/private-fs.ts';

export interface CredentialSnapshot {
  /** Canonical file bytes at the start of the run; undefined when there was none. */
  canonical: Buffer | undefined;
}

export class CredentialCopy {
  readonly canonicalPath: string;
  readonly isolatedPath: string;

  constructor(canonicalPath: string, isolatedPath: string) {
    this.canonicalPath = canonicalPath;
    this.isolatedPath = isolatedPath;
  }

  /** Takes the start snapshot and refreshes the private copy from the canonical file when there is one. */
  begin(): CredentialSnapshot {
    const canonical = readIfPresent(this.canonicalPath);
    if (canonical) writePrivateFile(this.isolatedPath, canonical);
    return { canonical };
  }

  /** Writes rotated credentials back; true when it did. */
  end(snapshot: CredentialSnapshot): boolean {
    if (!snapshot.canonical) return false;
    const now = readIfPresent(this.isolatedPath);
    if (!now || now.equals(snapshot.canonical)) return false;
    const canonicalNow = readIfPresent(this.canonicalPath);
    if (!canonicalNow?.equals(snapshot.canonical)) return false;
    writePrivateFile(this.canonicalPath, now);
    return true;
  }
}

export function readIfPresent(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}
