// Files baton writes under its state dir and agent homes: dirs 0700, files 0600 (rule: private-files).
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) and forces it to 0700, whatever the umask said. */
export function ensurePrivateDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if ((statSync(dir).mode & 0o777) !== PRIVATE_DIR_MODE) chmodSync(dir, PRIVATE_DIR_MODE);
  return dir;
}

/** Writes a file atomically (temp file + rename) with mode 0600; its parent dir is made private. */
export function writePrivateFile(path: string, data: string | Uint8Array, opts: { exclusive?: boolean } = {}): void {
  ensurePrivateDir(dirname(path));
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, data, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  chmodSync(tmp, PRIVATE_FILE_MODE);
  if (!opts.exclusive) {
    renameSync(tmp, path);
    return;
  }
  // A hard link fails with EEXIST when the file exists (baton must never overwrite, e.g. a config's tokens) and,
  // like rename, never shows a reader a half-written file.
  try {
    linkSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
}
