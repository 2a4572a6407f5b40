// Who may see which task, and how it is shown to them: a caller reads only its own tasks (another caller's is not
// found, rule: http-auth), the operator reads every one with its caller named; a queued task says where it waits, a
// running one which permission request it waits for (rules: run-caps, approvals).
import type { Approvals } from './approvals.ts';
import { EngineError, type EngineOptions, OPERATOR, type Reader } from './engine-types.ts';
import type { WorkspaceLocks } from './locks.ts';
import type { Store } from './store.ts';
import type { TaskRow } from './task.ts';
import type { TaskLog } from './task-log.ts';
import { type TaskView, taskView } from './views.ts';

export class TaskAccess {
  private readonly store: Store;
  private readonly log: TaskLog;
  private readonly locks: WorkspaceLocks;
  private readonly approvals: Approvals;
  private readonly targetOf: EngineOptions['targetOf'];

  constructor(parts: {
    store: Store;
    log: TaskLog;
    locks: WorkspaceLocks;
    approvals: Approvals;
    targetOf: EngineOptions['targetOf'];
  }) {
    this.store = parts.store;
    this.log = parts.log;
    this.locks = parts.locks;
    this.approvals = parts.approvals;
    this.targetOf = parts.targetOf;
  }

  owned(caller: Reader, taskId: string): TaskRow {
    // What a caller reads includes every event received so far (they are written in batches).
    this.log.flushForRead();
    const task = this.store.getTask(taskId);
    // Another caller's task is indistinguishable from a missing one (rule: http-auth); the operator sees every task.
    if (!task || (caller !== OPERATOR && task.caller !== caller))
      throw new EngineError('not_found', `no task ${taskId}`);
    return task;
  }

  mustGet(id: string): TaskRow {
    const t = this.store.getTask(id);
    if (!t) throw new EngineError('not_found', `no task ${id}`);
    return t;
  }

  /** A caller's view is unchanged; the operator's also names the task's caller. */
  readerView(reader: Reader, task: TaskRow): TaskView {
    return reader === OPERATOR ? { ...this.view(task), caller: task.caller } : this.view(task);
  }

  /** A task's view; a queued round also says where it stands in the queue and why it waits (rule: run-caps). */
  view(task: TaskRow): TaskView {
    const view = { ...taskView(this.store, task), target: this.targetOf?.(task.agent)?.name ?? 'local' };
    if (task.state === 'queued') {
      const queue = this.locks.waiting(task.id);
      return queue ? { ...view, queue } : view;
    }
    const waiting = task.state === 'running' ? this.approvals.waitingOf(task.id) : undefined;
    return waiting ? { ...view, waiting } : view;
  }
}
