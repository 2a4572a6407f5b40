// The dashboard (UX-2) in a REAL headless Chromium driven over the DevTools protocol (the `ws` package),
// against a real `baton serve` and the scripted ACP agent: login by form and by a one-time `baton ui` link (once only);
// the list newest first, refreshing by itself, filtered; a task page showing its prompt, its answer and its git
// snapshot, following state changes live without a reload; Cancel and Continue from the page, refused without the
// session's CSRF token or from another origin; HTML in a prompt and an answer rendered inert; times in the viewer's
// zone; no token, session id or link code in any page, URL or log; and the targets (a Targets table with each one's
// fence and warning, a task's target where it is not `local`).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';
import { spawnGroup } from '../../../src/lib/process-group.ts';
import { REPO_ROOT } from '../../support/bins.ts';
import { CHROMIUM, HEADLESS_CHROMIUM_FLAGS } from '../../support/chromium.ts';
import { git } from '../../support/git.ts';
import {
  batonHome,
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  isolatedEnv,
  runGroup,
  startHub,
  TEST_CALLERS,
  waitForEvent,
  writeCliConfig,
  writeHubConfig,
} from '../../support/hub.ts';
import { pidAlive, until } from '../../support/poll.ts';
import { portForLater } from '../../support/ports.ts';
import { scriptedAgentSetup } from '../../support/scripted-agent.ts';
import { fileHooks, tempDir } from '../../support/tmp.ts';

const CDP_TIMEOUT_MS = 30_000;
/** How long a page may take to show what a test waits for (a round to run, the list to refresh) on a loaded machine. */
const PAGE_WAIT_MS = 120_000;
// biome-ignore lint/suspicious/noExplicitAny: DevTools protocol replies are untyped here (no protocol typings dependency)
type CdpValue = any;

/** A DevTools protocol connection to the browser, with flat sessions for pages. */
class Cdp {
  private readonly ws: WebSocket;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: CdpValue) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<(msg: { method: string; params: CdpValue; sessionId?: string }) => void>();

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data));
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(`${msg.error.message} (${msg.error.code})`));
        else p?.resolve(msg.result);
      } else for (const l of this.listeners) l(msg);
    });
  }

  static async connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return new Cdp(ws);
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
    timeoutMs = CDP_TIMEOUT_MS,
  ): Promise<CdpValue> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method} got no answer`)), timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  /** Resolves with the next event `method` of `sessionId`. */
  next(method: string, sessionId: string): Promise<CdpValue> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${method}`)), CDP_TIMEOUT_MS);
      const l = (msg: { method: string; params: CdpValue; sessionId?: string }) => {
        if (msg.method === method && msg.sessionId === sessionId) {
          clearTimeout(timer);
          this.listeners.delete(l);
          resolve(msg.params);
        }
      };
      this.listeners.add(l);
    });
  }

  /** A new tab, in a fresh browser context (its own cookie jar) unless `context` names one. */
  async tab(context?: string): Promise<Tab> {
    const browserContextId = context ?? (await this.send('Target.createBrowserContext')).browserContextId;
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank', browserContextId });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    await this.send('Page.enable', {}, sessionId);
    // A zone far from UTC, so times shown in the viewer's zone are told apart from UTC ones.
    await this.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Kolkata' }, sessionId);
    return new Tab(this, sessionId, browserContextId);
  }

  close(): void {
    this.ws.close();
  }
}

/** One browser tab. */
class Tab {
  readonly cdp: Cdp;
  readonly session: string;
  readonly context: string;
  constructor(cdp: Cdp, session: string, context: string) {
    this.cdp = cdp;
    this.session = session;
    this.context = context;
  }

  /** Runs `action` (which starts a navigation) and waits for the new page's load event. */
  async loading(action: () => Promise<unknown>): Promise<void> {
    const loaded = this.cdp.next('Page.loadEventFired', this.session);
    await action();
    await loaded;
  }

  goto(url: string): Promise<void> {
    return this.loading(() => this.cdp.send('Page.navigate', { url }, this.session));
  }

