import type { ExceptionType } from '../queue-items/exception-types';
import type { Queryable, Sql } from '../db/sql';
import { jobStartLatencySeconds } from '../metrics/domain';
import type { JobRow } from '../jobs/repo';
import { JOB_STATUS_TRANSITIONS as T, RUN_STATUSES, jobStatusInSql, jobStatusSql, transitionJob, type JobStatus } from '../jobs/transitions';
import { appendJobLogs, checkAppend, logAppendSet, type LogAppend } from '../jobs/logs';
import { endJobs } from './job-end';
import type { DispatchJobRef } from './port';
import { es } from '../messages/server-messages';
import { renewManyJobLeases, type OwnedRun } from './lease-renewal';

/**
 * A job's life on its machine, as the agent drives it. Every write is guarded by the status and
 * by the fencing token `attempt` that the start hands out (docs/architecture.md, invariants 2 and 3).
 */

export interface StartedJob {
  id: string;
  tenant_id: string;
  process_id: string;
  process_name: string;
  machine_id: string;
  /** the fencing token of this run */
  attempt: number;
  input_data: Record<string, unknown> | null;
  queue_id: string | null;
  source: string;
  priority: number;
  retry_count: number;
  timeout_seconds: number;
  started_at: Date;
  timeout_at: Date;
}

export type StartResult =
  | { started: StartedJob }
  /** not pending any more (stopped before it ran, or a duplicate delivery): nothing to do */
  | { skipped: 'not_pending'; status: JobStatus | null }
  /** a delayed retry delivered early: try again at `not_before` */
  | { skipped: 'not_before'; not_before: Date };

export interface StartOptions {
  /**
   * Identifies this delivery of the job to the agent (a fresh UUID per attempt to start it).
   * Asked again with the same holder after a lost answer (the connection dropped mid-statement,
   * so the start may or may not have happened), the start returns the same run instead of
   * "already running": an unknown outcome is resolved by the fencing token, never guessed.
   */
  holder?: string;
  /** The run's lease (seconds), renewed by `renewJobLeases`; without one the job never lapses. */
  leaseSeconds?: number;
}

/** The last attempt of each job whose start this process observed (bounded), for the start latency. */
const startsSeen = new Map<string, number>();

/**
 * `pending → running` on this machine, as one statement: bumps `attempt` (the new fencing
 * token), stamps `started_at`, `timeout_at` and the lease (database clock) and returns what the
 * robot needs. A repeat by the same holder returns the run it started, unchanged.
 */
export async function startJob(sql: Queryable, jobId: string, machineId: string, opts: StartOptions = {}): Promise<StartResult> {
  const holder = opts.holder ?? null;
  const lease = opts.leaseSeconds ?? null;
  const [row] = await sql<StartedJob[]>`
    update jobs j
       set status = ${jobStatusSql(sql, T.start.to)},
           attempt = case when ${jobStatusInSql(sql, 'j.status', T.start.from)} then j.attempt + 1 else j.attempt end,
           started_at = case when ${jobStatusInSql(sql, 'j.status', T.start.from)} then now() else j.started_at end,
           timeout_at = case when ${jobStatusInSql(sql, 'j.status', T.start.from)} then now() + make_interval(secs => p.timeout_seconds) else j.timeout_at end,
           lease_holder = ${holder}::uuid, lease_expires_at = now() + make_interval(secs => ${lease}::float8),
           -- a new hand-off: not acknowledged by its robot yet (a repeat keeps what it had)
           acknowledged_at = case when ${jobStatusInSql(sql, 'j.status', T.start.from)} then null else j.acknowledged_at end,
           updated_at = now()
      from processes p
     where j.id = ${jobId} and j.machine_id = ${machineId} and p.id = j.process_id
       and ((${jobStatusInSql(sql, 'j.status', T.start.from)} and (j.not_before is null or j.not_before <= now()))
            -- the same holder asking again: its start already happened
            or (j.status = ${jobStatusSql(sql, T.start.to)} and j.lease_holder = ${holder}::uuid))
    returning j.id, j.tenant_id, j.process_id, p.name as process_name, j.machine_id, j.attempt, j.input_data, j.queue_id,
              j.source, j.priority, j.retry_count, p.timeout_seconds, j.started_at, j.timeout_at,
              extract(epoch from j.started_at - j.created_at)::float8 as start_latency_s`;
  if (row) {
    const { start_latency_s: latency, ...started } = row as StartedJob & { start_latency_s: number };
    // a repeat by the same holder returns the run it started: observed once, at its first start
    if (started.attempt !== startsSeen.get(started.id)) {
      startsSeen.set(started.id, started.attempt);
      if (startsSeen.size > 10_000) startsSeen.delete(startsSeen.keys().next().value!);
      jobStartLatencySeconds.observe(Math.max(0, latency));
    }
    return { started };
  }
  const [cur] = await sql<Array<{ status: JobStatus; not_before: Date | null }>>`
    select status, not_before from jobs where id = ${jobId}`;
  if (cur?.status === 'pending' && cur.not_before && cur.not_before.getTime() > Date.now() - 5) {
    return { skipped: 'not_before', not_before: cur.not_before };
  }
  return { skipped: 'not_pending', status: cur?.status ?? null };
}

