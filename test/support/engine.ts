// An in-process Engine on a fresh SQLite store for engine-level tests, and a helper that follows a task to its end
// with the engine's own long-poll (no sleeps).

import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { Agent } from '../../src/agents/agent.ts';
import { Engine, type TaskView } from '../../src/core/engine.ts';
import { Store } from '../../src/core/store.ts';
import { silentLogger } from '../../src/lib/log.ts';
import { WaitBudget } from './poll.ts';

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'interrupted'];

export function engineFor(
  t: Pick<TestContext, 'after'>,
  opts: {
    agents: Record<string, Agent>;
    roots: string[] | (() => readonly string[]);
    stateDir: string;
    privateDirs?: string[];
    idleTimeoutMs?: number;
    cancelGraceMs?: number;
    newsLingerMs?: number;
    /** Which agents a caller may reach (default: every agent); a function so a test can narrow it. */
    reachable?: (caller: string) => readonly string[];
    worktreesDir?: string;
  },
): { engine: Engine; store: Store } {
  const store = new Store(join(opts.stateDir, 'baton.db'));
  const names = Object.keys(opts.agents);
  const engine = new Engine({
    store,
    agents: new Map(Object.entries(opts.agents)),
    reachable: opts.reachable ?? (() => names),
    roots: opts.roots,
    stateDir: opts.stateDir,
    privateDirs: opts.privateDirs,
    logger: silentLogger,
    idleTimeoutMs: opts.idleTimeoutMs ?? 0,
    hardTimeoutMs: 0,
    cancelGraceMs: opts.cancelGraceMs ?? 5_000,
    ...(opts.newsLingerMs !== undefined ? { newsLingerMs: opts.newsLingerMs } : {}),
    ...(opts.worktreesDir !== undefined ? { worktreesDir: opts.worktreesDir } : {}),
  });
  t.after(async () => {
    await engine.close();
    store.close();
  });
  return { engine, store };
}

/** Follows `taskId` with engine.wait until it is terminal and every event has been read (bounded). */
export async function settle(engine: Engine, caller: string, taskId: string): Promise<TaskView> {
  const budget = new WaitBudget(`task ${taskId} to end`);
  let after = 0;
  for (;;) {
    const page = await engine.wait(caller, taskId, after, budget.left(20_000));
    after = page.nextCursor;
    if (TERMINAL.includes(page.state) && !page.hasMore) return page;
  }
}