  async eval<T = unknown>(expression: string, timeoutMs = CDP_TIMEOUT_MS): Promise<T> {
    const r = await this.cdp.send(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      this.session,
      timeoutMs,
    );
    if (r.exceptionDetails) throw new Error(`page script failed: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value as T;
  }

  /**
   * Resolves with the value of `expression` once it is truthy, re-evaluated on every change of the page (no polling
   * interval stands in for the change); fails naming `what` after PAGE_WAIT_MS.
   */
  waitFor<T = unknown>(expression: string, what: string): Promise<T> {
    return this.eval<T>(
      `new Promise((resolve, reject) => {
        const probe = () => (${expression});
        const first = probe();
        if (first) return resolve(first);
        const timer = setTimeout(() => { observer.disconnect(); reject(new Error(${JSON.stringify(`timed out waiting for ${what}`)})); }, ${PAGE_WAIT_MS});
        const observer = new MutationObserver(() => {
          const v = probe();
          if (v) { observer.disconnect(); clearTimeout(timer); resolve(v); }
        });
        observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
      })`,
      PAGE_WAIT_MS + 5_000,
    );
  }

  /** Fills the login form and submits it like a user would. */
  login(token: string): Promise<void> {
    return this.loading(() =>
      this.eval(
        `document.querySelector('input[name=token]').value = ${JSON.stringify(token)}; document.querySelector('form[action="/ui/login"]').requestSubmit();`,
      ),
    );
  }

  async cookies(): Promise<Array<CdpValue>> {
    return (await this.cdp.send('Storage.getCookies', { browserContextId: this.context })).cookies;
  }

  html(): Promise<string> {
    return this.eval<string>('location.href + "\\n" + document.documentElement.outerHTML');
  }

  text(selector: string): Promise<string> {
    return this.eval<string>(`document.querySelector(${JSON.stringify(selector)})?.textContent ?? ''`);
  }
}

async function launchChromium(t: { after: (fn: () => Promise<unknown>) => void }, dir: string): Promise<Cdp> {
  const profile = join(dir, 'chromium-profile');
  mkdirSync(profile);
  const group = spawnGroup(
    CHROMIUM,
    [
      ...HEADLESS_CHROMIUM_FLAGS,
      '--disable-dev-shm-usage',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  t.after(() => group.stop(3_000));
  let err = '';
  const wsUrl = await new Promise<string>((resolve, reject) => {
    group.child.stderr!.on('data', (d) => {
      err += d;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    group.exited.then((e) => reject(new Error(`chromium exited (${e.code ?? e.signal}):\n${err}`)));
  });
  const cdp = await Cdp.connect(wsUrl);
  t.after(async () => cdp.close());
  return cdp;
}

let chromium: Promise<Cdp> | undefined;
/** The file's one headless Chromium: every tab opens in a browser context of its own (its own cookie jar). */
function sharedChromium(): Promise<Cdp> {
  chromium ??= launchChromium(fileHooks, tempDir(fileHooks, 'baton-ux-chromium-'));
  return chromium;
}

/** A prompt for the scripted agent; `note` is ignored by it and only there to be shown. */
const script = (steps: unknown[], note = '') => JSON.stringify({ steps, note });

test('dashboard in headless Chromium: login, list, prompt, answer, live state, git, cancel, continue, CSRF', async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-');
  const { work, entry } = scriptedAgentSetup(dir);
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(join(work, 'README'), 'hello\n');
  git(work, 'add', 'README');
  git(work, 'commit', '-q', '-m', 'init');
  // Dirty before any round: while a round runs it must read as "dirty before", not as cleaned by the agent.
  writeFileSync(join(work, 'notes-before.txt'), 'already here\n');
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: entry } });
  await until(() => /dashboard: http:\/\/127\.0\.0\.1:\d+\/ui \(log in with `baton ui`\)/.test(hub.output()), {
    what: '`baton serve` to print the /ui URL',
  });
  const bob = await connectCaller(t, hub, 'bob');
  const alice = await connectCaller(t, hub, 'alice');
  const other = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: script([{ reply: 'bob was here' }]),
    cwd: work,
    idempotencyKey: 'ui-bob',
  });
  assert.equal((await followToEnd(bob, other.taskId)).state, 'succeeded');
  // A holds the work tree; B waits for it in the lock queue, so B's page sees queued → running → succeeded.
  const a = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: script([
      { writeFile: { name: 'made-by-agent.txt', content: 'new\n' } },
      { plan: [{ content: '<img id="xss-event" src="x">step', status: 'in_progress', priority: 'high' }] },
      { stall: true },
    ]),
    cwd: work,
    idempotencyKey: 'ui-alice-a',
  });
  await waitForEvent(alice, a.taskId, (e) => e.kind === 'status');
  const b = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: script([{ reply: 'answer: <img id="xss-answer" src="x"><b>bold</b>' }], '<b id="xss-prompt">prompt</b>'),
    cwd: work,
    idempotencyKey: 'ui-alice-b',
  });

  // Without a session: the login form only, whatever the path; no token in a URL; no foreign origin.
  const anonymous = await fetch(`${hub.url}/ui/tasks/${a.taskId}`);
  assert.equal(anonymous.status, 401);
  const anonymousHtml = await anonymous.text();
  assert.match(anonymousHtml, /name="token"/);
  assert.equal(anonymousHtml.includes(a.taskId), false);
  assert.equal((await fetch(`${hub.url}/ui/tasks/${a.taskId}/events`)).status, 401);
  assert.equal((await fetch(`${hub.url}/ui/rows`)).status, 401);
  assert.equal((await fetch(`${hub.url}/ui/login?token=${CONTROL_TOKEN}`)).status, 405, 'no login by URL');
  const foreign = await fetch(`${hub.url}/ui/login`, {
    method: 'POST',
    headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${CONTROL_TOKEN}`,
    redirect: 'manual',
  });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get('set-cookie'), null);

  const cdp = await sharedChromium();
  const tab = await cdp.tab();
  await tab.goto(`${hub.url}/ui`);
  await tab.login('not-the-control-token');
  assert.match(await tab.html(), /id="error"/);
  assert.deepEqual(await tab.cookies(), [], 'a wrong token gets no session');
  await tab.goto(`${hub.url}/ui/tasks/${a.taskId}`);
  assert.equal((await tab.html()).includes('made-by-agent'), false, 'a wrong token sees no task');
  await tab.login(TEST_CALLERS.alice);
  assert.deepEqual(await tab.cookies(), [], 'a caller token is not the control token');

  await tab.goto(`${hub.url}/ui`);
  await tab.login(CONTROL_TOKEN);
  const [cookie] = await tab.cookies();
  assert.ok(cookie, 'logged in');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(cookie.path, '/ui');
  assert.notEqual(cookie.value, CONTROL_TOKEN);

  // The list: newest first, with project, agent, caller, state, age and the start of the prompt.
  const rows = () =>
    tab.eval<string[][]>(
      `[...document.querySelectorAll('#tasks tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent.trim()))`,
    );
  const list = await tab.html();
  assert.deepEqual(
    (await rows()).map((r) => r[0]),
    [b.taskId, a.taskId, other.taskId],
  );
  const [rowB, rowA, rowBob] = await rows();
  assert.deepEqual(rowA!.slice(1, 5), ['work', 'scripted', 'alice', 'running']);
  assert.deepEqual(rowB!.slice(1, 5), ['work', 'scripted', 'alice', 'queued']);
  assert.deepEqual(rowBob!.slice(1, 5), ['work', 'scripted', 'bob', 'succeeded']);
  assert.match(rowBob![5]!, /^\d+ (s|min)$/, 'age');
  assert.match(rowBob![6]!, /bob was here/, 'prompt start');
  assert.match(await tab.text('.offset'), /^UTC\+05:30$/, "the viewer's zone is named");
  // It refreshes by itself: a task started now appears on top without a reload.
  const marker = await tab.eval<number>('window.pageMarker = Math.random()');
  const c = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: script([{ reply: 'third' }], 'a fresh task'),
    cwd: work,
    idempotencyKey: 'ui-bob-c',
  });
  await tab.waitFor(
    `document.querySelector('#tasks tbody tr')?.dataset.task === ${JSON.stringify(c.taskId)}`,
    'the new task on top of the list',
  );
  assert.equal(await tab.eval('window.pageMarker'), marker, 'no reload');
  assert.deepEqual(
    (await rows()).map((r) => r[0]),
    [c.taskId, b.taskId, a.taskId, other.taskId],
  );
  // The filter keeps what matches (here: the caller's name).
  await tab.goto(`${hub.url}/ui?q=BOB`);
  assert.deepEqual(
    (await rows()).map((r) => r[0]),
    [c.taskId, other.taskId],
  );

  // B's page while it waits: its prompt shown, the HTML in it inert, no answer yet.
  const tabB = await cdp.tab(tab.context);
  await tabB.goto(`${hub.url}/ui/tasks/${b.taskId}`);
  assert.equal(await tabB.text('#fact-state'), 'queued');
  assert.match(await tabB.text('#round-1 pre.prompt'), /<b id=\\"xss-prompt\\">prompt<\/b>/, 'the prompt, as text');
  assert.equal(await tabB.eval('document.getElementById("xss-prompt")'), null, 'HTML in a prompt is inert');
  assert.match(await tabB.text('#answer'), /No answer yet/);
  assert.match(await tabB.text('#fact-created'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30$/);
  const bMarker = await tabB.eval<number>('window.pageMarker = Math.random()');

  // A's page while it runs: the before snapshot only, no per-file "clean"; the agent's event text inert.
  await tab.goto(`${hub.url}/ui/tasks/${a.taskId}`);
  assert.equal(await tab.text('#fact-state'), 'running');
  const running = await tab.text('#round-1');
  assert.match(running, /git before: main@[0-9a-f]{12}, 1 dirty/);
  assert.match(running, /git after: not taken yet/);
  assert.match(running, /dirty before the round \(1\)\s*\?\? notes-before\.txt/);
  assert.equal(running.includes('clean'), false, 'nothing reads as cleaned while the round runs');
  assert.equal(await tab.eval('document.querySelector("#round-1 table.changes")'), null);
  assert.equal(await tab.eval('document.getElementById("xss-event")'), null, 'agent text is escaped');
  assert.match(await tab.text('#events'), /r1 status <img id="xss-event" src="x">step/);

  // CSRF: the session cookie alone does not cancel, nor does a form from another origin.
  const sessionCookie = `baton_ui=${cookie.value}`;
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${hub.url}${path}`, {
      method: 'POST',
      headers: { cookie: sessionCookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
      redirect: 'manual',
    });
  const csrf = await tab.eval<string>('document.querySelector("#controls input[name=csrf]").value');
  assert.equal((await post(`/ui/tasks/${a.taskId}/cancel`, '', { origin: hub.url })).status, 403, 'no CSRF token');
  assert.equal(
    (await post(`/ui/tasks/${a.taskId}/cancel`, 'csrf=wrong', { origin: hub.url })).status,
    403,
    'wrong CSRF token',
  );
  assert.equal((await post(`/ui/tasks/${a.taskId}/cancel`, `csrf=${csrf}`)).status, 403, 'no Origin');
  assert.equal(
    (await post(`/ui/tasks/${a.taskId}/cancel`, `csrf=${csrf}`, { origin: 'http://evil.example' })).status,
    403,
    'foreign Origin',
  );
  assert.equal(await tab.text('#fact-state'), 'running', 'none of those cancelled');

  // Cancel from the page: an operator cancel, and the page follows to the after snapshot without a reload.
  await tab.loading(() => tab.eval('document.getElementById("cancel").click()'));
  const aMarker = await tab.eval<number>('window.pageMarker = Math.random()');
  await tab.waitFor(`document.getElementById('fact-state')?.textContent === 'cancelled'`, 'A cancelled on its page');
  await tab.waitFor(`document.querySelector('#round-1 table.changes')`, 'the after snapshot on A’s page');
  assert.equal(await tab.eval('window.pageMarker'), aMarker, 'no reload');
  const ended = await tab.text('#round-1');
  assert.match(ended, /git after: main@[0-9a-f]{12}, 2 dirty/);
  assert.match(await tab.html(), /<tr><td>made-by-agent\.txt<\/td><td>clean<\/td><td>untracked \(\?\?\)<\/td><\/tr>/);
  assert.doesNotMatch(await tab.html(), /<td>notes-before\.txt<\/td>/, 'an unchanged dirty file is not a change');
  assert.match(await tab.text('#fact-error'), /cancelled by the operator/);
  assert.equal((await followToEnd(alice, a.taskId)).last.error, 'cancelled by the operator');

  // B's open page follows it through running to succeeded, with its answer, all without a reload.
  await tabB.waitFor(`document.getElementById('fact-state')?.textContent === 'succeeded'`, 'B succeeded on its page');
  await tabB.waitFor(`document.querySelector('#answer pre.answer')`, 'B’s answer on its page');
  assert.equal(await tabB.eval('window.pageMarker'), bMarker, 'no reload');
  assert.equal(
    await tabB.text('#round-1 .round-facts .state-succeeded'),
    'succeeded',
    'the round, not only the header',
  );
  assert.match(await tabB.text('#answer pre.answer'), /answer: <img id="xss-answer" src="x"><b>bold<\/b>/);
  assert.equal(await tabB.eval('document.getElementById("xss-answer")'), null, 'HTML in an answer is inert');
  assert.equal(await tabB.eval('document.querySelector("#answer b")'), null);
  const states = await tabB.eval<string[]>(
    `[...document.querySelectorAll('#events li[data-kind="lifecycle"]')].map((li) => li.dataset.state)`,
  );
  assert.deepEqual(states, ['queued', 'running', 'succeeded']);
  await tabB.waitFor(`document.getElementById('stream').textContent.includes('ended')`, 'the stream to end');

  // Continue from the page: the prompt box appeared live; a second round runs as B's caller's.
  await tabB.loading(() =>
    tabB.eval(
      `document.getElementById('prompt').value = ${JSON.stringify(script([{ reply: 'round two' }]))}; document.getElementById('continue').click();`,
    ),
  );
  await tabB.waitFor(`document.querySelector('#round-2 .state-succeeded')`, 'round 2 succeeded on the page');
  assert.match(await tabB.text('#answer pre.answer'), /^round two$/);
  const afterContinue = await followToEnd(alice, b.taskId);
  assert.equal(afterContinue.state, 'succeeded');
  assert.equal(afterContinue.last.round, 2);
  // The operator's round reads as the operator's: on the caller's own events, on the page and in `baton tasks show`;
  // the caller's own round stays unmarked.
  const queued = afterContinue.events.filter((e) => e.kind === 'lifecycle' && e.state === 'queued');
  assert.deepEqual(
    queued.map((e) => [e.round, e.by]),
    [
      [1, undefined],
      [2, 'operator'],
    ],
  );
  assert.deepEqual(
    await tabB.eval(
      `[...document.querySelectorAll('#events li[data-kind="lifecycle"][data-state="queued"]')].map((li) => li.querySelector('.head').textContent + ': ' + li.querySelector('.text').textContent)`,
    ),
    ['r1 lifecycle: queued', 'r2 lifecycle: queued by the operator'],
  );
  assert.equal(await tabB.text('#round-2 .round-facts .by'), 'queued by the operator', "the round's own facts say so");
  assert.equal(await tabB.eval(`document.querySelector('#round-1 .round-facts .by')`), null);
  const shown = await runGroup(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'baton.js'),
      '--config',
      writeCliConfig(hub, join(batonHome(dir), 'cli.json')),
      'tasks',
      'show',
      b.taskId,
    ],
    isolatedEnv(dir),
  );
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^ {2}\S+ r2 lifecycle queued by the operator$/m);
  assert.match(shown.stdout, /^ {2}\S+ r1 lifecycle queued$/m);

  const logText = readFileSync(join(hub.stateDir, 'baton.log'), 'utf8');
  const logLines = logText
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  for (const l of logLines) assert.ok(l.time && l.level && l.msg, JSON.stringify(l));
  assert.equal(logLines.filter((l) => l.msg === 'dashboard login refused' && l.level === 'warn').length, 2);
  assert.equal(logLines.filter((l) => l.msg === 'dashboard login' && l.level === 'info').length, 1);
  assert.equal(logLines.filter((l) => l.msg === 'dashboard cancel' && l.taskId === a.taskId).length, 1);

  const seen = [list, await tab.html(), await tabB.html(), hub.output(), logText].join('\n');
  for (const s of [CONTROL_TOKEN, cookie.value as string, ...Object.values(TEST_CALLERS)]) {
    assert.equal(seen.includes(s), false, 'no token or session id in pages, URLs or logs');
  }
  assert.equal([hub.output(), logText].join('\n').includes(csrf), false, 'no CSRF token in logs');
});

test('baton ui: a one-time login link that works once, and never the token in a URL or log', async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-link-');
  const work = join(dir, 'work');
  mkdirSync(work);
  // A fixed port: `baton ui` finds the hub through the config, as a user's would.
  const port = await portForLater();
  const configPath = writeHubConfig({ dir, roots: [work], agents: {}, port });
  const baton = (...args: string[]) =>
    execFileSync(process.execPath, [join(REPO_ROOT, 'bin', 'baton.js'), '--config', configPath, ...args], {
      env: isolatedEnv(dir, { DISPLAY: '', WAYLAND_DISPLAY: '' }),
      encoding: 'utf8',
    });
  const started = baton('start');
  // Stopped by its pid, not by `baton stop`: the after hooks run in order, so the temp dir (and config) may be gone.
  const pid = Number(/\(pid (\d+)\)/.exec(started)?.[1]);
  t.after(async () => {
    if (!pidAlive(pid)) return;
    process.kill(pid, 'SIGTERM');
    await until(() => !pidAlive(pid), { what: `the hub (pid ${pid}) to stop`, timeoutMs: 60_000 });
  });
  assert.match(started, /dashboard: http:\/\/127\.0\.0\.1:\d+\/ui \(log in with `baton ui`\)/, 'start prints /ui');
  const hub = {
    url: `http://127.0.0.1:${port}`,
    stateDir: join(batonHome(dir), 'state'),
    output: () => readFileSync(join(batonHome(dir), 'state', 'daemon.out'), 'utf8'),
  };
  // No display: `baton ui` prints the link instead of trying to open a browser.
  const printed = baton('ui');
  const link = /^(http:\/\/127\.0\.0\.1:\d+\/ui\/link\/[A-Za-z0-9_-]+)$/m.exec(printed)?.[1];
  assert.ok(link, printed);
  assert.match(printed, /works once, for 5 minutes/);
  assert.equal(printed.includes(CONTROL_TOKEN), false);
  const code = link.split('/').pop()!;
  assert.notEqual(code, CONTROL_TOKEN);

  // Only the control token may ask for a link.
  const refused = await fetch(`${hub.url}/ui/link`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_CALLERS.alice}` },
  });
  assert.equal(refused.status, 401);

  const cdp = await sharedChromium();
  const first = await cdp.tab();
  await first.goto(link);
  assert.equal(await first.eval('location.pathname'), '/ui', 'the code is gone from the address bar');
  assert.match(await first.html(), /Tasks \(all callers\)/, 'logged in by the link');
  const [cookie] = await first.cookies();
  assert.ok(cookie);
  assert.equal(cookie.httpOnly, true);
  assert.notEqual(cookie.value, code);

  // A second browser (its own cookie jar) cannot use the same link again.
  const second = await cdp.tab();
  await second.goto(link);
  assert.match(await second.text('#error'), /already used or has expired/);
  assert.deepEqual(await second.cookies(), [], 'no session from a used link');
  await second.goto(`${hub.url}/ui`);
  assert.match(await second.html(), /name="token"/, 'still logged out');

  // A second `baton ui` gives a different link, which works once too.
  const again = /^(http:\/\/\S+\/ui\/link\/\S+)$/m.exec(baton('ui', '--print'))?.[1];
  assert.ok(again && again !== link);
  const third = await cdp.tab();
  await third.goto(again);
  assert.equal((await third.cookies()).length, 1);

  const logText = readFileSync(join(hub.stateDir, 'baton.log'), 'utf8');
  assert.equal(
    logText.split('\n').filter((l) => l.includes('"dashboard login"') && l.includes('"via":"link"')).length,
    2,
  );
  assert.match(logText, /dashboard login link refused/);
  for (const secret of [code, again.split('/').pop()!, CONTROL_TOKEN, cookie.value as string]) {
    assert.equal([logText, hub.output()].join('\n').includes(secret), false, 'no code, token or session in logs');
  }
});

/** A dashboard session by the login form: its cookie, and the CSRF token and the form key of a task's page. */
async function dashboardSession(url: string, taskId: string): Promise<{ cookie: string; csrf: string; key?: string }> {
  const r = await fetch(`${url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: CONTROL_TOKEN }),
    redirect: 'manual',
  });
  assert.equal(r.status, 303);
  const cookie = /^baton_ui=[^;]+/.exec(r.headers.get('set-cookie') ?? '')?.[0];
  assert.ok(cookie);
  const page = await (await fetch(`${url}/ui/tasks/${taskId}`, { headers: { cookie } })).text();
  const csrf = /name="csrf"\s+value="([^"]+)"/.exec(page)?.[1];
  assert.ok(csrf);
  const key = /name="key" value="([^"]+)"/.exec(page)?.[1];
  return { cookie, csrf, ...(key ? { key } : {}) };
}

