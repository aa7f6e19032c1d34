import type { ExceptionType } from '../queue-items/exception-types';
import type { Queryable } from '../db/sql';
import { statusSqlFor } from '../db/status-sql';
import type { JobRow } from './repo';

/**
 * The job state machine (docs/decisions/jobs.md; docs/architecture.md, invariant 2).
 * JOB_STATUS_TRANSITIONS below is the only place where legal status changes are written down.
 * Every statement that changes `jobs.status` takes its `from` (the guard) and its `to` from an
 * entry of it: `transitionJob` for the one-job changes, and the set-based statements of the
 * engine (start, ask, answer, the sweeps) through jobStatusSql / jobStatusInSql (db/status-sql.ts),
 * which write the table's statuses into the SQL text. A test scans the sources for job status literals in
 * SQL that updates jobs (packages/core/test/job-transitions.test.ts).
 */
export const JOB_STATUSES = ['pending', 'running', 'waiting_input', 'completed', 'failed', 'stopped', 'timed_out'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'stopped', 'timed_out'];
export const ACTIVE_JOB_STATUSES: readonly JobStatus[] = ['pending', 'running', 'waiting_input'];
/**
 * The statuses in which a started run still owns its job (fenced by `attempt`): it may append
 * logs and renew its lease, and the engine may end it when its machine or lease is lost.
 */
export const RUN_STATUSES: readonly JobStatus[] = ['running', 'waiting_input'];

export function isFinalJobStatus(status: string): boolean {
  return (FINAL_JOB_STATUSES as readonly string[]).includes(status);
}

/**
 * Every legal job status change, by name: `from` → `to`, and what the statement that applies it
 * writes besides `status` and `updated_at`. Entering a final status always stamps `finished_at`.
 */
export const JOB_STATUS_TRANSITIONS = {
  /**
   * The agent starts the job on its machine (dispatch/job-run.ts, startJob): `attempt + 1` (the
   * new fencing token), `started_at`, `timeout_at` and the run's lease.
   */
  start: { from: ['pending'], to: 'running' },
  /** Stopped before it ran: by a person (jobs/service.ts, stopJob: `stop_requested`), or a queue consumer of a machine gone offline (sweeps.ts). */
  stopPending: { from: ['pending'], to: 'stopped' },
  /**
   * A hand-off its robot never acknowledged goes back to be handed out again (dispatch/hand-back.ts):
   * the run, its lease and its timeout cleared; `attempt` stays (the next start bumps it).
   */
  handBack: { from: ['running'], to: 'pending' },
  /** The engine gives up on a job it cannot place: `error_message`. */
  failPending: { from: ['pending'], to: 'failed' },
  /**
   * The robot asks a person for a value (jobs/input.ts, askJobInput): the prompt and options,
   * the earlier answer cleared, the timeout paused (`input_timeout_left`, `timeout_at` null).
   * docs/decisions/human-input.md.
   */
  ask: { from: ['running'], to: 'waiting_input' },
  /** A person answers (jobs/input.ts, answerJobInput): `input_answer`, the prompt cleared, the timeout resumed. */
  answer: { from: ['waiting_input'], to: 'running' },
  /** The robot ends well (finishJob): `output_data`, metrics, progress. */
  complete: { from: ['running'], to: 'completed' },
  /** The robot ran out of time by its own clock (finishJob), or the timeout sweep: `error_message`. A job waiting for input is never timed out. */
  timeOut: { from: ['running'], to: 'timed_out' },
  /**
   * The robot fails (finishJob), or the engine ends a run whose machine, lease or agent was
   * lost (sweeps.ts): `error_message`; a pending question is cleared.
   */
  fail: { from: ['running', 'waiting_input'], to: 'failed' },
  /**
   * The run ends after a requested stop (finishJob, the sweeps when its stop was requested), or a
   * person stops a job waiting for input at once (stopJob): a pending question is cleared.
   */
  stop: { from: ['running', 'waiting_input'], to: 'stopped' },
} as const satisfies Record<string, { from: readonly JobStatus[]; to: JobStatus }>;

export type JobTransitionName = keyof typeof JOB_STATUS_TRANSITIONS;

/** from → the statuses it may move to, derived from JOB_STATUS_TRANSITIONS. Final statuses have no way out. */
export const JOB_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = (() => {
  const out = Object.fromEntries(JOB_STATUSES.map((s) => [s, [] as JobStatus[]])) as Record<JobStatus, JobStatus[]>;
  for (const t of Object.values(JOB_STATUS_TRANSITIONS)) {
    for (const from of t.from) if (!out[from].includes(t.to)) out[from].push(t.to);
  }
  return out;
})();

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return JOB_TRANSITIONS[from].includes(to);
}

