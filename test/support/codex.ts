// Shared fixtures for the Codex tests: a Responses mock, an isolated CODEX_HOME pointing at it, and a real
// `codex app-server` process group (stdio, WebSocket or Unix socket), all cleaned up when the test ends.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { TestContext } from 'node:test';
import { type ChildGroup, spawnGroup } from '../../src/lib/process-group.ts';
import { mockCodexEnv, ResponsesMock, type ResponsesStep, writeMockCodexHome } from '../mock-models/responses.ts';
import { bins, REPO_ROOT } from './bins.ts';

type After = Pick<TestContext, 'after'>;

const isUnder = (dir: string, parent: string) => {
  const rel = relative(parent, dir);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'));
};

/**
 * A new private directory (removed by the caller) for Codex homes and workspaces, outside the system temp directory
 * as a user's ~/.codex or baton state directory is. Codex refuses to create its helper links (`codex-linux-sandbox`,
 * `apply_patch`) under its temp directory, and a system bubblewrap without `--argv0` (before 0.9) starts the sandbox
 * helper only through them: a home under /tmp would test a machine no user has.
 */
export function codexTestDir(prefix: string): string {
  const base = isUnder(REPO_ROOT, tmpdir())
    ? join(homedir(), '.cache', 'baton-tests')
    : join(REPO_ROOT, 'tmp', 'tests');
  mkdirSync(base, { recursive: true, mode: 0o700 });
  return mkdtempSync(join(base, prefix));
}

export async function startResponsesMock(t: After, fallback?: ResponsesStep): Promise<ResponsesMock> {
  const mock = await ResponsesMock.start(fallback);
  t.after(() => mock.close());
  return mock;
}

export interface CodexFixture {
  dir: string;
  codexHome: string;
  workdir: string;
  /** Servers started on this fixture; stopped before the dir is removed (Codex rewrites files until it exits). */
  groups: ChildGroup[];
}

/** A temp dir holding a CODEX_HOME configured for `mock` and an empty working directory. */
export function codexFixture(t: After, mock: ResponsesMock, opts: { approvalPolicy?: string } = {}): CodexFixture {
  const dir = codexTestDir('baton-codex-');
  const groups: ChildGroup[] = [];
  t.after(async () => {
    await Promise.all(groups.map((g) => g.stop(2_000)));
    rmSync(dir, { recursive: true, force: true });
  });
  const codexHome = writeMockCodexHome(join(dir, 'home'), mock, opts);
  const workdir = join(dir, 'work');
  mkdirSync(workdir, { recursive: true });
  return { dir, codexHome, workdir, groups };
}

export interface RunningAppServer {
  group: ChildGroup;
  /** ws://127.0.0.1:PORT when listening on WebSocket. */
  url?: string;
  stderr(): string;
}

/** Starts the real `codex app-server` in its own process group; stopped when the test ends. */
export async function startAppServer(
  t: After,
  fixture: CodexFixture,
  opts: { listen?: string; args?: string[] } = {},
): Promise<RunningAppServer> {
  const args = [bins.codex(), 'app-server', ...(opts.listen ? ['--listen', opts.listen] : []), ...(opts.args ?? [])];
  const group = spawnGroup(process.execPath, args, {
    cwd: fixture.workdir,
    env: mockCodexEnv(fixture.codexHome),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  fixture.groups.push(group);
  t.after(() => group.stop(2_000));
  let stderr = '';
  group.child.stderr!.setEncoding('utf8');
  group.child.stderr!.on('data', (d: string) => {
    stderr += d;
  });
  const server: RunningAppServer = { group, stderr: () => stderr };
  if (opts.listen?.startsWith('ws://')) {
    server.url = await new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = /listening on: (ws:\/\/\S+)/.exec(stderr);
        if (m) {
          group.child.stderr!.off('data', check);
          resolve(m[1]!);
        }
      };
      group.child.stderr!.on('data', check);
      group.exited.then(() => reject(new Error(`codex app-server exited before listening:\n${stderr}`)));
    });
  }
  return server;
}

/** Waits for the first notification matching `match`, collected through `onNotification`. */
export class NotificationLog {
  readonly all: Array<{ method: string; params: unknown }> = [];
  private readonly waiters = new Set<() => void>();
  readonly push = (n: { method: string; params: unknown }) => {
    this.all.push(n);
    for (const w of [...this.waiters]) w();
  };
  wait(method: string, match: (params: Record<string, unknown>) => boolean = () => true, timeoutMs = 30_000) {
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const hit = this.all.find((n) => n.method === method && match(n.params as Record<string, unknown>));
        if (!hit) return false;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(hit.params as Record<string, unknown>);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no ${method} notification within ${timeoutMs} ms`));
      }, timeoutMs);
      if (!check()) this.waiters.add(check);
    });
  }
}

/**
 * The hub config entry of a `codex` agent on the real current Codex against `mock`, with `userCodexHome` as the
 * user's own Codex home. Its cancel grace outlasts a loaded machine (the grace bounds Codex's answer to an interrupt,
 * milliseconds when idle; tests that assert an acknowledged cancel never wait it out).
 */
export function mockCodexAgentEntry(mock: ResponsesMock, userCodexHome: string) {
  return {
    kind: 'codex',
    command: [process.execPath, bins.codex()],
    model: 'mock-model',
    modelProvider: {
      id: 'mock',
      baseUrl: mock.baseUrl,
      requiresOpenaiAuth: false,
      requestMaxRetries: 0,
      streamMaxRetries: 0,
    },
    userCodexHome,
    cancelGraceMs: 30_000,
  };
}