/** An open event stream of the dashboard, read as text as it arrives. */
class EventStream {
  text = '';
  /** Resolves when the hub ends the stream. */
  readonly ended: Promise<void>;
  private readonly watchers = new Set<() => void>();

  constructor(body: ReadableStream<Uint8Array>) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    this.ended = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.text += value;
        for (const w of this.watchers) w();
      }
    })();
  }

  /** Resolves once the text so far holds `fragment`; fails if the stream ends first. */
  holds(fragment: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!this.text.includes(fragment)) return;
        this.watchers.delete(check);
        resolve();
      };
      this.watchers.add(check);
      check();
      this.ended.then(() => {
        if (!this.text.includes(fragment)) reject(new Error(`the stream ended without ${fragment}:\n${this.text}`));
      });
    });
  }
}

test("logging out ends that session's open event streams: nothing more arrives on them", async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-logout-');
  const { work, entry } = scriptedAgentSetup(dir);
  const hub = await startHub(t, { dir, roots: [work], agents: { scripted: entry } });
  const alice = await connectCaller(t, hub, 'alice');
  const a = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: script([{ stall: true }]),
    cwd: work,
    idempotencyKey: 'ui-logout',
  });
  const running = await waitForEvent(alice, a.taskId, (e) => e.kind === 'lifecycle' && e.state === 'running');

  const follow = async (cookie: string) => {
    const r = await fetch(`${hub.url}/ui/tasks/${a.taskId}/events?after=0`, { headers: { cookie } });
    assert.equal(r.status, 200);
    const stream = new EventStream(r.body!);
    await stream.holds(`id: ${running.seq}\n`);
    return stream;
  };
  const leaving = await dashboardSession(hub.url, a.taskId);
  const staying = await dashboardSession(hub.url, a.taskId);
  const [leavingStream, stayingStream] = [await follow(leaving.cookie), await follow(staying.cookie)];

  const out = await fetch(`${hub.url}/ui/logout`, {
    method: 'POST',
    headers: { cookie: leaving.cookie, origin: hub.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: leaving.csrf }),
    redirect: 'manual',
  });
  assert.equal(out.status, 303);
  // The cancel comes after the logout, so every event it makes is one the ended session must not get.
  await call(alice, 'agent_cancel', { taskId: a.taskId });
  assert.equal((await followToEnd(alice, a.taskId)).state, 'cancelled');
  await stayingStream.holds('event: end\n');
  assert.match(stayingStream.text, /"kind":"cancel_requested"/, 'the other session still follows the task');
  await leavingStream.ended;
  assert.doesNotMatch(leavingStream.text, /cancel_requested|cancelled|event: end/, 'nothing after the logout');
  const again = await fetch(`${hub.url}/ui/tasks/${a.taskId}/events?after=0`, { headers: { cookie: leaving.cookie } });
  assert.equal(again.status, 401, 'the ended session opens no new stream');
});

