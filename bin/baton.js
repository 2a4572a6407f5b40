#!/usr/bin/env node
// baton runs its TypeScript sources directly on Node >= 24 (built-in type stripping).
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    `baton needs Node.js 24 or later (this is ${process.version}); run it through npm scripts or install Node 24.\n`,
  );
  process.exit(1);
}
await import('../src/cli/main.ts');
