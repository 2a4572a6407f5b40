// Rule `isolated-homes`: an agent runs on a private copy of the user's login file. A login the agent rotated during the
// run is written back only when the copy changed and the user's file still equals the snapshot taken at start, so a
// stale run never overwrites a newer login.
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { PRIVATE_FILE_MODE, writePrivateFile } from './private-fs.ts';

export interface AuthMirror {
  /** Copies a rotated login back to the user's file under rule `isolated-homes`; true when it wrote. */
  writeBack(): boolean;
}

/** Mirrors `canonicalPath` into `isolatedPath` (0600; removed when the user has none) and remembers the snapshot. */
export function mirrorAuthFile(canonicalPath: string, isolatedPath: string): AuthMirror {
  const snapshot = readOrNull(canonicalPath);
  if (snapshot === null) rmSync(isolatedPath, { force: true });
  else writePrivateFile(isolatedPath, snapshot);
  return {
    writeBack() {
      const isolated = readOrNull(isolatedPath);
      if (snapshot === null || isolated === null || isolated.equals(snapshot)) return false;
      const current = readOrNull(canonicalPath);
      if (current === null || !current.equals(snapshot)) return false;
      // Same directory, temp file then rename: the user's file is replaced whole or not at all.
      const tmp = `${canonicalPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      writeFileSync(tmp, isolated, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
      renameSync(tmp, canonicalPath);
      return true;
    },
  };
}

function readOrNull(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
