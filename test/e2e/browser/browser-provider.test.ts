// `baton mcp --provider browser` end to end: the real chrome-devtools-mcp from npm, a real headless Chromium leased
// through the test lease helper, driven by the official MCP SDK client over stdio (P-BR, P-GEN).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pidAlive, until } from '../../support/poll.ts';
import { tempDir } from '../../support/tmp.ts';
import { type Box, childrenOf, makeBox, processesMentioning, startBaton, startPageServer, text } from './support.ts';

// chrome-devtools-mcp gives a navigation 10 s by default; at the start of a full run Chromium shares two cores with
// every other agent's first start and once took longer. The tests are not about navigation speed.
const NAVIGATION_MS = 60_000;
const byCommand = (box: Box, cmd: string) => box.calls().filter((c) => c[0] === cmd);
const generationOf = (box: Box) =>
  (JSON.parse(readFileSync(join(box.dir, 'state.json'), 'utf8')) as { generation: string }).generation;
const code = (r: { structuredContent?: unknown }) => (r.structuredContent as { code?: string } | undefined)?.code;

test('browser provider over a leased real Chromium', async (t) => {
  const root = tempDir(t, 'baton-browser-');
  const page = await startPageServer(t);
  // The last subtest asserts nothing is left; this only keeps a failed run from leaking browsers.
  t.after(() => {
    for (const pid of processesMentioning(root)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  });

  await t.test('lazy shared lease, navigate/snapshot/click, replaced lease, shutdown release', async () => {
    const box = makeBox(root, 'main');
    const baton = await startBaton(box, ['--viewport', '1024x768', '--app-port', String(page.port)]);
    let session = '';
    let secondGeneration = '';
    const downstreams = new Set<number>();
    try {
      const names = (await baton.client.listTools()).tools.map((tool) => tool.name);
      for (const name of ['list_pages', 'new_page', 'navigate_page', 'take_snapshot', 'click']) {
        assert.ok(names.includes(name), `${name} is advertised`);
      }
      assert.ok(!names.some((n) => /lease|acquire|release/.test(n)), 'no lease tools of its own');
      assert.deepEqual(box.calls(), [], 'nothing is leased before the first browser tool call');
      await until(() => baton.rootsRequests() >= 1, { what: 'roots/list from the downstream' });

      // Two concurrent first calls share one acquisition.
      const [first, second] = await Promise.all([baton.call('list_pages'), baton.call('list_pages')]);
      assert.ok(!first.isError && !second.isError, text(first));
      const acquires = byCommand(box, 'acquire');
      assert.equal(acquires.length, 1, 'one acquire for concurrent calls');
      const [verb, sessionFlag, sessionId, portFlag, port, viewportFlag, viewport, appFlag, appPort, ...extra] =
        acquires[0]!;
      assert.deepEqual(
        [verb, sessionFlag, portFlag, viewportFlag, viewport, appFlag, appPort, extra],
        ['acquire', '--session', '--local-cdp-port', '--viewport', '1024x768', '--app-port', String(page.port), []],
      );
      assert.match(port!, /^\d+$/);
      session = sessionId!;
      for (const pid of childrenOf(baton.transport.pid!)) downstreams.add(pid);
      assert.ok(downstreams.size >= 1, 'chrome-devtools-mcp runs as a child of baton');

      const nav = await baton.call('navigate_page', { type: 'url', url: page.url, timeout: NAVIGATION_MS });
      assert.ok(!nav.isError, text(nav));
      const snapshot = text(await baton.call('take_snapshot'));
      const uid = /uid=(\S+) button "Press me"/.exec(snapshot)?.[1];
      assert.ok(uid, `button uid in snapshot:\n${snapshot}`);
      const click = await baton.call('click', { uid });
      assert.ok(!click.isError, text(click));
      assert.match(text(await baton.call('take_snapshot')), /Button was pressed/);

      // The box replaces the browser: the next result is not passed off as the lease's.
      const firstGeneration = generationOf(box);
      await box.replace();
      const replaced = await baton.call('take_snapshot');
      assert.equal(replaced.isError, true);
      assert.equal(code(replaced), 'browser_lease_replaced', text(replaced));
      assert.match(text(replaced), /state .* is lost and the outcome of this call is unknown/);
      assert.deepEqual(byCommand(box, 'status').at(-1), [
        'status',
        '--session',
        session,
        '--generation',
        firstGeneration,
      ]);

      // The next calls lease afresh (one shared attempt, dispatched in arrival order: the snapshot sees the
      // navigation); the downstream restarts on a new port with the client's initialize replayed.
      const rootsBefore = baton.rootsRequests();
      const [again, seen] = await Promise.all([
        baton.call('navigate_page', { type: 'url', url: page.url, timeout: NAVIGATION_MS }),
        baton.call('take_snapshot'),
      ]);
      assert.ok(!again.isError, text(again));
      assert.match(text(seen), /Press me/, 'FIFO: navigate ran before the snapshot');
      const reacquire = byCommand(box, 'acquire');
      assert.equal(reacquire.length, 2);
      assert.equal(reacquire[1]![2], session, 'same session id');
      assert.notEqual(reacquire[1]![4], port, 'a fresh local CDP port');
      await until(() => baton.rootsRequests() > rootsBefore, { what: 'roots/list from the replayed initialize' });
      assert.equal(baton.lateInitializeResults(), 0, 'no duplicate initialize result');
      secondGeneration = generationOf(box);
      for (const pid of childrenOf(baton.transport.pid!)) downstreams.add(pid);
    } finally {
      await baton.close();
    }
    const release = await until(() => byCommand(box, 'release')[0], { what: 'shutdown release' });
    assert.deepEqual(release, [
      'release',
      '--session',
      session,
      '--generation',
      secondGeneration,
      '--reason',
      'shutdown',
    ]);
    await until(() => processesMentioning(box.dir).length === 0, { what: 'no Chromium left from this box' });
    // Every chrome-devtools-mcp baton started was reaped with it.
    for (const pid of downstreams) assert.equal(pidAlive(pid), false, `child ${pid} of baton is gone`);
  });

  await t.test('helper exit codes (69, 70, death, invalid record, 75), status 0/70, downstream crash', async () => {
    const box = makeBox(root, 'exits');
    const baton = await startBaton(box, []);
    try {
      const preflight = 'dev server preflight failed: http://127.0.0.1:5173 refused the connection';
      box.control({ acquire: [{ exit: 69, stderr: preflight }] });
      const unavailable = await baton.call('list_pages');
      assert.equal(unavailable.isError, true);
      assert.equal(code(unavailable), 'browser_unavailable');
      assert.deepEqual(
        unavailable.content.map((c) => (c as { text: string }).text),
        ['GUI not verified — no browser box available', preflight],
        'fail-closed message and the preflight error verbatim',
      );
      assert.equal(processesMentioning(box.dir).length, 0, 'no browser started anywhere');

      box.control({ acquire: [70] });
      const unknown = await baton.call('list_pages');
      assert.equal(code(unknown), 'browser_lease_unknown');
      assert.match(text(unknown), /unknown/);
      assert.doesNotMatch(text(unknown), /lost|replaced/);

      box.control({ acquire: ['die'] });
      const died = await baton.call('list_pages');
      assert.equal(code(died), 'browser_lease_failed');
      assert.match(text(died), /SIGKILL/);

      box.control({ acquire: ['bad-record'] });
      const invalid = await baton.call('list_pages');
      assert.equal(code(invalid), 'browser_lease_invalid');
      assert.match(text(invalid), /unknown key "exec"/);

      // Races up to the bound: each retry uses a new port and a restarted downstream that got the replayed
      // initialize (its roots/list reaches the client); the client sees no second initialize result.
      box.control({ acquire: [75, 75, 75, 75] });
      const before = byCommand(box, 'acquire').length;
      const rootsBeforeRace = baton.rootsRequests();
      const race = await baton.call('list_pages');
      assert.equal(code(race), 'browser_port_race');
      const raced = byCommand(box, 'acquire').slice(before);
      assert.equal(raced.length, 4, 'first try plus three retries');
      assert.equal(new Set(raced.map((c) => c[4])).size, 4, 'four distinct ports');
      assert.ok(baton.rootsRequests() >= rootsBeforeRace + 3, 'replayed initialize (with roots) per restart');
      assert.equal(baton.lateInitializeResults(), 0, 'no duplicate initialize result');

      // A race, then success on the retry's new port. (One race, not more: every retry restarts chrome-devtools-mcp,
      // ~1 CPU s, and the retries' ports and replays are pinned just above.)
      box.control({ acquire: [75, 'ok'] });
      const rootsBefore = baton.rootsRequests();
      const start = byCommand(box, 'acquire').length;
      const recovered = await baton.call('list_pages');
      assert.ok(!recovered.isError, text(recovered));
      const tries = byCommand(box, 'acquire').slice(start);
      assert.equal(tries.length, 2);
      assert.equal(new Set(tries.map((c) => c[4])).size, 2, 'two distinct ports');
      assert.ok(baton.rootsRequests() >= rootsBefore + 1, 'replayed initialize (with roots) on the restart');
      assert.equal(baton.lateInitializeResults(), 0, 'no duplicate initialize result');

      // A native tool failure with the lease intact (status 0) keeps the native error as it is.
      const statusBefore = byCommand(box, 'status').length;
      const bogus = await baton.call('click', { uid: 'no-such-uid' });
      assert.equal(bogus.isError, true);
      assert.notEqual(code(bogus), 'browser_lease_replaced');
      assert.doesNotMatch(text(bogus), /browser_lease_replaced/);
      assert.equal(byCommand(box, 'status').length, statusBefore + 1, 'the failure was checked with the helper');

      // Status 70 (unknown) is not read as a lost lease either.
      box.control({ status: [70] });
      const unknownStatus = await baton.call('click', { uid: 'no-such-uid' });
      assert.equal(unknownStatus.isError, true);
      assert.doesNotMatch(text(unknownStatus), /browser_lease_replaced/);
      const stillLeased = await baton.call('list_pages');
      assert.ok(!stillLeased.isError, 'the lease is kept after status 70');
      assert.equal(byCommand(box, 'acquire').length, start + 2, 'no new acquire');

      // chrome-devtools-mcp dies: a fresh one starts on the same port with the initialize replayed; lease kept.
      // Retired downstreams of the port-race retries are reaped; one chrome-devtools-mcp remains.
      const children = await until(
        () => {
          const now = childrenOf(baton.transport.pid!);
          return now.length === 1 && now;
        },
        { what: 'one child under baton' },
      );
      const rootsBeforeCrash = baton.rootsRequests();
      process.kill(children[0]!, 'SIGKILL');
      await until(() => baton.rootsRequests() > rootsBeforeCrash, { what: 'the restarted downstream asks for roots' });
      const afterCrash = await baton.call('list_pages');
      assert.ok(!afterCrash.isError, text(afterCrash));
      assert.equal(byCommand(box, 'acquire').length, start + 2, 'the lease survived the downstream restart');
      assert.equal(baton.lateInitializeResults(), 0, 'no duplicate initialize result');
    } finally {
      await baton.close();
    }
    await until(() => byCommand(box, 'release').find((c) => c.includes('shutdown')), { what: 'shutdown release' });
    await until(() => processesMentioning(box.dir).length === 0, { what: 'no Chromium left from this box' });
  });

  await t.test('idle release, a fresh lease on the next call, opt-in URL limits', async () => {
    const box = makeBox(root, 'idle');
    const elsewhere = await startPageServer(t);
    const baton = await startBaton(box, [
      '--browser_idle_timeout',
      '1',
      '--browser_allowed_url_pattern',
      `http://127.0.0.1:${page.port}/*`,
    ]);
    try {
      assert.ok(!(await baton.call('list_pages')).isError);
      const generation = generationOf(box);
      const release = await until(() => byCommand(box, 'release')[0], { what: 'idle release' });
      assert.deepEqual(release.slice(3), ['--generation', generation, '--reason', 'idle']);
      await until(() => processesMentioning(box.dir).length === 0, { what: 'the idle lease Chromium is gone' });

      const opened = await baton.call('new_page', { url: page.url, timeout: NAVIGATION_MS });
      assert.ok(!opened.isError, text(opened));
      assert.match(text(opened), /baton test page/);
      assert.equal(byCommand(box, 'acquire').length, 2, 'the next call leased afresh');
      const blocked = await baton.call('navigate_page', { type: 'url', url: elsewhere.url });
      assert.match(text(blocked), /blocked/, 'a URL outside --browser_allowed_url_pattern is refused');
    } finally {
      await baton.close();
    }
    await until(() => processesMentioning(box.dir).length === 0, { what: 'no Chromium left from this box' });
  });

  await t.test('no Chromium from this suite is left running', () => {
    assert.deepEqual(processesMentioning(root), []);
  });
});
