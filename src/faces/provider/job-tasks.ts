// MCP Tasks (rule: mcp-tasks-extension) for a provider's long blocking tools, backed by its job table: a negotiating
// 2026-07-28 client's `codex` / `claude_code` call becomes the same background job codex-start / claude-start run (same
// limits, deadlines and cancel; the task id is the job id). tasks/get long-polls the job's status and, once the job is
// terminal, carries what the blocking call would have answered. A tool-level failure is a completed task with an
// `isError` result, as on a live tools/call: SEP-2663 keeps `failed` for protocol faults.
import { JobError, type JobStatusView, type JobTable } from '../../core/jobs.ts';
import { reportable, toolErrorResult } from '../errors.ts';
import type { TaskBackend, TaskSnapshot, TaskStatus } from '../mcp-tasks.ts';
import { type CallToolResult, toolError } from '../mcp-tools.ts';

export interface JobTaskTool {
  /** Starts the job for the tool's validated arguments; a JobError or ToolFailure refuses the call. */
  start(args: never): { jobId: string };
  /** The blocking tool's answer for a completed job's whole (redacted) text. */
  answer(jobId: string, text: string): CallToolResult;
}

const STATUS: Record<JobStatusView['state'], TaskStatus> = {
  running: 'working',
  completed: 'completed',
  failed: 'completed',
  cancelled: 'cancelled',
};

export function jobTaskBackend(jobs: JobTable, tools: Record<string, JobTaskTool>): TaskBackend {
  const tasks = new Map<string, { tool: JobTaskTool; createdAt: string; lastUpdatedAt: string; cursor: number }>();

  const snapshot = (taskId: string, view: JobStatusView): TaskSnapshot => {
    const task = tasks.get(taskId)!;
    if (view.cursor !== task.cursor) {
      task.cursor = view.cursor;
      task.lastUpdatedAt = new Date().toISOString();
    }
    const base = {
      taskId,
      status: STATUS[view.state],
      statusMessage: view.status,
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
    };
    if (view.state === 'completed') return { ...base, result: task.tool.answer(taskId, wholeResult(jobs, taskId)) };
    if (view.state === 'failed') return { ...base, result: toolError(view.error ?? 'the job failed') };
    return base;
  };

  return {
    start(call) {
      const tool = Object.hasOwn(tools, call.tool.name) ? tools[call.tool.name] : undefined;
      if (!tool) return undefined;
      return (async () => {
        let jobId: string;
        try {
          ({ jobId } = tool.start(call.args as never));
        } catch (err) {
          if (!reportable(err)) throw err;
          return { result: toolErrorResult(err, { tool: call.tool.name }) };
        }
        const now = new Date().toISOString();
        tasks.set(jobId, { tool, createdAt: now, lastUpdatedAt: now, cursor: 0 });
        return { task: snapshot(jobId, await jobs.status(jobId, 0, 0)) };
      })();
    },
    async get(taskId, holdMs, signal) {
      const task = tasks.get(taskId);
      if (!task) return undefined;
      try {
        // Returns at once once the job moved past what this task last showed, or is terminal (rule: event-cursor).
        return snapshot(taskId, await jobs.status(taskId, task.cursor, holdMs, signal));
      } catch (err) {
        if (!(err instanceof JobError && err.code === 'unknown_job')) throw err;
        // The job table let the job go (retention): so does the task.
        tasks.delete(taskId);
        return undefined;
      }
    },
    async cancel(taskId) {
      if (!tasks.has(taskId)) return false;
      try {
        await jobs.cancel(taskId);
        return true;
      } catch (err) {
        if (err instanceof JobError && err.code === 'unknown_job') return false;
        throw err;
      }
    },
  };
}

/** A completed job's whole answer, from its pages. */
function wholeResult(jobs: JobTable, jobId: string): string {
  let text = '';
  for (let offset = 0; ; ) {
    const page = jobs.result(jobId, offset);
    text += page.text;
    if (page.done) return text;
    offset = page.nextOffset;
  }
}