test("the dashboard's Continue is refused when the task's caller may no longer reach its agent", async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-reauth-');
  const { work, entry } = scriptedAgentSetup(dir);
  const setup = {
    dir,
    roots: [work],
    agents: { probe: entry, other: entry },
    callers: { bob: { token: TEST_CALLERS.bob, agents: ['probe', 'other'] } },
  };
  const first = await startHub(t, setup);
  const bob = await connectCaller(t, first, 'bob');
  const run = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'probe',
    prompt: script([{ reply: 'one' }]),
    cwd: work,
    idempotencyKey: 'ui-reauth',
  });
  assert.equal((await followToEnd(bob, run.taskId)).state, 'succeeded');
  await first.stop();
  // Restarted with bob narrowed to another agent: the operator cannot start work bob itself may no longer start.
  const config = JSON.parse(readFileSync(first.configPath, 'utf8'));
  config.callers.bob.agents = ['other'];
  writeFileSync(first.configPath, JSON.stringify(config));
  const hub = await startHub(t, setup);
  const session = await dashboardSession(hub.url, run.taskId);
  assert.ok(session.key, 'the ended task offers Continue');
  const refused = await fetch(`${hub.url}/ui/tasks/${run.taskId}/continue`, {
    method: 'POST',
    headers: { cookie: session.cookie, origin: hub.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: session.csrf, key: session.key, prompt: script([{ reply: 'two' }]) }),
    redirect: 'manual',
  });
  assert.equal(refused.status, 403);
  assert.match(
    await refused.text(),
    /<p id="error">agent &quot;probe&quot; is not reachable for caller &quot;bob&quot;/,
  );
  const again = await connectCaller(t, hub, 'bob');
  const status = await call<{ state: string; rounds: unknown[] }>(again, 'agent_status', { taskId: run.taskId });
  assert.equal(status.rounds.length, 1, 'no round was added');
  assert.equal(status.state, 'succeeded');
});

