// What a git snapshot runs: `git status` and `git diff --numstat` at once, started either by a shell spawned for this
// one snapshot or by one of a few long-lived runner shells (rule: snapshot-runners). A fork costs the forking process
// in proportion to its own size, on its event loop: the daemon (100+ MiB) forking twice per task was a third of its busy
// time, while a runner (a ~1 MiB shell) forks the gits for it.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { signalGroup } from '../lib/process-group.ts';

export const GIT_TIMEOUT_MS = 30_000;
export const MAX_OUTPUT_BYTES = 32 * 1024 * 1024;

/**
 * Settings every git baton runs is given on its command line, where they win over every config file (rule:
 * repo-code-off): the repository is untrusted input, and these are the commands a repository's config could otherwise
 * have baton's git run, outside the agent's process group and after its round. No fsmonitor command; no hooks (a
 * worktree's post-checkout, reference-transaction); no external diff program; no pager; no credential helper; no
 * transport (a partial clone's lazy fetch would start ssh or a remote helper the config names); and no untracked cache,
 * so a planted cache cannot hide files from a snapshot. Filter drivers carry repository-chosen names and are turned off
 * per repository (repoFilterOverrides); diff commands also get --no-ext-diff --no-textconv.
 */
export const SAFE_GIT_CONFIG: readonly string[] = [
  'core.fsmonitor=false',
  'core.hooksPath=/dev/null',
  'core.untrackedCache=false',
  'core.pager=cat',
  'credential.helper=',
  'protocol.allow=never',
  'diff.external=',
];
export const SAFE_GIT_ARGS: readonly string[] = SAFE_GIT_CONFIG.flatMap((c) => ['-c', c]);

/** The settings of one filter driver that turn it off: no command runs, and a missing one fails nothing. */
export const filterOffArgs = (driver: string): string[] =>
  ['clean=', 'smudge=', 'process=', 'required=false'].flatMap((s) => ['-c', `filter.${driver}.${s}`]);

/**
 * The drivers of `git config --show-scope --name-only --get-regexp ^filter[.]` output that the repository's own
 * config defines (scope local or worktree, files it includes too): those a repository can plant. Drivers of the user's
 * own config (Git LFS) stay on.
 */
export function repoFilterDrivers(listing: string): string[] {
  const drivers = new Set<string>();
  for (const line of listing.split('\n')) {
    const m = /^(?:local|worktree)\tfilter\.(.*)\.[^.]*$/.exec(line);
    if (m) drivers.add(m[1]!);
  }
  return [...drivers];
}

/** Variables a git needs to find itself, its user config and its locale; nothing else of the daemon's. */
const GIT_ENV_NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'XDG_CONFIG_HOME',
]);

/**
 * The environment of every git baton runs (rule: repo-code-off): an allowlist, so no caller token, baton setting or
 * GIT_* redirection of the daemon's reaches git or anything git starts. Optional locks off (a snapshot never writes
 * the index), no prompt, no lazy fetch.
 */
export function gitEnv(parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of Object.keys(parent)) {
    if (!GIT_ENV_NAMES.has(name) && !name.startsWith('LC_')) continue;
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', GIT_NO_LAZY_FETCH: '1', GIT_PAGER: 'cat' };
}

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
/** `git` with the safe settings, as shell words. */
const SAFE_GIT = ['git', ...SAFE_GIT_ARGS].map(shellQuote).join(' ');

/**
 * Shell: sets "$@" to the -c settings that turn off every filter driver the config of the repository at "$d" defines
 * (see repoFilterDrivers; a subsection name holds no newline, so the listing splits on lines).
 */
const FILTERS_OFF =
  `f=$(${SAFE_GIT} -C "$d" config --show-scope --name-only --get-regexp '^filter[.]' 2>/dev/null); ` +
  "set --; set -f; IFS='\n'; for l in $f; do case $l in local'\t'filter.*|worktree'\t'filter.*) " +
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not a template
  "n=${l#*'\t'filter.}; n=${n%.*}; " +
  'set -- "$@" -c "filter.$n.clean=" -c "filter.$n.smudge=" -c "filter.$n.process=" -c "filter.$n.required=false";; ' +
  'esac; done; unset IFS; set +f; ';

