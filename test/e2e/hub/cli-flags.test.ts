// Flags of the real `baton` command (rule: operator-cli): `start` takes --port and --log-level like `serve`, bad values
// are usage errors (exit 2), and `baton mcp --help` lists --provider, every provider and each one's flags, with the
// browser's kebab-case flags and their documented snake_case aliases.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/bins.ts';
import { batonHome, CONTROL_TOKEN, isolatedEnv, writeHubConfig } from '../../support/hub.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { portForLater } from '../../support/ports.ts';
import { tempDir } from '../../support/tmp.ts';

const BATON = join(REPO_ROOT, 'bin', 'baton.js');

async function baton(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [BATON, ...args], { env, maxBuffer: 4 * 1024 * 1024 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

test('baton start --port --log-level: the daemon listens there at that level; bad values exit 2', async (t) => {
  const dir = tempDir(t, 'baton-start-flags-');
  const work = join(dir, 'work');
  mkdirSync(work);
  // The config says debug and some other port: the flags must win.
  const config = writeHubConfig({ dir, roots: [work], agents: {}, port: await portForLater() });
  const env = isolatedEnv(dir);
  for (const bad of [
    ['--port', 'abc'],
    ['--port', '70000'],
    ['--log-level', 'loud'],
  ]) {
    const r = await baton(['--config', config, 'start', ...bad], env);
    assert.equal(r.code, 2, `${bad.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${bad[0]} must be`));
  }

  const port = await portForLater();
  const started = await baton(['--config', config, 'start', '--port', String(port), '--log-level', 'warn'], env);
  const control = (path: string, method = 'GET') =>
    fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${CONTROL_TOKEN}` } });
  t.after(async () => {
    await control('/control/stop?force=1', 'POST').catch(() => {});
  });
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stdout, new RegExp(`started on http://127\\.0\\.0\\.1:${port} \\(pid \\d+\\)`));
  const health = await control('/control/health');
  assert.equal(health.status, 200);
  const { pid } = (await health.json()) as { pid: number };
  // At warn, the info line every start writes is not logged (the config alone would log it at debug).
  const log = readFileSync(join(batonHome(dir), 'state', 'baton.log'), 'utf8');
  assert.doesNotMatch(log, /hub listening/);

  assert.equal((await control('/control/stop', 'POST')).status, 202);
  await until(() => !pidAlive(pid), { what: `the daemon (pid ${pid}) to exit` });
});

test('baton mcp --help lists --provider, every provider and its flags; the browser takes kebab-case and the old aliases', async (t) => {
  const dir = tempDir(t, 'baton-mcp-help-');
  const env = isolatedEnv(dir);
  const help = await baton(['mcp', '--help'], env);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: baton mcp \[--provider <name>\]/);
  assert.match(
    help.stdout,
    /--provider <name> +which provider to serve: browser, claude, codex, gemini \(default: codex\)/,
  );
  for (const [provider, flag] of [
    ['browser', '--browser-lease-command <json>'],
    ['claude', '--claude-command <path>'],
    ['codex', '--codex-command <path>'],
    ['gemini', '--gemini-command <command>'],
  ]) {
    const section = help.stdout.split(`--provider ${provider}:\n`)[1];
    assert.ok(section, `a section for ${provider}`);
    assert.ok(section.split('\n--provider ')[0]!.includes(flag!), `${provider} lists ${flag}`);
  }
  for (const snake of ['--browser_lease_command', '--browser_idle_timeout'])
    assert.ok(help.stdout.includes(snake), `the alias ${snake} is documented`);
  assert.doesNotMatch(help.stdout, /^\s+--browser_[a-z_]+ </m, 'no snake_case flag is listed as a flag');

  const browser = await baton(['mcp', '--provider', 'browser', '--help'], env);
  assert.equal(browser.code, 0, browser.stderr);
  assert.match(browser.stdout, /--browser-idle-timeout <seconds>/);
  assert.doesNotMatch(browser.stdout, /--codex-command/, 'with --provider, only that provider');

  // A bad value through either spelling is the same usage error (exit 2), so the alias reaches the same option.
  for (const flag of ['--browser-idle-timeout', '--browser_idle_timeout', '--browser_idle_timeout=']) {
    const args = flag.endsWith('=') ? [`${flag}soon`] : [flag, 'soon'];
    const r = await baton(['mcp', '--provider', 'browser', ...args], env);
    assert.equal(r.code, 2, `${flag}: ${r.stderr}`);
    assert.match(r.stderr, /option '--browser-idle-timeout <seconds>' argument 'soon' is invalid/);
  }
});

