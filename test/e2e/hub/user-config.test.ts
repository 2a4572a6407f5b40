// One config per user with the real CLI and a real hub daemon: `baton init` from project dirs, `baton roots`,
// commands run from other directories reaching the hub through the same resolved config, a running hub picking up root
// changes without a restart, and the token-exfiltration layout (baton's files inside a root) refused. Every
// process gets its BATON_HOME (or XDG dirs and HOME) inside the test's temp dir.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../support/bins.ts';
import {
  batonHome,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  startHub,
  writeHubConfig,
} from '../../support/hub.ts';
import { portForLater } from '../../support/ports.ts';
import { acpScript, SCRIPTED_ACP_AGENT } from '../../support/scripted-agent.ts';
import { tempDir } from '../../support/tmp.ts';

const run = promisify(execFile);
// Without the devDependency agents on PATH, so a created config configures none.
const PATH_WITHOUT_AGENTS = (process.env.PATH ?? '')
  .split(':')
  .filter((p) => !p.includes('node_modules'))
  .join(':');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function baton(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  return run(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), ...args], { cwd, env }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: Ran) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('baton init in project dirs: one XDG user config, roots added idempotently, bad roots refused, nothing rewritten', async (t) => {
  const dir = tempDir(t, 'baton-user-');
  const env = isolatedEnv(dir, {
    BATON_HOME: '',
    XDG_CONFIG_HOME: join(dir, 'xdg-config'),
    XDG_STATE_HOME: join(dir, 'xdg-state'),
    HOME: join(dir, 'home'),
    PATH: PATH_WITHOUT_AGENTS,
  });
  const configPath = join(dir, 'xdg-config', 'baton', 'config.json');
  const [a, b, elsewhere] = ['proj-a', 'proj-b', 'elsewhere'].map((n) => join(dir, n));
  for (const d of [a, b, elsewhere]) mkdirSync(d!);

  const first = await baton(['init'], a!, env);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, new RegExp(`created ${configPath} with root ${a}\\n`));
  const created = JSON.parse(readFileSync(configPath, 'utf8'));
  assert.deepEqual(created.roots, [a]);
  assert.equal(created.stateDir, join(dir, 'xdg-state', 'baton'), 'the store goes to XDG_STATE_HOME');

  const second = await baton(['init'], b!, env);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, new RegExp(`added root ${b} to ${configPath}\\n`));
  const text = readFileSync(configPath, 'utf8');
  assert.deepEqual(JSON.parse(text).roots, [a, b]);
  assert.deepEqual(JSON.parse(text).callers, created.callers, 'tokens kept');

  const again = await baton(['init'], b!, env);
  assert.equal(again.code, 0);
  assert.match(again.stdout, new RegExp(`${b} is already a root of ${configPath}; nothing changed`));
  assert.equal(readFileSync(configPath, 'utf8'), text, 'idempotent');

  const missing = await baton(['init', '--root', join(dir, 'typo')], elsewhere!, env);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /typo does not exist; give an existing project directory/);
  assert.equal(readFileSync(configPath, 'utf8'), text, 'config unchanged');

  const list = await baton(['roots', 'list'], elsewhere!, env);
  assert.equal(list.stdout, `${a}\n${b}\n`);
  const unknown = await baton(['roots', 'remove', elsewhere!], elsewhere!, env);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /elsewhere is not a root of .*; nothing changed/);
  assert.equal(readFileSync(configPath, 'utf8'), text);

  // The examples land in the user config's connections/ dir, with `export` lines.
  const ex = await baton(['examples'], elsewhere!, env);
  assert.equal(ex.code, 0, ex.stderr);
  const tokens = readFileSync(join(dir, 'xdg-config', 'baton', 'connections', 'tokens.env'), 'utf8');
  assert.match(tokens, /^export BATON_TOKEN_CLAUDE=\S{40,}$/m);

  // No config anywhere: commands that talk to a hub say where they looked and create nothing.
  const empty = isolatedEnv(join(dir, 'nobody'), { PATH: PATH_WITHOUT_AGENTS });
  for (const cmd of [['tasks'], ['health'], ['stop'], ['roots', 'add', a!]]) {
    const r = await baton(cmd, elsewhere!, empty);
    assert.equal(r.code, 1, cmd.join(' '));
    assert.match(
      r.stderr,
      /no baton config at .*nobody.*config\.json \(from \$BATON_HOME\); run `baton init` in a project/,
    );
  }
  assert.equal(existsSync(batonHome(join(dir, 'nobody'))), false, 'no second config created');
});