test('targets on the dashboard: a target other than local is named in the list and on the task page; the Targets table shows each target in use with its fence and any warning', async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-targets-');
  const { work, entry } = scriptedAgentSetup(dir);
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: { fenced: entry, open: { ...entry, target: 'open' }, bare: { ...entry, target: 'bare' } },
    targets: { open: { kind: 'local', fence: false }, bare: { kind: 'local', bwrap: join(dir, 'no-such-bwrap') } },
  });
  const alice = await connectCaller(t, hub, 'alice');
  const run = async (agent: string) => {
    const r = await call<{ taskId: string }>(alice, 'agent_run', {
      agent,
      prompt: script([{ reply: `${agent} done` }]),
      cwd: work,
      idempotencyKey: `ui-targets-${agent}`,
    });
    assert.equal((await followToEnd(alice, r.taskId)).state, 'succeeded');
    return r.taskId;
  };
  const fenced = await run('fenced');
  const { cookie } = await dashboardSession(hub.url, fenced);
  const get = async (path: string) => {
    const r = await fetch(`${hub.url}${path}`, { headers: { cookie } });
    assert.equal(r.status, 200);
    return r.text();
  };
  const tasksTable = (page: string) => /<table id="tasks">[\s\S]*?<\/table>/.exec(page)?.[0] ?? '';

  // Only `local` tasks so far: no target column, no target fact (as `baton tasks`).
  const before = await get('/ui');
  assert.match(tasksTable(before), new RegExp(fenced));
  assert.doesNotMatch(tasksTable(before), /<th>target<\/th>|class="target"/);
  assert.doesNotMatch(await get(`/ui/tasks/${fenced}`), /fact-target/);

  const targets = [...before.matchAll(/<tr data-target="([^"]+)">([\s\S]*?)<\/tr>/g)].map(([, name, cells]) => [
    name,
    ...[...cells!.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].slice(1).map((c) => c[1]),
  ]);
  assert.deepEqual(
    targets.map(([name, kind, fence]) => [name, kind, fence]),
    [
      ['local', 'local', 'secrets'],
      ['open', 'local', 'off'],
      ['bare', 'local', 'off'],
    ],
  );
  assert.equal(targets[0]![3], '', 'the fenced target has no warning');
  assert.equal(targets[1]![3], '', 'a chosen fence: false is not warned about');
  assert.match(
    targets[2]![3]!,
    /^target &quot;bare&quot;: agents run without the secrets fence \(bubblewrap not found at .*no-such-bwrap\) and can read baton&#39;s tokens; install it/,
  );

  // A task on another target: the list grows the column, that task's page names it.
  const open = await run('open');
  const table = tasksTable(await get('/ui'));
  assert.match(table, /<th>target<\/th>/);
  assert.match(table, new RegExp(`<tr data-task="${open}">[\\s\\S]*?<td class="target">open</td>`));
  assert.match(table, new RegExp(`<tr data-task="${fenced}">[\\s\\S]*?<td class="target">local</td>`));
  assert.match(await get(`/ui/tasks/${open}`), /<dt>target<\/dt><dd id="fact-target">open<\/dd>/);
  assert.doesNotMatch(await get(`/ui/tasks/${fenced}`), /fact-target/);
});