/** The two gits of a snapshot of "$d" with "$@" from FILTERS_OFF; submodules are read from outside, never entered. */
const STATUS = `${SAFE_GIT} "$@" -C "$d" status --porcelain=v2 --branch -z --untracked-files=all --ignore-submodules=dirty`;
const NUMSTAT = `${SAFE_GIT} "$@" -C "$d" diff --no-ext-diff --no-textconv --ignore-submodules=dirty --numstat HEAD`;

/** Status (`--porcelain=v2 --branch -z`) and the diffstat against HEAD of one dir; `ok` is status's exit. */
export interface RawSnapshot {
  ok: boolean;
  status: string;
  numstat: string;
}

/**
 * Status on stdout and the diffstat against HEAD on fd 3, both run at once by one small shell. The shell exits with
 * status's code; a diff that fails (an unborn HEAD) writes nothing. The dir is an argument, never part of the script.
 */
const SNAPSHOT_SCRIPT = `d=$1; ${FILTERS_OFF}${NUMSTAT} >&3 2>/dev/null & ${STATUS}; s=$?; wait; exit $s`;

/** One snapshot, one shell: the path for dirs a runner's line protocol cannot carry, and without runners. */
export function statusAndNumstat(dir: string): Promise<RawSnapshot> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout stops both gits along with the shell.
    const child = spawn('/bin/sh', ['-c', SNAPSHOT_SCRIPT, 'sh', dir], {
      stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
      env: gitEnv(),
      detached: true,
    });
    const out: Buffer[] = [];
    const diff: Buffer[] = [];
    let bytes = 0;
    let failure: Error | undefined;
    const stop = (why: string) => {
      failure ??= new Error(why);
      signalGroup(child.pid ?? -1, 'SIGKILL');
    };
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_OUTPUT_BYTES) stop('git output over the limit');
      else into.push(chunk);
    };
    child.stdout!.on('data', collect(out));
    (child.stdio[3] as NodeJS.ReadableStream).on('data', collect(diff));
    const timer = setTimeout(() => stop('git timed out'), GIT_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else
        resolve({
          ok: code === 0,
          status: Buffer.concat(out).toString('utf8'),
          numstat: Buffer.concat(diff).toString('utf8'),
        });
    });
  });
}

/**
 * A runner: reads one dir per line, runs the same two gits as SNAPSHOT_SCRIPT with their output in files of its private
 * dir ($1), and answers status's exit code on a line once both are done. The output never crosses the pipe, so nothing
 * NUL-laden needs framing. `ulimit -f` ($2, 512-byte blocks) caps each file just past the output limit (a git writing
 * more is stopped by SIGXFSZ; a lower hard limit caps them lower still), and the reader checks the sum. At EOF (the daemon closed it, or died) it removes its dir
 * and exits; SIGPIPE is ignored so an answer to a dead daemon still leads there.
 */
const RUNNER_SCRIPT =
  'o=$1; ulimit -f "$2" 2>/dev/null; trap "" PIPE; ' +
  'while IFS= read -r d; do ' +
  FILTERS_OFF +
  `${NUMSTAT} >"$o/numstat" 2>/dev/null & ` +
  `${STATUS} >"$o/status"; s=$?; wait; echo "$s"; ` +
  'done; rm -rf "$o"';

export interface SnapshotRunnersOptions {
  /** Where each runner's private dir is made (a 0700 dir of the daemon's, like its state dir). */
  parentDir: string;
  /** At most this many runners, started when a request finds every runner busy. */
  size?: number;
  timeoutMs?: number;
  maxBytes?: number;
  /** The gits' environment, taken when a runner starts (tests put a stand-in git first on PATH). */
  env?: () => NodeJS.ProcessEnv;
}

interface Request {
  dir: string;
  resolve: (out: RawSnapshot) => void;
  reject: (err: Error) => void;
}

interface Runner {
  child: ChildProcess;
  pgid: number;
  dir: string;
  /** The stdout read so far that has no newline yet. */
  line: string;
  current?: { req: Request; timer: NodeJS.Timeout };
  exited: Promise<void>;
}

/** The default number of runners: enough for a burst of short tasks to not queue long behind one another's gits. */
export const SNAPSHOT_RUNNERS = 4;

/**
 * A small pool of runner shells, each taking one request at a time; more requests than runners wait in arrival order.
 * A runner that dies or times out is stopped with its process group and replaced by the next request; the request it
 * held fails as the per-snapshot path fails. Output over the cap fails only its request (the runner's files are
 * rewritten by the next one). Idle runners keep nothing alive (unref'd); a pending request's
 * timer does.
 */
