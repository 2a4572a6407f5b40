// An in-memory, bounded table of background jobs over the Agent interface, for provider faces whose jobs live and die
// with one MCP connection (rule `claude-reviewer` background reviews, later the Codex provider's jobs). Each job is one
// turn of one session. Limits, long-poll cursors, result paging, commentary tail, deadlines and cancellation are the
// engine's rules (rules: event-cursor, paged-results, commentary-only, two-deadlines, cancel-then-stop) applied without
// a store.
import { randomUUID } from 'node:crypto';
import type { Agent, AgentSession, Sandbox } from '../agents/agent.ts';
import { BatonError } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import { silentLogger } from '../lib/log.ts';
import { DEFAULT_STOP_GRACE_MS, stopGroup } from '../lib/process-group.ts';
import { redact, safeText } from '../lib/redact.ts';
import { cutCodePoints, statusLine, stripTerminalControls } from '../lib/text.ts';
import {
  countCodePoints,
  pageText,
  RESULT_PAGE_CODE_POINTS,
  TailBuffer,
  type TailPage,
  type TextPage,
} from './paging.ts';
import { RetentionTable } from './retention.ts';
import { type RoundEvent, runRound } from './round.ts';
import { Waiters } from './waiters.ts';

/** Jobs running at once (rules: claude-reviewer, codex-provider). */
export const MAX_ACTIVE_JOBS = 8;
/** Jobs kept in the table, terminal ones included. */
export const MAX_KEPT_JOBS = 32;
/** How long a terminal job stays readable. */
export const TERMINAL_RETENTION_MS = 60 * 60 * 1000;
/** Upper bound of a status long-poll. */
export const MAX_STATUS_WAIT_MS = 60_000;
/** Phase lines remembered per job (older ones are summarised by the latest status). */
const KEPT_PHASES = 50;
/** Phase lines returned by one status read. */
const PHASES_PER_READ = 20;
const MAX_ERROR_CODE_POINTS = 2_000;

/**
 * A job's state, in the provider contract's wire words: a job whose round `succeeded` is `completed`. That mapping is
 * made once, where the round ends (see run); a task keeps the round's words (core/task.ts).
 */
export type JobState = 'running' | 'completed' | 'failed' | 'cancelled';

export interface JobSpec {
  agent: Agent;
  prompt: string;
  cwd: string;
  sandbox: Sandbox;
  model?: string;
  effort?: string;
  /** Shown in lifecycle status lines, e.g. "Claude". */
  label: string;
}

export interface JobStatusView {
  jobId: string;
  state: JobState;
  /** Pass back as `cursor` to wait for what comes next. */
  cursor: number;
  /** The latest sanitised phase (rule: fail-closed-status). */
  status: string;
  /** Phases after the caller's cursor, oldest first (at most 20). */
  phases: string[];
  done: boolean;
  elapsedSeconds: number;
  /** Why a failed job failed (redacted). */
  error?: string;
  /** Length of the final result in code points, once completed. */
  resultCodePoints?: number;
  /** End of the commentary stream in code points (rule: commentary-only). */
  commentaryEndOffset: number;
}

/** What the job table refuses a request with (lib/errors.ts: the faces translate it). */
export class JobError extends BatonError<'limit' | 'unknown_job' | 'not_finished' | 'job_failed'> {
  constructor(code: JobError['code'], message: string) {
    super(code, message);
    this.name = 'JobError';
  }
}

export interface JobTableOptions {
  maxActive?: number;
  maxKept?: number;
  retentionMs?: number;
  /** Hard wall-clock deadline per job (0 = none); activity never extends it. */
  hardDeadlineMs?: number;
  /** Idle deadline per job (0 = none); only the job's own agent events and correlated activity refresh it. */
  idleDeadlineMs?: number;
  /** Bound on waiting for a cancelled job's adapter to finish before its groups are stopped directly. */
  cancelWaitMs?: number;
  stopGraceMs?: number;
  logger?: Logger;
  /** Time source for retention (tests move it forward instead of sleeping). */
  clock?: () => number;
  /**
   * Intermediate progress (phases, commentary) advances the cursor at most once per this many ms, coalesced; lifecycle
   * changes (start, cancel, terminal) always advance it at once. 0 (default) = every change advances it.
   */
  statusIntervalMs?: number;
}

interface Job {
  id: string;
  label: string;
  state: JobState;
  cursor: number;
  phases: Array<{ cursor: number; text: string }>;
  startedAt: number;
  finishedAt?: number;
  result: string;
  /** The result's length in code points, counted once when the job completes. */
  resultChars: number;
  error?: string;
  commentary: TailBuffer;
  controller: AbortController;
  cancelRequested: boolean;
  pgids: Set<number>;
  sessionId?: string;
  done: Promise<void>;
  lastBumpAt: number;
  pendingBump?: NodeJS.Timeout;
}

export class JobTable {
  private readonly jobs: RetentionTable<Job>;
  private readonly waiters = new Waiters();
  private readonly opts: Required<Omit<JobTableOptions, 'logger' | 'clock'>> & { logger: Logger };
  private readonly statusIntervalMs: number;
  private readonly now: () => number;
  private closed = false;

