// The dashboard (UX-2) in a REAL headless Chromium driven over the DevTools protocol (the `ws` package): login with the
// control token, every caller's tasks, a task page whose live events arrive over SSE, the git snapshot of a round, and
// no token or session id in any page, URL or log.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';
import { spawnGroup } from '../../src/lib/process-group.ts';
import { CHROMIUM, HEADLESS_CHROMIUM_FLAGS } from '../support/chromium.ts';
import {
  CONTROL_TOKEN,
  call,
  connectCaller,
  followToEnd,
  startHub,
  TEST_CALLERS,
  waitForEvent,
} from '../support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../support/scripted-agent.ts';
import { tempDir } from '../support/tmp.ts';

const CDP_TIMEOUT_MS = 30_000;
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

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<CdpValue> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method} got no answer`)), CDP_TIMEOUT_MS);
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

  close(): void {
    this.ws.close();
  }
}

/** One browser tab. */
class Tab {
  readonly cdp: Cdp;
  readonly session: string;
  constructor(cdp: Cdp, session: string) {
    this.cdp = cdp;
    this.session = session;
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

  async eval<T = unknown>(expression: string): Promise<T> {
    const r = await this.cdp.send(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      this.session,
    );
    if (r.exceptionDetails) throw new Error(`page script failed: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value as T;
  }

  /** Fills the login form and submits it like a user would. */
  login(token: string): Promise<void> {
    return this.loading(() =>
      this.eval(
        `document.querySelector('input[name=token]').value = ${JSON.stringify(token)}; document.querySelector('form').requestSubmit();`,
      ),
    );
  }

  html(): Promise<string> {
    return this.eval<string>('location.href + "\\n" + document.documentElement.outerHTML');
  }
}

async function launchChromium(t: { after: (fn: () => Promise<unknown>) => void }, dir: string): Promise<Tab> {
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
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
  await cdp.send('Page.enable', {}, sessionId);
  return new Tab(cdp, sessionId);
}