/**
 * A job status written into the SQL text (`'running'`), and a guard `<column> = 's'` /
 * `<column> in ('a', 'b')` over a transition's `from` or a status list: the shared helpers of
 * db/status-sql.ts over JOB_STATUSES (why a literal, and why `unsafe` is safe, are written there).
 * The partial indexes on `jobs` name statuses in their predicates, which only a literal lets a
 * generic plan prove.
 */
export const { statusSql: jobStatusSql, statusInSql: jobStatusInSql } = statusSqlFor<JobStatus>('job', JOB_STATUSES);

/** Columns a transition may write besides `status` (JSON columns are serialized here). */
export interface JobTransitionSet {
  machine_id?: string;
  started_at?: Date | null;
  finished_at?: Date | null;
  timeout_at?: Date | null;
  output_data?: Record<string, unknown> | null;
  logs?: string | null;
  error_message?: string | null;
  exception_type?: ExceptionType | null;
  retry_count?: number;
  stop_requested?: boolean;
  progress_percent?: number | null;
  progress_message?: string | null;
  resource_metrics?: Record<string, unknown> | null;
  logs_archived?: boolean;
  logs_archive_key?: string | null;
  pending_input_prompt?: string | null;
  pending_input_options?: Record<string, unknown> | null;
}

const JSON_COLUMNS = new Set<keyof JobTransitionSet>(['output_data', 'resource_metrics', 'pending_input_options']);
const SET_COLUMNS: ReadonlyArray<keyof JobTransitionSet> = [
  'machine_id', 'started_at', 'finished_at', 'timeout_at', 'output_data', 'logs', 'error_message', 'exception_type', 'retry_count',
  'stop_requested', 'progress_percent', 'progress_message', 'resource_metrics', 'logs_archived', 'logs_archive_key',
  'pending_input_prompt', 'pending_input_options',
];

export interface JobTransition {
  id: string;
  /** The status the caller believes the job is in; several when any of them will do. */
  from: JobStatus | readonly JobStatus[];
  to: JobStatus;
  /** Fencing token: only when the job's current `attempt` equals it (invariant 3). */
  attempt?: number;
  /** Extra guard for callers that act for a tenant (the API). */
  tenantId?: string;
  /** Start a new attempt: `attempt = attempt + 1`; the returned row carries the new token. */
  newAttempt?: boolean;
  set?: JobTransitionSet;
}

/**
 * Applies one legal transition as a single guarded UPDATE. Returns the updated row, or null when
 * the guard did not match (the job is not in `from`, the attempt is stale, or it is another
 * tenant's): a duplicate or late event then changes nothing.
 *
 * Entering `running` stamps `started_at` and entering a final status stamps `finished_at`
 * (database clock) unless `set` gives them.
 */
export async function transitionJob(sql: Queryable, t: JobTransition): Promise<JobRow | null> {
  const from = (Array.isArray(t.from) ? t.from : [t.from]) as JobStatus[];
  if (from.length === 0) throw new Error('transitionJob: empty from');
  for (const f of from) {
    if (!canTransition(f, t.to)) throw new Error(`Illegal job transition ${f} → ${t.to}`);
  }
  const set: Record<string, unknown> = { status: t.to, updated_at: sql`now()` };
  for (const column of SET_COLUMNS) {
    const value = t.set?.[column];
    if (value === undefined) continue;
    set[column] = JSON_COLUMNS.has(column) && value !== null ? sql.json(value as never) : value;
  }
  if (t.to === 'running' && set.started_at === undefined) set.started_at = sql`now()`;
  if (isFinalJobStatus(t.to) && set.finished_at === undefined) set.finished_at = sql`now()`;
  if (t.newAttempt) set.attempt = sql`attempt + 1`;
  const [row] = await sql<JobRow[]>`
    update jobs set ${sql(set, Object.keys(set))}
    where id = ${t.id}
      and status = any(${from}::text[])
      ${t.attempt !== undefined ? sql`and attempt = ${t.attempt}` : sql``}
      ${t.tenantId !== undefined ? sql`and tenant_id = ${t.tenantId}` : sql``}
    returning *`;
  return row ?? null;
}

/**
 * Marks a running job's stop as requested (status stays `running`; the engine aborts it and
 * then moves it to `stopped`). Guarded like a transition: null when the job is not running.
 */
export async function requestRunningJobStop(sql: Queryable, id: string, tenantId?: string): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`
    update jobs set stop_requested = true, stop_requested_at = coalesce(stop_requested_at, now()), updated_at = now()
    where id = ${id} and status = ${jobStatusSql(sql, 'running')}
      ${tenantId !== undefined ? sql`and tenant_id = ${tenantId}` : sql``}
    returning *`;
  return row ?? null;
}