  constructor(opts: JobTableOptions = {}) {
    this.opts = {
      maxActive: opts.maxActive ?? MAX_ACTIVE_JOBS,
      maxKept: opts.maxKept ?? MAX_KEPT_JOBS,
      retentionMs: opts.retentionMs ?? TERMINAL_RETENTION_MS,
      hardDeadlineMs: opts.hardDeadlineMs ?? 0,
      idleDeadlineMs: opts.idleDeadlineMs ?? 0,
      cancelWaitMs: opts.cancelWaitMs ?? 15_000,
      stopGraceMs: opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
      statusIntervalMs: opts.statusIntervalMs ?? 0,
      logger: opts.logger ?? silentLogger,
    };
    this.statusIntervalMs = this.opts.statusIntervalMs;
    this.now = opts.clock ?? Date.now;
    this.jobs = new RetentionTable<Job>({
      maxActive: this.opts.maxActive,
      maxKept: this.opts.maxKept,
      retentionMs: this.opts.retentionMs,
      finishedAt: (job) => job.finishedAt,
      clock: this.now,
    });
  }

  get activeCount(): number {
    return this.jobs.activeCount;
  }

  get size(): number {
    return this.jobs.size;
  }

  start(spec: JobSpec): { jobId: string; cursor: number } {
    if (this.closed) throw new JobError('limit', 'the server is shutting down; no new jobs are accepted');
    const refused = this.jobs.admit();
    if (refused) {
      throw new JobError(
        'limit',
        refused === 'too_many_active'
          ? `${this.opts.maxActive} jobs are already running; wait for one to finish or cancel one, then start again`
          : `${this.opts.maxKept} jobs are kept and none has finished; wait for one to finish or cancel one`,
      );
    }
    const job: Job = {
      id: randomUUID(),
      label: spec.label,
      state: 'running',
      cursor: 0,
      phases: [],
      startedAt: this.now(),
      result: '',
      resultChars: 0,
      commentary: new TailBuffer(),
      controller: new AbortController(),
      cancelRequested: false,
      pgids: new Set(),
      done: Promise.resolve(),
      lastBumpAt: 0,
    };
    this.jobs.add(job.id, job);
    this.phase(job, `${spec.label}: started`, true);
    job.done = this.run(job, spec);
    return { jobId: job.id, cursor: 0 };
  }

  /** Returns at once when the job moved past `after`, else waits up to `waitMs` for it to (rule: event-cursor). */
  async status(jobId: string, after: number, waitMs: number, signal?: AbortSignal): Promise<JobStatusView> {
    const job = this.get(jobId);
    const bound = Math.min(Math.max(0, waitMs), MAX_STATUS_WAIT_MS);
    if (job.cursor <= after && job.state === 'running') await this.waiters.wait(job.id, bound, signal);
    return this.view(job, after);
  }

  /** A page of the final result (rule: paged-results); only for completed jobs. */
  result(jobId: string, offset = 0): TextPage & { jobId: string } {
    const job = this.get(jobId);
    if (job.state === 'running') {
      throw new JobError('not_finished', `job ${jobId} is still running; poll its status until it is terminal`);
    }
    if (job.state !== 'completed') {
      throw new JobError(
        'job_failed',
        job.state === 'cancelled'
          ? `job ${jobId} was cancelled`
          : `job ${jobId} failed: ${job.error ?? 'unknown error'}`,
      );
    }
    return { jobId, ...pageText(job.result, offset, RESULT_PAGE_CODE_POINTS, job.resultChars) };
  }

  /** A page of the commentary tail with absolute offsets (rule: commentary-only). */
  commentary(jobId: string, offset = 0): TailPage & { jobId: string } {
    const job = this.get(jobId);
    return { jobId, ...job.commentary.page(offset) };
  }

  /** Asks the job to stop and waits (bounded) until it is terminal and its processes are gone. */
  async cancel(jobId: string): Promise<JobStatusView> {
    const job = this.get(jobId);
    if (job.state === 'running') await this.stop(job);
    return this.view(job, job.cursor);
  }