export interface LeaseRenewal {
  id: string;
  /** the run's fencing token */
  attempt: number;
  /** false for a run that shows no sign of life: its lease is left to lapse */
  alive: boolean;
}

/**
 * The agent's heartbeat for its runs (a run waiting for a person's input included): extends the lease of every run that still shows signs of
 * life (by `leaseSeconds` from now, database clock) and answers, for every run this agent still
 * owns, whether a stop was requested. A run absent from the answer no longer owns its job. A run
 * listed is one its robot holds: its hand-off is acknowledged (acknowledgeRun).
 */
export async function renewJobLeases(
  sql: Queryable,
  machineId: string,
  runs: readonly LeaseRenewal[],
  leaseSeconds: number,
): Promise<OwnedRun[]> {
  if (runs.length === 0) return [];
  const [owned] = await renewManyJobLeases(sql, [{ machineId, runs, leaseSeconds }]);
  return owned!;
}

/**
 * The robot says it holds the run it was handed (`job.started`): from now on a lost run is failed
 * like any other, where a hand-off never acknowledged goes back to pending (dispatch/hand-back.ts).
 * With `leaseSeconds` the lease is renewed from now, like a heartbeat's: the robot counts an
 * accepted acknowledgement as a confirmation of its ownership, from the moment it sent it, and
 * starts the run only then (docs/agent-protocol.md, "Ownership"). Returns whether a stop was
 * requested, or null when this run no longer owns the job.
 */
export async function acknowledgeRun(
  sql: Queryable,
  jobId: string,
  attempt: number,
  machineId: string,
  leaseSeconds: number | null = null,
): Promise<{ stop_requested: boolean } | null> {
  const [row] = await sql<Array<{ stop_requested: boolean }>>`
    update jobs set acknowledged_at = coalesce(acknowledged_at, now()),
                    lease_expires_at = coalesce(now() + make_interval(secs => ${leaseSeconds}::float8), lease_expires_at)
     where id = ${jobId} and attempt = ${attempt} and machine_id = ${machineId} and ${jobStatusInSql(sql, 'status', RUN_STATUSES)}
    returning stop_requested`;
  return row ?? null;
}

export interface JobProgress {
  progress_percent?: number | null;
  progress_message?: string | null;
  /** text to append to the job's log (at most LOG_APPEND_MAX_BYTES, numbered; jobs/logs.ts) */
  logs_append?: LogAppend;
  resource_metrics?: Record<string, unknown> | null;
}

/**
 * Progress of a running job (not a status change, but fenced like one). Returns whether a stop
 * was requested, or null when this run no longer owns the job (stale attempt, job finished).
 */
