// The durable store (rule: crash-durability): tasks, rounds, events, idempotency keys, worker process groups and MCP
// sessions in SQLite (WAL). Store is the one object the engine and the faces hold; it is the database (store/db.ts:
// open, integrity, transactions, group commit) with the queries of each table family (store/<family>.ts) on it.
import type { TextPage } from './paging.ts';
import * as commentary from './store/commentary.ts';
import { StoreDb } from './store/db.ts';
import * as events from './store/events.ts';
import * as idempotency from './store/idempotency.ts';
import * as sessions from './store/mcp-sessions.ts';
import * as rounds from './store/rounds.ts';
import * as tasks from './store/tasks.ts';
import * as usage from './store/usage.ts';
import * as workers from './store/workers.ts';
import type { NewTaskEvent, RoundSummary, TaskEvent, TaskRow, TaskState } from './task.ts';
import type { Usage } from './usage.ts';

export type { JoinedWrite } from './store/db.ts';
export { isDiskFull, StoreFullError } from './store/errors.ts';
export { RESULT_PREVIEW_CODE_POINTS, type ResultSummary } from './store/rounds.ts';

export class Store extends StoreDb {
  // ---- tasks

  insertTask(t: tasks.NewTask): void {
    tasks.insertTask(this, t);
  }

  getTask(id: string): TaskRow | undefined {
    return tasks.getTask(this, id);
  }

  setTaskState(id: string, state: TaskState, now: string, error: string | null = null): void {
    tasks.setTaskState(this, id, state, now, error);
  }

  setSessionId(id: string, sessionId: string): void {
    tasks.setSessionId(this, id, sessionId);
  }

  setWorkdir(id: string, workdir: string): void {
    tasks.setWorkdir(this, id, workdir);
  }

  tasksInStates(states: TaskState[]): TaskRow[] {
    return tasks.tasksInStates(this, states);
  }

  /** See tasks.listTasks. */
  listTasks(
    caller: string | null,
    from: number | null,
    limit: number,
    order: 'oldest' | 'newest' = 'oldest',
  ): { tasks: TaskRow[]; orders: number[] } {
    return tasks.listTasks(this, caller, from, limit, order);
  }

  listOrderOf(caller: string | null, id: string): number | undefined {
    return tasks.listOrderOf(this, caller, id);
  }

  /** See tasks.overviewTasks. */
  overviewTasks(
    filter: string,
    beforeOrder: number,
    limit: number,
    promptChars: number,
  ): { task: TaskRow; order: number; promptStart: string }[] {
    return tasks.overviewTasks(this, filter, beforeOrder, limit, promptChars);
  }

  stats(): Record<TaskState, number> {
    return tasks.taskStats(this);
  }

  getCommentary(id: string): { tail: string; dropped: number } {
    return commentary.getCommentary(this, id);
  }

  appendCommentary(id: string, text: string, maxBytes?: number): void {
    commentary.appendCommentary(this, id, text, maxBytes);
  }

  // ---- rounds

  insertRound(taskId: string, prompt: string): number {
    return rounds.insertRound(this, taskId, prompt);
  }

  roundSummaries(taskId: string): RoundSummary[] {
    return rounds.roundSummaries(this, taskId);
  }

  roundSummary(taskId: string, n: number): RoundSummary | undefined {
    return rounds.roundSummary(this, taskId, n);
  }

  roundPrompts(taskId: string, maxChars: number): { n: number; text: string; chars: number }[] {
    return rounds.roundPrompts(this, taskId, maxChars);
  }

  resultSummary(taskId: string, n: number): rounds.ResultSummary | null {
    return rounds.resultSummary(this, taskId, n);
  }

  resultPage(taskId: string, n: number, offset: number, pageSize: number): TextPage {
    return rounds.resultPage(this, taskId, n, offset, pageSize);
  }

  updateRound(taskId: string, n: number, patch: Partial<rounds.RoundPatch>): void {
    rounds.updateRound(this, taskId, n, patch);
  }

  // ---- usage

  addUsage(at: Parameters<typeof usage.addUsage>[1], u: Usage): void {
    usage.addUsage(this, at, u);
  }

  roundUsages(taskId: string): Map<number, Usage & { agent: string }> {
    return usage.roundUsages(this, taskId);
  }

  taskUsage(taskId: string): Usage | undefined {
    return usage.taskUsage(this, taskId);
  }

  /** See usage.usageTotals. */
  usageTotals(from: string, to: string, caller?: string): { caller: string; agent: string; usage: Usage }[] {
    return usage.usageTotals(this, from, to, caller);
  }

  // ---- events

  appendEvent(taskId: string, event: NewTaskEvent): TaskEvent {
    return events.appendEvent(this, taskId, event);
  }

  /** See events.operatorRounds. */
  operatorRounds(taskId: string): number[] {
    return events.operatorRounds(this, taskId);
  }

  /** See events.unansweredApproval. */
  unansweredApproval(taskId: string, n: number): { requestId: string; what: string } | undefined {
    return events.unansweredApproval(this, taskId, n);
  }

  /** See events.eventPage. */
  eventPage(
    taskId: string,
    after: number,
    limit: number,
    textBudget: number,
    messageText: boolean,
  ): { events: TaskEvent[]; hasMore: boolean } {
    return events.eventPage(this, taskId, after, limit, textBudget, messageText);
  }

  // ---- idempotency

  getIdempotency(caller: string, key: string): idempotency.IdempotencyRecord | undefined {
    return idempotency.getIdempotency(this, caller, key);
  }

  putIdempotency(caller: string, key: string, rec: idempotency.IdempotencyRecord): void {
    idempotency.putIdempotency(this, caller, key, rec);
  }

  // ---- worker process groups

  addWorker(w: workers.WorkerRecord, now: string): void {
    workers.addWorker(this, w, now);
  }

  removeWorker(pgid: number): void {
    workers.removeWorker(this, pgid);
  }

  removeWorkersOfTask(taskId: string): void {
    workers.removeWorkersOfTask(this, taskId);
  }

  workersOfTask(taskId: string): number[] {
    return workers.workersOfTask(this, taskId);
  }

  addRemoteWorker(w: workers.RemoteWorkerRecord): void {
    workers.addRemoteWorker(this, w);
  }

  remoteWorker(pgid: number): workers.RemoteWorkerRecord | undefined {
    return workers.remoteWorker(this, pgid);
  }

  workers(): workers.WorkerRecord[] {
    return workers.workers(this);
  }

  // ---- MCP sessions

  insertMcpSession(idHash: string, caller: string, now: string): void {
    sessions.insertMcpSession(this, idHash, caller, now);
  }

  getMcpSession(idHash: string): { caller: string; lastSeen: string } | undefined {
    return sessions.getMcpSession(this, idHash);
  }

  touchMcpSession(idHash: string, now: string): void {
    sessions.touchMcpSession(this, idHash, now);
  }

  deleteMcpSession(idHash: string): boolean {
    return sessions.deleteMcpSession(this, idHash);
  }

  mcpSessionsOf(caller: string): { count: number; oldest?: { idHash: string; lastSeen: string } } {
    return sessions.mcpSessionsOf(this, caller);
  }

  pruneMcpSessions(before: string): number {
    return sessions.pruneMcpSessions(this, before);
  }
}
