#!/usr/bin/env node
// The `baton` command. Plain JS so that an older Node reaches the version check below instead of failing on syntax or
// on `node:sqlite`; the program itself is the compiled dist/ (`npm run build`, run by `prepare`).
import { existsSync } from 'node:fs';

const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `baton needs Node.js 24 or later (this is ${process.version}); install Node 24 (https://nodejs.org) and run it again.\n`,
  );
  process.exit(1);
}
const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  // A checkout that was never built: say how to build rather than print a module-resolution stack.
  process.stderr.write('baton: dist/ is missing; run `npm run build` (or `npm ci`) in the baton checkout first.\n');
  process.exit(1);
}
await import(main.href);
