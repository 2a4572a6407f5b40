import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';

/** A private temp dir removed when the test (or suite) ends. */
export function tempDir(t: Pick<TestContext, 'after'>, prefix = 'baton-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Retried: this hook runs before later-registered ones, so a hub they stop may still be adding files to the tree (its
  // store marker is replaced by rename), and a removal that failed would skip the hooks that stop it.
  t.after(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  return dir;
}

// Cleanups of what a file shares across its tests (one hub per file): registered from a `before` hook or a test, they
// run, newest first, when the file's tests are done (node:test hooks registered while a hook runs would fire too early).
const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});
export const fileHooks = { after: (fn: () => unknown) => void cleanups.push(fn) } as unknown as Pick<
  TestContext,
  'after'
>;