test('dashboard in headless Chromium: login, all callers, live SSE events, git snapshot, no secrets', async (t) => {
  const dir = tempDir(t, 'baton-ux-ui-');
  const work = join(dir, 'work');
  mkdirSync(work);
  const git = (...args: string[]) => execFileSync('git', ['-C', work, ...args], { stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(work, 'README'), 'hello\n');
  git('add', 'README');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'init');
  const state = join(dir, 'agent-state');
  mkdirSync(state, { mode: 0o700 });
  const hub = await startHub(t, {
    dir,
    roots: [work],
    agents: {
      scripted: {
        kind: 'acp',
        command: [process.execPath, SCRIPTED_ACP_AGENT],
        env: { ACP_TEST_AGENT_RECORD: join(dir, 'record.jsonl'), ACP_TEST_AGENT_STATE: state },
        cancelGraceMs: 1_000,
      },
    },
  });
  const bob = await connectCaller(t, hub, 'bob');
  const alice = await connectCaller(t, hub, 'alice');
  const other = await call<{ taskId: string }>(bob, 'agent_run', {
    agent: 'scripted',
    prompt: JSON.stringify({ steps: [{ reply: 'bob was here' }] }),
    cwd: work,
    idempotencyKey: 'ui-bob',
  });
  assert.equal((await followToEnd(bob, other.taskId)).state, 'succeeded');
  const run = await call<{ taskId: string }>(alice, 'agent_run', {
    agent: 'scripted',
    prompt: JSON.stringify({
      steps: [
        { writeFile: { name: 'made-by-agent.txt', content: 'new\n' } },
        { plan: [{ content: '<img id="xss" src="x">step', status: 'in_progress', priority: 'high' }] },
        { stall: true },
      ],
    }),
    cwd: work,
    idempotencyKey: 'ui-alice',
  });
  await waitForEvent(alice, run.taskId, (e) => e.kind === 'status');

  // Without a session: the login form only, whatever the path; no token in a URL; no foreign origin.
  const anonymous = await fetch(`${hub.url}/ui/tasks/${run.taskId}`);
  assert.equal(anonymous.status, 401);
  const anonymousHtml = await anonymous.text();
  assert.match(anonymousHtml, /name="token"/);
  assert.equal(anonymousHtml.includes(run.taskId), false);
  assert.equal((await fetch(`${hub.url}/ui/tasks/${run.taskId}/events`)).status, 401);
  assert.equal((await fetch(`${hub.url}/ui/login?token=${CONTROL_TOKEN}`)).status, 405, 'no login by URL');
  const foreign = await fetch(`${hub.url}/ui/login`, {
    method: 'POST',
    headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${CONTROL_TOKEN}`,
    redirect: 'manual',
  });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get('set-cookie'), null);

  const tab = await launchChromium(t, dir);
  const cookies = async () => (await tab.cdp.send('Storage.getCookies')).cookies as Array<CdpValue>;
  await tab.goto(`${hub.url}/ui`);
  await tab.login('not-the-control-token');
  assert.match(await tab.html(), /id="error"/);
  assert.deepEqual(await cookies(), [], 'a wrong token gets no session');
  await tab.goto(`${hub.url}/ui/tasks/${run.taskId}`);
  assert.equal((await tab.html()).includes('made-by-agent'), false, 'a wrong token sees no task');
  // A caller token is not the control token.
  await tab.login(TEST_CALLERS.alice);
  assert.deepEqual(await cookies(), []);

  await tab.goto(`${hub.url}/ui`);
  await tab.login(CONTROL_TOKEN);
  const [cookie] = await cookies();
  assert.ok(cookie, 'logged in');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(cookie.path, '/ui');
  assert.notEqual(cookie.value, CONTROL_TOKEN);
  const list = await tab.html();
  assert.match(list, new RegExp(`${run.taskId}</a></td><td>alice</td><td>scripted</td><td[^>]*>running`));
  assert.match(list, new RegExp(`${other.taskId}</a></td><td>bob</td><td>scripted</td><td[^>]*>succeeded`));

  await tab.goto(`${hub.url}/ui/tasks/${run.taskId}`);
  const before = await tab.html();
  assert.match(before, /<dd id="state">running<\/dd>/);
  assert.match(before, /git before: main@[0-9a-f]{12}, 0 dirty/);
  assert.equal(await tab.eval('document.getElementById("xss")'), null, 'agent text is escaped');
  assert.match(before, /r1 status &lt;img id="xss" src="x"&gt;step/);
  assert.equal(await tab.eval('document.querySelector("#events li[data-state=cancelled]")'), null);

  // The cancelled lifecycle event reaches the open page over SSE.
  const arrived = tab.eval<{ live: string; text: string }>(`new Promise((resolve) => {
    const list = document.getElementById('events');
    const find = () => list.querySelector('li[data-kind="lifecycle"][data-state="cancelled"]');
    const done = (li) => resolve({ live: li.dataset.live, text: li.textContent });
    if (find()) return done(find());
    new MutationObserver((_, observer) => {
      if (find()) { observer.disconnect(); done(find()); }
    }).observe(list, { childList: true });
  })`);
  await call(alice, 'agent_cancel', { taskId: run.taskId });
  const live = await arrived;
  assert.equal(live.live, '1', 'added by the SSE stream, not by the server render');
  assert.match(live.text, /r1 lifecycle cancelled/);
  assert.equal(await tab.eval('document.getElementById("state").textContent'), 'cancelled');
  assert.equal((await followToEnd(alice, run.taskId)).state, 'cancelled');

  // After the round: the git snapshot shows what the round changed.
  await tab.goto(`${hub.url}/ui/tasks/${run.taskId}`);
  const after = await tab.html();
  assert.match(after, /git after: main@[0-9a-f]{12}, 1 dirty/);
  assert.match(after, /<tr><td>made-by-agent\.txt<\/td><td>clean<\/td><td>untracked \(\?\?\)<\/td><\/tr>/);
  assert.match(after, /the task has ended/);

  // UX-3: the daemon's log is JSON lines with time, level and message; logins are recorded without the token.
  const logLines = readFileSync(join(hub.stateDir, 'baton.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  for (const l of logLines) assert.ok(l.time && l.level && l.msg, JSON.stringify(l));
  assert.equal(logLines.filter((l) => l.msg === 'dashboard login refused' && l.level === 'warn').length, 2);
  assert.equal(logLines.filter((l) => l.msg === 'dashboard login' && l.level === 'info').length, 1);

  const secrets = [CONTROL_TOKEN, cookie.value as string, ...Object.values(TEST_CALLERS)];
  const seen = [list, before, after, hub.output(), readFileSync(join(hub.stateDir, 'baton.log'), 'utf8')].join('\n');
  for (const s of secrets) assert.equal(seen.includes(s), false, 'no token or session id in pages, URLs or logs');
});
