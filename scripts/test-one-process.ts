// The one test file scripts/test.ts runs for the files marked process-safe: it imports them in turn, so their
// tests all register in this one test process. A file that fails to load becomes a failing test named after it, and
// the files after it still run.

import { relative } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

// The files come as arguments (node:test run()'s `argv`).
const files = process.argv.slice(2);
for (const file of files) {
  try {
    await import(pathToFileURL(file).href);
  } catch (err) {
    test(`${relative(process.cwd(), file)} loads`, () => {
      throw err;
    });
  }
}