  /** Connection closed: cancel every running job, stop all their groups, refuse new jobs. */
  async closeAll(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.jobs.values()].filter((j) => j.state === 'running').map((j) => this.stop(j)));
  }

  private async stop(job: Job): Promise<void> {
    if (!job.cancelRequested) this.bump(job, true);
    job.cancelRequested = true;
    job.controller.abort();
    let timer: NodeJS.Timeout | undefined;
    const settled = await Promise.race([
      job.done.then(() => true),
      new Promise<false>((r) => {
        timer = setTimeout(() => r(false), this.opts.cancelWaitMs);
      }),
    ]);
    clearTimeout(timer);
    if (!settled) {
      // The adapter did not wind down in time: stop its groups directly, then record the job as cancelled.
      this.opts.logger.warn('job did not stop in time; stopping its process groups', { jobId: job.id });
      await Promise.all([...job.pgids].map((pgid) => stopGroup(pgid, this.opts.stopGraceMs)));
      this.finish(job, 'cancelled');
    }
  }

  private async run(job: Job, spec: JobSpec): Promise<void> {
    let session: AgentSession | undefined;
    const r = await runRound({
      hardMs: this.opts.hardDeadlineMs,
      idleMs: this.opts.idleDeadlineMs,
      signal: job.controller.signal,
      label: job.label,
      // A job force-finished by cancel() reads nothing more of its turn.
      abandoned: () => job.state !== 'running',
      start: async (signal, touch) => {
        session = await spec.agent.openSession({
          cwd: spec.cwd,
          sandbox: spec.sandbox,
          model: spec.model,
          effort: spec.effort,
          signal,
          onActivity: touch,
          onProcessGroup: (pgid) => job.pgids.add(pgid),
        });
        return session.turn(spec.prompt, { signal });
      },
      onEvent: (ev) => this.apply(job, ev),
      close: async () => {
        await session?.close();
      },
    });
    if (r.state === 'succeeded') {
      job.result = r.text;
      this.finish(job, 'completed');
    } else if (r.state === 'cancelled') {
      if (r.end?.acknowledged === false) {
        // Rule `cancel-then-stop`: the agent did not confirm the stop in time; its group was stopped, the turn is
        // abandoned.
        this.opts.logger.warn('cancel not acknowledged; turn abandoned', { jobId: job.id, sessionId: job.sessionId });
      }
      this.finish(job, 'cancelled');
    } else {
      this.finish(job, 'failed', r.error ?? job.error ?? 'the agent reported a failure');
    }
  }

  private apply(job: Job, ev: RoundEvent): void {
    switch (ev.kind) {
      case 'session':
        job.sessionId = ev.id;
        break;
      case 'status':
        this.phase(job, ev.text);
        break;
      case 'permission':
        this.phase(job, `${job.label}: permission ${ev.decision} (${ev.what})`);
        break;
      case 'commentary': {
        // Commentary is paged to the caller as is, so it is redacted on the way in.
        const text = redact(stripTerminalControls(ev.text));
        job.commentary.append(text);
        this.bump(job);
        break;
      }
      case 'error':
        job.error = safeText(ev.message, MAX_ERROR_CODE_POINTS);
        break;
      case 'tool':
      case 'usage':
        break;
    }
  }

  private finish(job: Job, state: Exclude<JobState, 'running'>, error?: string): void {
    if (job.state !== 'running') return;
    job.state = state;
    job.finishedAt = this.now();
    // Rule `no-secrets-out`: the verdict is the one free text that crosses; known secrets and credential shapes are
    // masked.
    job.result = state === 'completed' ? redact(job.result) : '';
    job.resultChars = countCodePoints(job.result);
    if (state === 'failed') job.error = safeText(error ?? job.error ?? 'unknown error', MAX_ERROR_CODE_POINTS);
    this.phase(job, `${job.label}: ${state}`, true);
  }

  private phase(job: Job, text: string, lifecycle = false): void {
    const line = statusLine(redact(text));
    if (!line) return;
    job.phases.push({ cursor: job.cursor + 1, text: line });
    if (job.phases.length > KEPT_PHASES) job.phases.shift();
    this.bump(job, lifecycle);
  }

  /** Advances the cursor and wakes readers; intermediate progress is coalesced to one step per status interval. */
  private bump(job: Job, lifecycle = false): void {
    const now = this.now();
    if (!lifecycle && this.statusIntervalMs > 0) {
      if (job.pendingBump) return;
      const wait = job.lastBumpAt + this.statusIntervalMs - now;
      if (wait > 0) {
        job.pendingBump = setTimeout(() => {
          job.pendingBump = undefined;
          this.bump(job, true);
        }, wait);
        job.pendingBump.unref();
        return;
      }
    }
    clearTimeout(job.pendingBump);
    job.pendingBump = undefined;
    job.lastBumpAt = now;
    job.cursor++;
    this.waiters.wake(job.id);
  }

  private view(job: Job, after: number): JobStatusView {
    const phases = job.phases.filter((p) => p.cursor > after).map((p) => p.text);
    return {
      jobId: job.id,
      state: job.state,
      cursor: job.cursor,
      status: job.phases.at(-1)?.text ?? '',
      phases: phases.slice(-PHASES_PER_READ),
      done: job.state !== 'running',
      elapsedSeconds: Math.round(((job.finishedAt ?? this.now()) - job.startedAt) / 1000),
      ...(job.state === 'failed' ? { error: job.error } : {}),
      ...(job.state === 'completed' ? { resultCodePoints: job.resultChars } : {}),
      commentaryEndOffset: job.commentary.total,
    };
  }

  private get(jobId: string): Job {
    const job = this.jobs.get(jobId);
    if (!job) {
      throw new JobError(
        'unknown_job',
        `no job ${JSON.stringify(cutCodePoints(jobId, 64))} on this connection (jobs end with the connection and expire an hour after finishing)`,
      );
    }
    return job;
  }
}