test('the token-exfiltration layout is refused: baton init with BATON_HOME inside the project, a root holding the state dir', async (t) => {
  const dir = tempDir(t, 'baton-exfil-');
  const project = join(dir, 'project');
  mkdirSync(project);
  const env = isolatedEnv(dir, { BATON_HOME: join(project, '.baton'), PATH: PATH_WITHOUT_AGENTS });
  const init = await baton(['init'], project, env);
  assert.equal(init.code, 1);
  assert.match(init.stderr, /project contains baton's own files .*\.baton.*; authorise a project directory/);
  assert.equal(existsSync(join(project, '.baton')), false, 'nothing written');

  // A hand-written config whose root holds baton's state: the hub refuses to start, naming the root.
  const config = writeHubConfig({ dir: project, roots: [project], agents: {} });
  const serve = await baton(['--config', config, 'serve'], dir, env);
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /roots\.0: .*project contains baton's own files/);
  assert.equal(existsSync(join(batonHome(project), 'state')), false, 'no store opened');
});

test('a running hub: roots added and removed from another dir apply without a restart; tasks, health and stop reach it', async (t) => {
  const dir = tempDir(t, 'baton-reload-');
  const [project, other] = ['project', 'other'].map((n) => join(dir, n));
  for (const d of [project, other]) mkdirSync(d!);
  const agentState = join(dir, 'agent-state');
  mkdirSync(agentState, { mode: 0o700 });
  const port = await portForLater();
  const hub = await startHub(t, {
    dir,
    byHome: true,
    port,
    roots: [],
    agents: {
      scripted: {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        env: { ACP_TEST_AGENT_RECORD: join(dir, 'record.jsonl'), ACP_TEST_AGENT_STATE: agentState },
      },
    },
  });
  await until('the no-roots notice', () =>
    hub.output().includes('no project roots yet — run `baton init` in a project'),
  );
  const env = isolatedEnv(dir, { PATH: PATH_WITHOUT_AGENTS });
  const alice = await connectCaller(t, hub, 'alice');
  let keys = 0;
  const delegate = () =>
    call<{ taskId: string }>(alice, 'agent_run', {
      agent: 'scripted',
      prompt: acpScript([{ chunks: ['done here'] }]),
      cwd: project,
      idempotencyKey: `k${keys++}`,
    });

  await assert.rejects(delegate(), /no project roots are authorised yet: run `baton init`/);

  const add = await baton(['roots', 'add', project!], other!, env);
  assert.equal(add.code, 0, add.stderr);
  assert.match(add.stdout, /added root .*project to .*baton-home\/config\.json/);
  // The watcher applies it by itself (no request needed), and says so in the log.
  await until('the hub to log the reload', () => hub.output().includes('roots reloaded'));
  const task = await delegate();
  assert.equal((await followToEnd(alice, task.taskId)).state, 'succeeded');

  // From another directory, with no --config, the CLI finds the same hub.
  const tasks = await baton(['tasks'], other!, env);
  assert.equal(tasks.code, 0, tasks.stderr);
  assert.match(tasks.stdout, new RegExp(`${task.taskId}\\s+alice\\s+scripted\\s+succeeded`));
  const health = JSON.parse((await baton(['health'], other!, env)).stdout);
  assert.deepEqual(health.roots, [project]);

  // A config that fails validation on reload keeps the old roots and logs why.
  const configPath = join(batonHome(dir), 'config.json');
  const good = readFileSync(configPath, 'utf8');
  writeFileSync(configPath, JSON.stringify({ ...JSON.parse(good), roots: [project, join(dir, 'gone')] }));
  const kept = await delegate();
  assert.equal((await followToEnd(alice, kept.taskId)).state, 'succeeded', 'previous roots kept');
  await until('the refused reload in the log', () =>
    /config change refused; keeping the previous roots.*gone does not exist/.test(hub.output()),
  );
  writeFileSync(configPath, good);

  const remove = await baton(['roots', 'remove', project!], other!, env);
  assert.equal(remove.code, 0, remove.stderr);
  assert.match(remove.stdout, /no roots left: agent_run is refused until you run `baton init`/);
  await assert.rejects(delegate(), /no project roots are authorised yet/);

  const stop = await baton(['stop'], other!, env);
  assert.match(stop.stdout, /stopped/);
  await hub.group.exited;
});

test('baton serve with no config creates the user config with no roots and starts', async (t) => {
  const dir = tempDir(t, 'baton-first-');
  const env = isolatedEnv(dir, { PATH: PATH_WITHOUT_AGENTS });
  const { spawnGroup } = await import('../../../src/lib/process-group.ts');
  const g = spawnGroup(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), 'serve', '--port', '0'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => g.stop(2_000));
  let out = '';
  g.child.stdout!.on('data', (d) => {
    out += d;
  });
  g.child.stderr!.on('data', (d) => {
    out += d;
  });
  await until('the hub to print its roots', () => out.includes('\nno project roots yet') || g.child.exitCode !== null);
  const configPath = join(batonHome(dir), 'config.json');
  assert.match(out, new RegExp(`created ${configPath} \\(no project roots yet — run \`baton init\` in a project\\)`));
  assert.match(out, /no project roots yet — run `baton init` in a project/);
  assert.deepEqual(JSON.parse(readFileSync(configPath, 'utf8')).roots, []);
  g.child.kill('SIGTERM');
  await g.exited;
});
