// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Where baton finds its per-user config and how roots are edited: the resolver's precedence with injected
// env/platform/home, and init/roots add/remove on a config in a temp dir (never the real user's home).
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { addRoots, ConfigError, listRoots, loadConfig, removeRoot } from '../../src/faces/hub/config.ts';
import { locateConfig, userLocation } from '../../src/faces/locate.ts';
import { tempDir } from '../support/tmp.ts';

const home = '/home/ada';
const cwd = '/work/proj';

test('locate: --config > BATON_CONFIG > BATON_HOME > XDG dirs > ~/.config and ~/.local/state', () => {
  const all = {
    BATON_CONFIG: '/etc/b/config.json',
    BATON_HOME: '/srv/baton',
    XDG_CONFIG_HOME: '/x/config',
    XDG_STATE_HOME: '/x/state',
  };
  const at = (env: NodeJS.ProcessEnv, flag?: string) => locateConfig({ flag, env, home, cwd, platform: 'linux' });

  assert.deepEqual(at(all, 'cfg/mine.json'), {
    configPath: '/work/proj/cfg/mine.json',
    connectionsDir: '/work/proj/cfg/connections',
    stateDir: '/work/proj/cfg/state',
    source: 'flag',
  });
  assert.deepEqual(at(all), {
    configPath: '/etc/b/config.json',
    connectionsDir: '/etc/b/connections',
    stateDir: '/etc/b/state',
    source: 'BATON_CONFIG',
  });
  const { BATON_CONFIG: _c, ...noConfig } = all;
  assert.deepEqual(at(noConfig), {
    configPath: '/srv/baton/config.json',
    connectionsDir: '/srv/baton/connections',
    stateDir: '/srv/baton/state',
    source: 'BATON_HOME',
  });
  const { BATON_HOME: _h, ...xdgOnly } = noConfig;
  assert.deepEqual(at(xdgOnly), {
    configPath: '/x/config/baton/config.json',
    connectionsDir: '/x/config/baton/connections',
    stateDir: '/x/state/baton',
    source: 'user',
  });
  assert.deepEqual(at({}), {
    configPath: '/home/ada/.config/baton/config.json',
    connectionsDir: '/home/ada/.config/baton/connections',
    stateDir: '/home/ada/.local/state/baton',
    source: 'user',
  });
  // Empty vars count as unset; relative XDG dirs are ignored, as the XDG spec says.
  assert.equal(
    at({ BATON_CONFIG: '', BATON_HOME: '', XDG_CONFIG_HOME: 'rel' }).configPath,
    join(home, '.config/baton/config.json'),
  );
  // A relative BATON_HOME is taken from the current directory.
  assert.equal(at({ BATON_HOME: 'b' }).configPath, '/work/proj/b/config.json');
});

test('locate: macOS keeps config, connections and state under ~/Library/Application Support/baton', () => {
  const base = '/home/ada/Library/Application Support/baton';
  assert.deepEqual(locateConfig({ env: { XDG_CONFIG_HOME: '/x' }, home, cwd, platform: 'darwin' }), {
    configPath: `${base}/config.json`,
    connectionsDir: `${base}/connections`,
    stateDir: `${base}/state`,
    source: 'user',
  });
  assert.equal(locateConfig({ env: { BATON_HOME: '/b' }, home, cwd, platform: 'darwin' }).configPath, '/b/config.json');
});

test('locate: --config naming the user config keeps its state dir (as the service unit passes it)', () => {
  const env = { XDG_CONFIG_HOME: '/x/config', XDG_STATE_HOME: '/x/state' };
  const user = userLocation({ env, home, cwd, platform: 'linux' });
  assert.deepEqual(locateConfig({ flag: user.configPath, env, home, cwd, platform: 'linux' }), user);
});

function fixture(t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t, 'baton-roots-');
  const loc = locateConfig({ env: { BATON_HOME: join(dir, 'home') }, home: dir, cwd: dir });
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  mkdirSync(a);
  mkdirSync(b);
  return { dir, loc, a, b };
}

test('roots: init creates (0600, atomic), adds, is idempotent, and never rewrites tokens', (t) => {
  const { dir, loc, a, b } = fixture(t);
  const first = addRoots({ location: loc, roots: [a], agents: {} });
  assert.deepEqual([first.created, first.added], [true, [a]]);
  const created = readFileSync(loc.configPath, 'utf8');
  assert.equal(statSync(loc.configPath).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, 'home')).mode & 0o777, 0o700);
  assert.equal(JSON.parse(created).stateDir, undefined, 'state/ beside the config needs no stateDir key');

  const second = addRoots({ location: loc, roots: [b, a], agents: {} });
  assert.deepEqual([second.created, second.added, second.already], [false, [b], [a]]);
  const after = JSON.parse(readFileSync(loc.configPath, 'utf8'));
  assert.deepEqual(after.roots, [a, b]);
  assert.deepEqual(after.callers, JSON.parse(created).callers, 'tokens unchanged');
  assert.deepEqual(after.control, JSON.parse(created).control);
  assert.equal(statSync(loc.configPath).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(join(dir, 'home')).sort(), ['.gitignore', 'config.json'], 'no temp file left behind');

  const text = readFileSync(loc.configPath, 'utf8');
  // Through a symlink, the same dir is the same root.
  symlinkSync(b, join(dir, 'b-link'));
  const again = addRoots({ location: loc, roots: [join(dir, 'b-link')] });
  assert.deepEqual([again.added, again.already], [[], [b]]);
  assert.equal(readFileSync(loc.configPath, 'utf8'), text, 'idempotent: nothing written');
  assert.deepEqual(listRoots(loc), [a, b]);
  assert.deepEqual(loadConfig(loc).rootsReal, [a, b]);
});