test('baton start --port N: stop, tasks, health and start find that hub without --port; a second one is refused', async (t) => {
  const dir = tempDir(t, 'baton-start-recorded-');
  const work = join(dir, 'work');
  mkdirSync(work);
  // The config names one port; the hub is started on another, which no other command is told.
  const config = writeHubConfig({ dir, roots: [work], agents: {}, port: await portForLater() });
  const env = isolatedEnv(dir);
  const port = await portForLater();
  const started = await baton(['--config', config, 'start', '--port', String(port)], env);
  t.after(async () => {
    await fetch(`http://127.0.0.1:${port}/control/stop?force=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CONTROL_TOKEN}` },
    }).catch(() => {});
  });
  assert.equal(started.code, 0, started.stderr);
  const record = join(batonHome(dir), 'state', 'listen.json');
  assert.equal(statSync(record).mode & 0o777, 0o600, 'the record is baton-private');

  const health = await baton(['--config', config, 'health'], env);
  assert.equal(health.code, 0, health.stderr);
  const { pid, url } = JSON.parse(health.stdout) as { pid: number; url: string };
  assert.equal(url, `http://127.0.0.1:${port}`);
  const tasks = await baton(['--config', config, 'tasks'], env);
  assert.equal(tasks.code, 0, tasks.stderr);
  assert.equal(tasks.stdout, 'no tasks\n');

  const again = await baton(['--config', config, 'start'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, `already running on http://127.0.0.1:${port} (pid ${pid})\n`);
  const elsewhere = await portForLater();
  const second = await baton(['--config', config, 'start', '--port', String(elsewhere)], env);
  assert.equal(second.code, 1);
  assert.equal(
    second.stderr,
    `baton: a hub for this config already runs on http://127.0.0.1:${port} (pid ${pid}); \`baton stop\` it first to start one on port ${elsewhere}\n`,
  );
  const serve = await baton(['--config', config, 'serve', '--port', String(elsewhere)], env);
  assert.equal(serve.code, 1);
  assert.match(
    serve.stderr,
    new RegExp(`^baton: a hub for this config already runs on http://127\\.0\\.0\\.1:${port} `),
  );

  const stopped = await baton(['--config', config, 'stop'], env);
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.equal(stopped.stdout, 'stopped\n');
  await until(() => !pidAlive(pid), { what: `the daemon (pid ${pid}) to exit` });
  assert.ok(!existsSync(record), 'the hub removes its record when it stops');
  assert.equal((await baton(['--config', config, 'stop'], env)).stdout, 'not running\n');
});

test('a port held by another listener: start and serve fail at once with one line naming the port and the fix', async (t) => {
  const dir = tempDir(t, 'baton-port-in-use-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  t.after(() => holder.close());
  const port = (holder.address() as AddressInfo).port;
  const config = writeHubConfig({ dir, roots: [work], agents: {}, port });
  const env = isolatedEnv(dir);
  const line = `baton: port ${port} is in use; stop the other process or pass --port N\n`;
  const start = await baton(['--config', config, 'start'], env);
  assert.equal(start.code, 1);
  assert.equal(start.stderr, line);
  assert.ok(!existsSync(join(batonHome(dir), 'state', 'daemon.out')), 'no daemon was started to find out');
  const serve = await baton(['--config', config, 'serve'], env);
  assert.equal(serve.code, 1);
  assert.equal(serve.stderr, line);
  const other = await baton(['--config', config, 'start', '--port', String(port)], env);
  assert.equal(other.stderr, line);
});

test('baton --version; output into a pipe closed early ends quietly; a service install without a systemd user session leaves nothing', async (t) => {
  const dir = tempDir(t, 'baton-cli-edges-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const config = writeHubConfig({ dir, roots: [work], agents: {}, port: await portForLater() });
  const env = isolatedEnv(dir);

  const version = await baton(['--version'], env);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout, `${JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version}\n`);

  // The reader is gone before the first write (as `| head -1` is after its line): every write meets EPIPE.
  const child = spawn(
    process.execPath,
    [BATON, '--config', config, 'connect', 'claude', '--provider', 'codex', '--print'],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const [code] = (await once(child, 'close')) as [number];
  assert.equal(stderr, '', 'no stack trace');
  assert.equal(code, 0);

  // No XDG_RUNTIME_DIR and no session bus: `systemctl --user` cannot reach a user manager.
  const home = join(dir, 'home');
  mkdirSync(home);
  const noSession = { ...env, HOME: home, XDG_RUNTIME_DIR: '', DBUS_SESSION_BUS_ADDRESS: '' };
  const install = await baton(['--config', config, 'service', 'install'], noSession);
  assert.equal(install.code, 1, install.stdout);
  const unit = join(home, '.config', 'systemd', 'user', 'baton.service');
  assert.match(
    install.stderr,
    /^baton: `systemctl --user daemon-reload` failed: [^\n]*; a systemd user session is needed \(log in to one, or `loginctl enable-linger \$USER`\), or run `baton start` instead; [^\n]*baton\.service was removed\n$/,
  );
  assert.ok(install.stderr.includes(unit), install.stderr);
  assert.ok(!existsSync(join(home, '.config')), 'the dirs the unit went into are gone too');
});
