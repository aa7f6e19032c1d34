import type { Queryable } from '../db/sql';
import type { JobRow } from './repo';

/**
 * The job state machine (docs/decisions/jobs.md; docs/architecture.md, invariant 2). This table is the only
 * place where legal status changes are written down; every status change of a job goes through
 * `transitionJob`, which refuses a pair that is not in it and turns the rest into one guarded
 * `UPDATE … WHERE id = $id AND status = $from [AND attempt = $token] RETURNING *`.
 */
export const JOB_STATUSES = ['pending', 'running', 'waiting_input', 'completed', 'failed', 'stopped', 'timed_out'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'stopped', 'timed_out'];
export const ACTIVE_JOB_STATUSES: readonly JobStatus[] = ['pending', 'running', 'waiting_input'];

export function isFinalJobStatus(status: string): boolean {
  return (FINAL_JOB_STATUSES as readonly string[]).includes(status);
}

/** from → the statuses it may move to. Final statuses have no way out. */
export const JOB_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  // start on a machine; stop before it ran; the engine gives up on it (machine or process gone)
  pending: ['running', 'stopped', 'failed'],
  // waiting_input: the robot asked a person for a value (docs/decisions/human-input.md)
  running: ['waiting_input', 'completed', 'failed', 'stopped', 'timed_out'],
  // answered; stopped at once by a person; failed when its machine or its lease is lost
  waiting_input: ['running', 'stopped', 'failed'],
  completed: [],
  failed: [],
  stopped: [],
  timed_out: [],
};

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return JOB_TRANSITIONS[from].includes(to);
}

/** Columns a transition may write besides `status` (JSON columns are serialized here). */
export interface JobTransitionSet {
  machine_id?: string;
  started_at?: Date | null;
  finished_at?: Date | null;
  timeout_at?: Date | null;
  output_data?: Record<string, unknown> | null;
  logs?: string | null;
  error_message?: string | null;
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
  'machine_id', 'started_at', 'finished_at', 'timeout_at', 'output_data', 'logs', 'error_message', 'retry_count',
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
    where id = ${id} and status = 'running'
      ${tenantId !== undefined ? sql`and tenant_id = ${tenantId}` : sql``}
    returning *`;
  return row ?? null;
}