test('roots: a missing dir, or one holding or inside baton files, is refused before anything is written', (t) => {
  const { dir, loc, a } = fixture(t);
  const missing = join(dir, 'nope');
  assert.throws(() => addRoots({ location: loc, roots: [a, missing], agents: {} }), /nope does not exist/);
  assert.equal(existsSync(loc.configPath), false, 'no config half-created');
  addRoots({ location: loc, roots: [a], agents: {} });
  const text = readFileSync(loc.configPath, 'utf8');
  assert.throws(() => addRoots({ location: loc, roots: [missing] }), ConfigError);
  // The token-exfiltration layout: a root that contains baton's config (and so every token) or its state.
  assert.throws(() => addRoots({ location: loc, roots: [dir] }), /contains baton's own files .*home/);
  mkdirSync(join(dir, 'home', 'state'), { recursive: true });
  assert.throws(() => addRoots({ location: loc, roots: [join(dir, 'home', 'state')] }), /inside baton's own files/);
  assert.equal(readFileSync(loc.configPath, 'utf8'), text);

  // A hand-edited config with such a root is refused at load with the reason.
  const raw = JSON.parse(text);
  writeFileSync(loc.configPath, JSON.stringify({ ...raw, roots: [a, dir] }));
  assert.throws(() => loadConfig(loc), /roots\.1: .* contains baton's own files/);
  // So is one whose state dir (here named by stateDir) sits inside a root.
  writeFileSync(loc.configPath, JSON.stringify({ ...raw, stateDir: join(a, '.state') }));
  assert.throws(() => loadConfig(loc), /roots\.0: .* contains baton's own files .*\.state/);
});

test('roots: remove by path (even of a deleted dir), unknown root refused, last root leaves an empty list', (t) => {
  const { dir, loc, a, b } = fixture(t);
  addRoots({ location: loc, roots: [a, b], agents: {} });
  const text = readFileSync(loc.configPath, 'utf8');
  assert.throws(() => removeRoot(loc, join(dir, 'c')), /c is not a root of .*; nothing changed/);
  // A root deleted since: the config no longer loads, says how to drop it, and remove works by its path.
  const gone = join(dir, 'gone');
  mkdirSync(gone);
  addRoots({ location: loc, roots: [gone] });
  rmSync(gone, { recursive: true });
  assert.throws(() => loadConfig(loc), /roots\.2: .*gone does not exist.*`baton roots remove .*gone`/);
  assert.deepEqual(removeRoot(loc, gone).roots, [a, b]);
  assert.equal(readFileSync(loc.configPath, 'utf8'), text);
  assert.equal(readFileSync(loc.configPath, 'utf8'), text);
  assert.deepEqual(removeRoot(loc, a).roots, [b]);
  assert.deepEqual(removeRoot(loc, b).roots, []);
  assert.deepEqual(loadConfig(loc).rootsReal, [], 'zero roots is a valid config');
  assert.throws(() => removeRoot(loc, b), /is not a root .*roots: none/);
});

test('roots: the user config in XDG dirs names its state dir, so --config FILE finds the same store', (t) => {
  const dir = tempDir(t, 'baton-xdg-');
  const env = { XDG_CONFIG_HOME: join(dir, 'cfg'), XDG_STATE_HOME: join(dir, 'st') };
  const loc = locateConfig({ env, home: dir, cwd: dir, platform: 'linux' });
  addRoots({ location: loc, roots: [], agents: {} });
  assert.equal(JSON.parse(readFileSync(loc.configPath, 'utf8')).stateDir, join(dir, 'st', 'baton'));
  const viaFlag = loadConfig(locateConfig({ flag: loc.configPath, env: {}, home: dir, cwd: dir, platform: 'linux' }));
  assert.equal(viaFlag.stateDirPath, join(dir, 'st', 'baton'));
  assert.equal(viaFlag.connectionsDirPath, join(dir, 'cfg', 'baton', 'connections'));
});

test("loadConfig checks each agent entry against its kind's schema: an unknown kind and a bad kind-specific value are refused with their path", (t) => {
  const dir = tempDir(t);
  const project = join(dir, 'project');
  mkdirSync(project);
  const base = {
    version: 1,
    roots: [project],
    control: { token: 'c'.repeat(40) },
    callers: { alice: { token: 'a'.repeat(40) } },
  };
  const write = (name: string, agents: Record<string, unknown>) => {
    const home = join(dir, name);
    mkdirSync(home, { mode: 0o700 });
    const path = join(home, 'config.json');
    writeFileSync(path, JSON.stringify({ ...base, agents }), { mode: 0o600 });
    return path;
  };
  const ok = loadConfig(
    write('ok', {
      claude: { kind: 'claude', effort: 'high' },
      codex: { kind: 'codex' },
      opencode: { kind: 'opencode', model: 'mock/model' },
      gemini: { kind: 'acp', command: ['gemini', '--acp'] },
    }),
  );
  assert.deepEqual(Object.keys(ok.agents), ['claude', 'codex', 'opencode', 'gemini']);
  assert.throws(
    () => loadConfig(write('kind', { robot: { kind: 'robot' } })),
    (err: Error) =>
      err instanceof ConfigError &&
      /agents\.robot\.kind: unknown kind "robot" \(known: acp, claude, codex, opencode\)/.test(err.message),
  );
  assert.throws(
    () => loadConfig(write('effort', { claude: { kind: 'claude', effort: 'extreme' } })),
    (err: Error) => err instanceof ConfigError && /agents\.claude\.effort: /.test(err.message),
  );
  assert.throws(
    () => loadConfig(write('model', { opencode: { kind: 'opencode', model: 'no-slash' } })),
    (err: Error) =>
      err instanceof ConfigError && /agents\.opencode\.model: model must be "provider\/model"/.test(err.message),
  );
});
