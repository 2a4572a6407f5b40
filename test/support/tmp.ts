import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

/** A private temp dir removed when the test (or suite) ends. */
export function tempDir(t: Pick<TestContext, 'after'>, prefix = 'baton-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Retried: this hook runs before later-registered ones, so a hub they stop may still be adding files to the tree (its
  // store marker is replaced by rename), and a removal that failed would skip the hooks that stop it.
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  return dir;
}
