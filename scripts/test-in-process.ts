// The one file scripts/test.ts hands node:test's run({ isolation: 'none' }): it imports the in-process test files in
// turn, so their tests register in the runner's own process. A file that fails to load becomes a failing test named
// after it: run() in isolation 'none' drops such an error without a word (Node 24.21), where a process of its own
// would have failed the file.

import { relative } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const FILES_KEY = Symbol.for('baton.test.inProcessFiles');
const files = (globalThis as Record<symbol, string[] | undefined>)[FILES_KEY] ?? [];
for (const file of files) {
  try {
    await import(pathToFileURL(file).href);
  } catch (err) {
    test(`${relative(process.cwd(), file)} loads`, () => {
      throw err;
    });
  }
}
