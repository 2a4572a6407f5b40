#!/usr/bin/env node
// TEST-ONLY shim between baton and the real legacy `codex mcp-server` (0.153.4), for what the real binary cannot be
// made to do on demand. The mode is read, per frame, from `shim-mode.json` in the bridge's launch directory (three
// levels above CODEX_HOME, which baton puts under <launch>/tmp/codex-homes/): {tee?: true} appends every raw line Codex
// writes to shim-tee.log; {unauthorized?: true} turns Codex's error event for an HTTP 401 into the typed unauthorized
// event a failed ChatGPT token refresh produces; {withholdResponses?: true} drops Codex's tools/call results;
// {ignoreCancel?: true} drops the client's notifications/cancelled; {cutMidFrame?: true} writes half of the first
// codex/event task_started frame, then stalls Codex's output for good.
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const real = realpathSync(
  fileURLToPath(new URL('../../../../node_modules/codex-legacy/bin/codex.js', import.meta.url)),
);
const launchDir = process.env.CODEX_HOME ? join(process.env.CODEX_HOME, '..', '..', '..') : process.cwd();
const mode = () => {
  try {
    return JSON.parse(readFileSync(join(launchDir, 'shim-mode.json'), 'utf8'));
  } catch {
    return {};
  }
};
const child = spawn(process.execPath, [real, ...process.argv.slice(2)], { stdio: ['pipe', 'pipe', 'inherit'] });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
let stalled = false;
createInterface({ input: child.stdout }).on('line', (line) => {
  if (stalled) return;
  const m = mode();
  if (m.tee) appendFileSync(join(launchDir, 'shim-tee.log'), `${line}\n`);
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    process.stdout.write(`${line}\n`);
    return;
  }
  const event = msg.method === 'codex/event' ? msg.params?.msg : undefined;
  if (m.cutMidFrame && event?.type === 'task_started') {
    stalled = true;
    process.stdout.write(line.slice(0, Math.floor(line.length / 2)));
    return;
  }
  if (m.unauthorized && event?.type === 'error' && /401/.test(String(event.message))) {
    msg.params.msg = { ...event, codex_error_info: 'unauthorized' };
    process.stdout.write(`${JSON.stringify(msg)}\n`);
    return;
  }
  if (m.withholdResponses && msg.id !== undefined && msg.result?.structuredContent?.threadId) return;
  process.stdout.write(`${line}\n`);
});
createInterface({ input: process.stdin })
  .on('line', (line) => {
    try {
      if (mode().ignoreCancel && JSON.parse(line).method === 'notifications/cancelled') return;
    } catch {}
    child.stdin.write(`${line}\n`);
  })
  .on('close', () => child.stdin.end());
