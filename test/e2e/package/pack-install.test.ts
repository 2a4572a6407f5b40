// The package as a user gets it: `npm pack` the checkout, install the tarball into a fresh prefix, and run the
// installed `baton` under Node 24 from a directory outside the checkout, with only a private bin dir (holding this
// Node) and the system dirs on PATH — no checkout path, no NODE_PATH, no npm script environment.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { bins, REPO_ROOT } from '../../support/bins.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);
const STEP_TIMEOUT_MS = 240_000;

/** The environment npm gets: the caller's (its cache and registry settings) without the npm-script variables. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.toLowerCase().startsWith('npm_') || /^npm_config_(cache|registry|userconfig)$/i.test(k)) env[k] = v;
  }
  return env;
}

/** Waits until `pattern` shows in the text `read()` returns, failing with that text if the child exits first. */
function waitFor(child: ReturnType<typeof spawn>, read: () => string, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`no ${pattern} within ${STEP_TIMEOUT_MS} ms:\n${read()}`)),
      STEP_TIMEOUT_MS,
    );
    const check = () => {
      const m = pattern.exec(read());
      if (m) finish(null, m);
    };
    const exited = (code: number | null, signal: string | null) =>
      finish(new Error(`exited (${code ?? signal}) before ${pattern}:\n${read()}`));
    const finish = (err: Error | null, m?: RegExpExecArray) => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', exited);
      if (err) reject(err);
      else resolve(m!);
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', exited);
    check();
  });
}

async function stopChild(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

test('the packed tarball installs into a fresh prefix and runs under Node 24 without the checkout', async (t) => {
  const dir = tempDir(t, 'baton-pack-');
  const npm = { env: npmEnv(), timeout: STEP_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 };

  // `npm test` has just built dist/; --ignore-scripts keeps `prepack` from rebuilding it under running tests.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    ...npm,
    cwd: REPO_ROOT,
  });
  const [info] = JSON.parse(packed.stdout) as { filename: string; size: number; unpackedSize: number }[];
  const tarball = join(dir, info!.filename);

  const listing = (await run('tar', ['tzf', tarball], npm)).stdout.split('\n').filter(Boolean);
  t.diagnostic(`tarball: ${listing.length} files, ${info!.size} bytes packed, ${info!.unpackedSize} bytes unpacked`);
  const unexpected = listing.filter(
    (f) =>
      !/^package\/(dist\/.+\.(js|d\.ts)|dist\/faces\/hub\/ui\/client\/[^/]+\.css|bin\/baton\.js|package\.json|README\.md|LICENSE)$/.test(
        f,
      ),
  );
  assert.deepEqual(unexpected, [], 'the tarball ships only dist/, the bin shim, README and package.json');
  // The dashboard's browser files, which the hub reads at start-up.
  for (const f of ['dashboard.js', 'dashboard.css'])
    assert.ok(listing.includes(`package/dist/faces/hub/ui/client/${f}`), `the dashboard's ${f} is shipped`);
  for (const dev of ['test/', '.ci/', 'bench/', 'src/', 'scripts/'])
    assert.ok(!listing.some((f) => f.startsWith(`package/${dev}`)), `no ${dev} in the tarball`);
  assert.ok(listing.includes('package/dist/cli/main.js') && listing.includes('package/dist/index.d.ts'));

  const prefix = join(dir, 'prefix');
  await run('npm', ['install', '--prefix', prefix, tarball, '--prefer-offline', '--no-audit', '--no-fund'], npm);
  const installed = JSON.parse(readFileSync(join(prefix, 'node_modules', 'baton-mcp', 'package.json'), 'utf8'));
  for (const dev of ['@openai/codex', 'typescript', '@biomejs/biome'])
    assert.ok(!(dev in (installed.dependencies ?? {})), `${dev} is not a runtime dependency`);
  // Nothing runs at install time: npm warns about (and may refuse) a package that brings its own install scripts.
  for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
    assert.ok(!(script in (installed.scripts ?? {})), `the package carries no ${script} script`);

  // A PATH with this Node (24) under the name `node` for the bin's shebang, and nothing from the checkout.
  const nodeBin = join(dir, 'node-bin');
  mkdirSync(nodeBin);
  symlinkSync(process.execPath, join(nodeBin, 'node'));
  const home = join(dir, 'home');
  const work = join(dir, 'work');
  mkdirSync(join(home, '.codex'), { recursive: true });
  mkdirSync(join(work, 'project'), { recursive: true });
  const env = {
    PATH: `${nodeBin}:/usr/bin:/bin`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    CODEX_HOME: join(home, '.codex'),
    LANG: 'C.UTF-8',
  };
  assert.ok(!env.PATH.includes(REPO_ROOT));
  const baton = join(prefix, 'node_modules', '.bin', 'baton');
  const opts = { cwd: work, env, timeout: STEP_TIMEOUT_MS };

  await t.test('baton --help', async () => {
    const { stdout } = await run(baton, ['--help'], opts);
    assert.match(stdout, /Usage: baton/);
    for (const cmd of ['serve', 'mcp', 'attach', 'tasks']) assert.match(stdout, new RegExp(`^  ${cmd}\\b`, 'm'));
  });

  await t.test('baton serve answers /healthz', async () => {
    const config = join(work, 'baton', 'config.json');
    const init = await run(baton, ['--config', config, 'init', '--root', join(work, 'project'), '--port', '0'], opts);
    assert.match(init.stdout, /created .*config\.json with root /);
    const hub = spawn(baton, ['--config', config, 'serve'], { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    hub.stdout.on('data', (d) => {
      out += d;
    });
    hub.stderr.on('data', (d) => {
      out += d;
    });
    t.after(() => stopChild(hub));
    const [, url] = await waitFor(hub, () => out, /baton hub listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const res = await fetch(`${url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ok: true });
    // The login page carries the dashboard's style sheet, read from the installed package.
    const login = await (await fetch(`${url}/ui`)).text();
    assert.match(login, /<style\s+nonce="[^"]+">[^<]*form\.logout/);
    await stopChild(hub);
  });

  await t.test('baton mcp --provider codex prints its ready line', async () => {
    const provider = spawn(baton, ['mcp', '--provider', 'codex', '--codex-command', bins.codex()], {
      ...opts,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let err = '';
    provider.stderr.on('data', (d) => {
      err += d;
    });
    t.after(() => stopChild(provider));
    await waitFor(provider, () => err, /\[baton\] ready \(provider: codex\)/);
    const exited = new Promise((r) => provider.once('exit', r));
    provider.stdin.end();
    await exited;
  });

  await t.test("import('baton-mcp') from a script in the prefix", async () => {
    const script = join(prefix, 'use-baton.mjs');
    writeFileSync(
      script,
      "const m = await import('baton-mcp');\n" +
        'console.log(JSON.stringify({ parse: typeof m.parseCodexVersion, client: typeof m.CodexAppServerClient }));\n',
    );
    const { stdout } = await run(process.execPath, [script], { ...opts, cwd: prefix });
    assert.deepEqual(JSON.parse(stdout), { parse: 'function', client: 'function' });
  });
});
