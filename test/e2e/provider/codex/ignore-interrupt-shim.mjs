#!/usr/bin/env node
// TEST-ONLY shim between baton and a real `codex app-server`: forwards every JSON line both ways but swallows
// `turn/interrupt` requests (never forwarded, never answered), so a cancel is never acknowledged — behaviour the real
// binary cannot be made to show on demand. It runs the package's current Codex; other commands pass through.
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// baton passes Codex only a minimal environment, so the real binary is found next to this file, not through env.
const real = realpathSync(
  fileURLToPath(new URL('../../../../node_modules/@openai/codex/bin/codex.js', import.meta.url)),
);
const args = process.argv.slice(2);
const child = spawn(process.execPath, [real, ...args], { stdio: ['pipe', 'inherit', 'inherit'] });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  try {
    if (JSON.parse(line).method === 'turn/interrupt') return;
  } catch {}
  child.stdin.write(`${line}\n`);
});
lines.on('close', () => child.stdin.end());