export class SnapshotRunners {
  private readonly opts: Required<SnapshotRunnersOptions>;
  private readonly runners: Runner[] = [];
  private readonly queue: Request[] = [];
  private closed = false;

  constructor(opts: SnapshotRunnersOptions) {
    this.opts = { size: SNAPSHOT_RUNNERS, timeoutMs: GIT_TIMEOUT_MS, maxBytes: MAX_OUTPUT_BYTES, env: gitEnv, ...opts };
  }

  run(dir: string): Promise<RawSnapshot> {
    // A newline would end the request line early; such dirs (and any request after close) take the per-snapshot path.
    if (this.closed || dir.includes('\n')) return statusAndNumstat(dir);
    return new Promise((resolve, reject) => {
      this.queue.push({ dir, resolve, reject });
      this.pump();
    });
  }

  /** Process ids of the live runners (for tests and diagnostics). */
  pids(): number[] {
    return this.runners.map((r) => r.pgid);
  }

  /** Ends every runner (each finishes the request it holds, bounded by its timeout) and waits until all have exited. */
  async close(): Promise<void> {
    this.closed = true;
    for (const req of this.queue.splice(0)) statusAndNumstat(req.dir).then(req.resolve, req.reject);
    const runners = [...this.runners];
    for (const r of runners) r.child.stdin!.end();
    await Promise.all(runners.map((r) => r.exited));
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let runner = this.runners.find((r) => !r.current);
      if (!runner) {
        if (this.runners.length >= this.opts.size) return;
        runner = this.start();
        if (!runner) {
          // No runner (its dir or process could not be made): this request takes a shell of its own, as before.
          const req = this.queue.shift()!;
          statusAndNumstat(req.dir).then(req.resolve, req.reject);
          continue;
        }
      }
      const req = this.queue.shift()!;
      const timer = setTimeout(() => this.stop(runner, new Error('git timed out')), this.opts.timeoutMs);
      runner.current = { req, timer };
      runner.child.stdin!.write(`${req.dir}\n`);
    }
  }

  private start(): Runner | undefined {
    let dir: string;
    try {
      dir = mkdtempSync(join(this.opts.parentDir, 'snapshot-'));
    } catch {
      return undefined;
    }
    const blocks = Math.floor(this.opts.maxBytes / 512) + 1;
    // Its own process group (rule: own-process-group): a stop takes the gits it started along with it.
    let child: ChildProcess | undefined;
    try {
      child = spawn('/bin/sh', ['-c', RUNNER_SCRIPT, 'sh', dir, String(blocks)], {
        stdio: ['pipe', 'pipe', 'ignore'],
        env: this.opts.env(),
        detached: true,
      });
    } catch {}
    if (child?.pid === undefined) {
      child?.on('error', () => {});
      removeDir(dir);
      return undefined;
    }
    const proc = child;
    const runner: Runner = {
      child,
      pgid: child.pid,
      dir,
      line: '',
      exited: new Promise((resolve) => proc.once('exit', () => resolve())),
    };
    child.on('error', () => {});
    child.stdin!.on('error', () => {}); // a write to a runner that just died; its exit fails the request
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      runner.line += chunk;
      for (let nl = runner.line.indexOf('\n'); nl !== -1; nl = runner.line.indexOf('\n')) {
        const code = runner.line.slice(0, nl);
        runner.line = runner.line.slice(nl + 1);
        this.answer(runner, code);
      }
    });
    child.once('exit', () => {
      // Whatever it left in its group (a git it was waiting for) goes too, and so does its dir.
      this.stop(runner, new Error('the snapshot runner exited'));
      removeDir(dir);
    });
    child.unref();
    (child.stdin as unknown as { unref(): void }).unref();
    (child.stdout as unknown as { unref(): void }).unref();
    this.runners.push(runner);
    return runner;
  }

  private answer(runner: Runner, code: string): void {
    const current = runner.current;
    if (!current) return;
    clearTimeout(current.timer);
    runner.current = undefined;
    const status = join(runner.dir, 'status');
    const numstat = join(runner.dir, 'numstat');
    try {
      // Read synchronously: two small local files cost less than two trips through the thread pool.
      const bytes = statSync(status).size + statSync(numstat).size;
      if (bytes > this.opts.maxBytes) throw new Error('git output over the limit');
      current.req.resolve({
        ok: code === '0',
        status: readFileSync(status, 'utf8'),
        numstat: readFileSync(numstat, 'utf8'),
      });
    } catch (err) {
      current.req.reject(err as Error);
    }
    this.pump();
  }

  /** Fails the runner's request with `why`, kills its group and forgets it; the next request starts another. */
  private stop(runner: Runner, why: Error): void {
    const i = this.runners.indexOf(runner);
    if (i === -1) return;
    this.runners.splice(i, 1);
    signalGroup(runner.pgid, 'SIGKILL');
    if (runner.current) {
      clearTimeout(runner.current.timer);
      runner.current.req.reject(why);
      runner.current = undefined;
    }
    this.pump();
  }
}

