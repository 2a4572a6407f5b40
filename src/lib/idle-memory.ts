// Gives memory back once the daemon is idle. V8 grows the young generation while modules load and while work comes in
// fast, and keeps those pages (12-15 MiB in the hub) until it is told memory is short: an ordinary collection empties
// them but does not return them. So when the daemon has no round in flight, has been quiet for a while, and the young
// generation holds more than it needs, or the heap has grown since the last such collection, one last-resort
// collection (the one V8 runs under memory pressure) hands them back. It runs only then, so no caller waits on it, and
// not again until work has grown the heap anew.
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * How often the daemon reads its CPU use; quiet means under QUIET_CPU_SHARE of one core over a whole period. A quiet
 * half second that finds memory to give back is confirmed over CONFIRM_MS more just before the release: a release
 * costs two full collections (15-40 ms, a few hundred on a loaded machine), and a burst that began in a half second's
 * last tenth still read as quiet, so without the confirmation the release ran under the burst's first requests.
 */
const CHECK_MS = 500;
const CONFIRM_MS = 100;
const QUIET_CPU_SHARE = 0.02;
/** Young-generation pages held beyond this are worth a collection. */
const YOUNG_SLACK_BYTES = 2 * 1024 * 1024;
/**
 * So is a heap grown by this much since the last release: a burst (16 tasks at once) leaves old-space garbage and
 * free pages behind with a young generation already back under its slack, and an ordinary collection keeps them.
 */
const HEAP_SLACK_BYTES = 2 * 1024 * 1024;

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };
let gcFunction: ((opts: GcOptions) => void) | undefined;

/** V8's gc(), obtained without starting node with --expose-gc (a flag `baton serve` cannot pass to itself). */
function gc(): (opts: GcOptions) => void {
  if (!gcFunction) {
    setFlagsFromString('--expose-gc');
    gcFunction = runInNewContext('gc') as (opts: GcOptions) => void;
    // Only the one context made above gets it.
    setFlagsFromString('--no-expose-gc');
  }
  return gcFunction;
}

/**
 * The daemon's collector settings, set once at its start (V8 reads these flags each time it grows the heap, starts a
 * collection or decides to optimize a function, so they apply when set after start-up):
 * - The young generation stays at the size V8 starts it with (1 MiB semispaces). By default V8 doubles it under a burst
 *   of requests, and those pages stay committed until the quiet-time release below. For the daemon the larger young
 *   generation buys little (what survives a request is small) and costs twice: its pages are resident, and every agent
 *   the daemon spawns forks them (copying their page table entries, then a fault on each one written afterwards).
 * - Collections run on the main thread only. On the two cores of a machine that also runs the agents, helper threads
 *   mostly contend with them and with each other; a 1 MiB young generation is scavenged in well under a millisecond.
 *   `--single-threaded-gc` set after start-up does not reach everything it implies at a process's start (V8 goes on
 *   marking old space on its helper threads), so V8's efficiency mode, the switch it reads at each collection, is on
 *   too: with it, collections use no helper threads. Its marking is then incremental on the main thread, during which
 *   V8 lets the young generation grow past the size kept above, so a full collection is one pause instead
 *   (`--no-incremental-marking-for-gc-in-background`); it is rare, the heap is small, and it does on one thread what
 *   the helpers did. Efficiency mode also leaves a function on Maglev code longer before Turbofan compiles it.
 * Measured in bench/README.md, "Fewer second waits, no marker file per admission, a small young generation collected
 * on the main thread" and "Collections off V8's helper threads".
 */
export function tuneDaemonHeap(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
  setFlagsFromString('--single-threaded-gc');
  setFlagsFromString('--efficiency-mode');
  setFlagsFromString('--no-incremental-marking-for-gc-in-background');
}

/** Physical bytes of the young generation. */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
}

/** Physical bytes of the whole V8 heap. */
function heapBytes(): number {
  return getHeapStatistics().total_physical_size;
}

/** One last-resort collection now: V8 shrinks its young generation and returns what it freed. */
export function releaseIdleMemory(): void {
  gc()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** What the watcher reads and does; the daemon's own (daemonHooks), stand-ins in tests. */
export interface IdleMemoryHooks {
  /**
   * Work is in flight (a round runs or waits for its lock). The daemon is then quiet only while agents think: its
   * quiet seconds fall between a burst of admissions and the burst of their ends, which needs the memory again. A
   * release there costs about 130 ms of CPU (two full collections, most of it on V8's helper threads) in the middle
   * of that work, on the cores its agents run on.
   */
  busy(): boolean;
  /** CPU used by the process so far, in microseconds. */
  cpuMicros(): number;
  /** There is memory worth a release (the young generation or the heap has grown). */
  worthRelease(): boolean;
  release(): void;
}

/** The daemon's hooks; `busy` says whether work is in flight (Engine.roundsInFlight). */
export function daemonHooks(busy: () => boolean): IdleMemoryHooks {
  /** The heap as the last release left it: growth past it is what a burst kept. */
  let floor = heapBytes();
  return {
    busy,
    cpuMicros: () => {
      const u = process.cpuUsage();
      return u.user + u.system;
    },
    worthRelease: () => youngGenerationBytes() > YOUNG_SLACK_BYTES || heapBytes() > floor + HEAP_SLACK_BYTES,
    release: () => {
      releaseIdleMemory();
      floor = heapBytes();
    },
  };
}

/**
 * Watches the daemon's CPU use and releases memory after a quiet half second with no work in flight, once the tenth
 * of a second before the release was quiet and idle too; returns a stop function.
 */
export function watchIdleMemory(hooks: IdleMemoryHooks): () => void {
  const quiet = (usedMicros: number, ms: number) => usedMicros < ms * 1000 * QUIET_CPU_SHARE;
  let last = hooks.cpuMicros();
  let confirm: NodeJS.Timeout | undefined;
  const timer = setInterval(() => {
    const mark = hooks.cpuMicros();
    const wasQuiet = quiet(mark - last, CHECK_MS);
    last = mark;
    if (!wasQuiet || confirm || hooks.busy() || !hooks.worthRelease()) return;
    confirm = setTimeout(() => {
      confirm = undefined;
      if (!quiet(hooks.cpuMicros() - mark, CONFIRM_MS) || hooks.busy()) return;
      hooks.release();
      // The collection's own CPU must not count as activity.
      last = hooks.cpuMicros();
    }, CONFIRM_MS);
    confirm.unref();
  }, CHECK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    clearTimeout(confirm);
  };
}