export async function reportJobProgress(sql: Queryable, jobId: string, attempt: number, p: JobProgress): Promise<{ stop_requested: boolean } | null> {
  const set: Record<string, unknown> = { updated_at: sql`now()` };
  if (p.progress_percent !== undefined) set.progress_percent = p.progress_percent;
  if (p.progress_message !== undefined) set.progress_message = p.progress_message;
  if (p.resource_metrics !== undefined) set.resource_metrics = p.resource_metrics === null ? null : sql.json(p.resource_metrics as never);
  if (p.logs_append) checkAppend(p.logs_append);
  // the log's append rides on the progress statement: no extra round trip per report
  const append = p.logs_append ? sql`, ${logAppendSet(sql, p.logs_append)}` : sql``;
  const [row] = await sql<Array<{ stop_requested: boolean }>>`
    update jobs set ${sql(set, Object.keys(set))}${append}
    where id = ${jobId} and status = ${jobStatusSql(sql, 'running')} and attempt = ${attempt}
    returning stop_requested`;
  return row ?? null;
}

export type FinalByAgent = 'completed' | 'failed' | 'stopped' | 'timed_out';

/** How a run ends by its agent's word: the table's entry for each final status. */
const END_BY_AGENT = { completed: T.complete, failed: T.fail, stopped: T.stop, timed_out: T.timeOut } as const satisfies Record<FinalByAgent, { to: FinalByAgent }>;

export interface JobEnd extends JobProgress {
  to: FinalByAgent;
  output_data?: Record<string, unknown> | null;
  error_message?: string | null;
  /** with `failed`: the kind of the failure the robot names (`application` when it names none) */
  exception?: ExceptionType;
  /** for consumer jobs: the message items still held get (normally none) */
  orphanItemMessage?: string;
}

export interface FinishResult {
  job: JobRow;
  /** jobs created by the transition (chain, retry); their effects are recorded with it */
  followUps: DispatchJobRef[];
  /** queues whose items this job left behind (failed); handed to their retry policy by the outbox */
  failedItemQueues: string[];
}

/**
 * `running → completed | failed | stopped | timed_out` (and `waiting_input → failed | stopped`) for this run (attempt), with what follows
 * it (endJobs), in one transaction. Null when the guard refused it (a stale run, or the
 * dispatcher already ended the job): the caller's result is then simply dropped.
 */
export async function finishJob(sql: Sql, jobId: string, attempt: number, end: JobEnd): Promise<FinishResult | null> {
  const t = END_BY_AGENT[end.to];
  if (!t) throw new Error(`Illegal job end ${String(end.to)}`);
  // a robot that gives up while it waits for input (its agent shutting down) ends the wait too
  const giveUpWait = (t.from as readonly JobStatus[]).includes('waiting_input');
  if (end.logs_append) checkAppend(end.logs_append);
  return sql.begin(async (tx) => {
    // the last lines first, fenced like the transition (a stale run appends nothing)
    if (end.logs_append && !(await appendJobLogs(tx, jobId, attempt, end.logs_append))) return null;
    const job = await transitionJob(tx, {
      id: jobId,
      from: t.from,
      to: t.to,
      attempt,
      set: {
        ...(giveUpWait ? { pending_input_prompt: null, pending_input_options: null } : {}),
        output_data: end.output_data,
        error_message: end.error_message,
        ...(end.to === 'failed' ? { exception_type: end.exception ?? 'application' } : {}),
        resource_metrics: end.resource_metrics,
        progress_percent: end.progress_percent,
        progress_message: end.progress_message,
      },
    });
    if (!job) return null;
    const ended = await endJobs(tx, [job], { itemMessage: () => end.orphanItemMessage ?? es.queues.consumerEndedWithoutClosing });
    return { job, followUps: ended.followUps, failedItemQueues: ended.failedItemQueues };
  }) as Promise<FinishResult | null>;
}

/**
 * After a final transition whose answer was lost and whose repeat was refused: the job as this
 * run ended it (same `attempt`, the status it asked for), or null when someone else ended it.
 */
export async function findRunEndedAs(sql: Queryable, jobId: string, attempt: number, status: FinalByAgent): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`select * from jobs where id = ${jobId} and attempt = ${attempt} and status = ${status}`;
  return row ?? null;
}