/** Removes a runner's dir; one that cannot be removed is left, never thrown about from an exit handler. */
function removeDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {}
}

/**
 * The environment of the scripts baton runs on an ssh target's host (rule: repo-code-off): the remote login's own
 * variables git needs, nothing else, and the same git settings as here. `"$@"` carries the script's arguments.
 */
const REMOTE_ENV_NAMES = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'XDG_CONFIG_HOME'];
/** `${NAME+"NAME=$NAME"}`: the variable passed on only when the login has it. */
const passIfSet = (n: string) => `\${${n}+"${n}=$${n}"}`;
const remoteScript = (inner: string, args = '"$@"') =>
  `${['exec env -i', ...REMOTE_ENV_NAMES.map(passIfSet)].join(' ')} ` +
  `GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_NO_LAZY_FETCH=1 GIT_PAGER=cat /bin/sh -c ${shellQuote(inner)} sh ${args}`;

/**
 * A snapshot of "$1" on a remote host, in one shell: the diffstat against HEAD, a NUL, then status (its exit is the
 * script's). The diffstat quotes unusual paths, so it holds no NUL; status follows whole.
 */
export const REMOTE_SNAPSHOT_SCRIPT = remoteScript(
  `d=$1; ${FILTERS_OFF}${NUMSTAT} 2>/dev/null; printf '\\000'; ${STATUS}`,
);

/**
 * Adds task "$2"'s worktree of the repository holding "$1" on a remote host, in "$3" (default
 * `${XDG_STATE_HOME:-~/.local/state}/baton-worktrees`, made 0700) as `<id>`, refused when that dir lies in one of the
 * roots "$4"…. Prints `ok`, the repository's top dir and the worktree's path; or `nogit`, `inroot <root>` or
 * `failed <git's error>`. A failed add leaves no dir, worktree record or branch behind.
 */
export const REMOTE_WORKTREE_SCRIPT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not a template
  'c=$1; id=$2; base=${3:-${XDG_STATE_HOME:-$HOME/.local/state}/baton-worktrees}; shift 3; ' +
  remoteScript(
    `c=$1; id=$2; base=$3; shift 3; ` +
      `top=$(${SAFE_GIT} -C "$c" rev-parse --show-toplevel 2>/dev/null) || { echo nogit; exit 0; }; ` +
      `mkdir -p -- "$base" && chmod 700 -- "$base" && base=$(cd -P -- "$base" && pwd -P) || { echo "failed cannot make $base"; exit 0; }; ` +
      `for r; do rr=$(cd -P -- "$r" 2>/dev/null && pwd -P) || continue; case "$base/" in "$rr"/*) echo "inroot $rr"; exit 0;; esac; done; ` +
      `d=$c; ${FILTERS_OFF}` +
      `if e=$(${SAFE_GIT} "$@" -C "$c" worktree add -q -b "baton/$id" "$base/$id" HEAD 2>&1); then printf 'ok\\n%s\\n%s\\n' "$top" "$base/$id"; else ` +
      `${SAFE_GIT} -C "$c" worktree remove --force "$base/$id" >/dev/null 2>&1; rm -rf -- "$base/$id"; ` +
      `${SAFE_GIT} -C "$c" worktree prune >/dev/null 2>&1; ${SAFE_GIT} -C "$c" branch -D "baton/$id" >/dev/null 2>&1; ` +
      `printf 'failed %s\\n' "$e"; fi`,
    '"$c" "$id" "$base" "$@"',
  );
