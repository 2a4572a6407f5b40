#!/usr/bin/env node
// The `baton` command. Plain JS so that an older Node reaches the version check below instead of failing on syntax or
// on `node:sqlite`; the program itself is the compiled dist/ (`npm run build`; `npm pack` and `npm start` run it).
import { existsSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

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
  process.stderr.write('baton: dist/ is missing; run `npm run build` in the baton checkout first.\n');
  process.exit(1);
}
enableCompileCache();
await import(main.href);

/**
 * Node's compile cache for baton's own start-up: every start after the first reuses V8's compiled code for
 * dist/ and the dependencies instead of compiling ~170 modules again. It lives in a private per-user cache dir, never
 * the shared tmp dir Node would pick (another user could plant code there). NODE_COMPILE_CACHE and
 * NODE_DISABLE_COMPILE_CACHE keep their meaning (Node applies them itself); any failure leaves the cache off.
 */
function enableCompileCache() {
  if (process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  try {
    const xdg = process.env.XDG_CACHE_HOME;
    const base =
      process.platform === 'darwin'
        ? join(homedir(), 'Library', 'Caches')
        : xdg && isAbsolute(xdg)
          ? xdg
          : join(homedir(), '.cache');
    const dir = join(base, 'baton', 'node-compile-cache');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    module.enableCompileCache?.(dir);
  } catch {
    // A read-only or missing home: start without the cache.
  }
}
