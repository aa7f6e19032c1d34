import type { ExceptionType } from '../queue-items/exception-types';
import type { Queryable } from '../db/sql';
import type { StoredInputSchema } from './input-schema';
import type { JobStatus } from './transitions';
import { EXPORT_CHUNK_BYTES, KEYSET_AT_SQL, type KeysetPosition, type KeysetRow } from '../export/stream';

/** A row of `jobs` (migrations/0001_init.sql), as `select *` returns it. */
export interface JobRow {
  id: string;
  tenant_id: string;
  process_id: string;
  machine_id: string;
  status: JobStatus;
  priority: number;
  input_data: Record<string, unknown> | null;
  output_data: Record<string, unknown> | null;
  logs: string | null;
  error_message: string | null;
  /** what the robot said when it failed the run (migration 0031); read through jobExceptionType */
  exception_type: ExceptionType | null;
  started_at: Date | null;
  finished_at: Date | null;
  /** when a stop of the running job was first requested (migration 0015) */
  stop_requested_at?: Date | null;
  retry_count: number;
  stop_requested: boolean;
  logs_archived: boolean;
  logs_archive_key: string | null;
  is_attended: boolean;
  pending_input_prompt: string | null;
  pending_input_options: Record<string, unknown> | null;
  progress_percent: number | null;
  progress_message: string | null;
  resource_metrics: Record<string, unknown> | null;
  trigger_id: string | null;
  schedule_id: string | null;
  attempt: number;
  source: string;
  queue_id: string | null;
  parent_job_id: string | null;
  not_before: Date | null;
  sla_due_at: Date | null;
  timeout_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A job with the names the JobResponse shows next to its ids. */
export interface JobWithNames extends JobRow {
  process_name: string | null;
  machine_name: string | null;
}

/** One job of one tenant, with its process and machine names; null when missing or another tenant's. */
export async function findJobWithNames(sql: Queryable, tenantId: string, id: string): Promise<JobWithNames | null> {
  const [row] = await sql<JobWithNames[]>`
    select j.*, p.name as process_name, m.name as machine_name
    from jobs j
    left join processes p on p.id = j.process_id
    left join machines m on m.id = j.machine_id
    where j.id = ${id} and j.tenant_id = ${tenantId}`;
  return row ?? null;
}

export interface JobFilter {
  status?: string;
  process_id?: string;
  machine_id?: string;
  /** the object the jobs' input_data must contain (`@>`, jobs_input_data_idx) */
  input_data?: Record<string, unknown>;
}

/**
 * One page of a tenant's jobs, newest first (created_at desc, id desc), with the names a
 * JobResponse carries. The page's ids come from jobs_tenant_list_idx (or the filter's own index,
 * migration 0006); only the page's rows are read.
 */
export async function listJobsWithNames(sql: Queryable, tenantId: string, filter: JobFilter, limit: number, offset: number): Promise<JobWithNames[]> {
  return sql<JobWithNames[]>`
    with page as (
      select id, created_at from jobs
      where tenant_id = ${tenantId} ${jobFilterSql(sql, filter)}
      order by created_at desc, id desc limit ${limit} offset ${offset})
    select j.*, p.name as process_name, m.name as machine_name
    from page
    join jobs j on j.id = page.id
    left join processes p on p.id = j.process_id
    left join machines m on m.id = j.machine_id
    order by page.created_at desc, page.id desc`;
}

/** The exact number of a tenant's jobs that pass the filter (an index-only count, or a count of what the input_data index finds). */
export async function countJobs(sql: Queryable, tenantId: string, filter: JobFilter): Promise<number> {
  const [row] = await sql<{ total: number }[]>`
    select count(*)::bigint as total from jobs where tenant_id = ${tenantId} ${jobFilterSql(sql, filter)}`;
  return row!.total;
}

/** What a job export carries: a JobResponse's columns but the log (read per job through its own route). */
const EXPORT_JOB_COLUMNS = [
  'id', 'tenant_id', 'process_id', 'machine_id', 'status', 'priority', 'input_data', 'output_data', 'error_message', 'started_at',
  'finished_at', 'retry_count', 'stop_requested', 'logs_archived', 'logs_archive_key', 'is_attended', 'pending_input_prompt',
  'pending_input_options', 'progress_percent', 'progress_message', 'created_at', 'updated_at', 'resource_metrics', 'trigger_id', 'schedule_id',
  'exception_type',
].map((c) => `j.${c}`);

/**
 * What a job weighs as the API will hold and send it, for a chunk's bound (export/stream.ts): its
 * JSON as text and its free texts. Not pg_column_size, the stored size, which compression makes
 * far smaller than the text for repetitive payloads.
 */
const JOB_SIZE_SQL = [
  'input_data::text', 'output_data::text', 'pending_input_options::text', 'error_message', 'progress_message', 'pending_input_prompt',
].map((c) => `coalesce(octet_length(${c}), 0)`).join(' + ');

/**
 * One chunk of a tenant's job export: the jobs after `after` in list order (created_at desc, id
 * desc) that pass the list's filter, with their names and keyset position (export/stream.ts).
 */
export async function exportJobsChunk(
  sql: Queryable,
  tenantId: string,
  filter: JobFilter,
  after: KeysetPosition | null,
  limit: number,
): Promise<Array<Omit<JobWithNames, 'logs'> & KeysetRow>> {
  return sql<Array<Omit<JobWithNames, 'logs'> & KeysetRow>>`
    with sized as (
      select id, created_at, ${sql.unsafe(KEYSET_AT_SQL)} as export_at, ${sql.unsafe(JOB_SIZE_SQL)} as export_size,
             sum(${sql.unsafe(JOB_SIZE_SQL)}) over (order by created_at desc, id desc) as export_upto
      from jobs
      where tenant_id = ${tenantId} ${jobFilterSql(sql, filter)}
        ${after ? sql`and (created_at, id) < (${after.at}::text::timestamptz, ${after.id}::uuid)` : sql``}
      order by created_at desc, id desc limit ${limit}),
    chunk as (select id, created_at, export_at from sized where export_upto - export_size < ${EXPORT_CHUNK_BYTES})
    select ${sql(EXPORT_JOB_COLUMNS)}, p.name as process_name, m.name as machine_name, chunk.export_at, chunk.id as export_id
    from chunk
    join jobs j on j.id = chunk.id
    left join processes p on p.id = j.process_id
    left join machines m on m.id = j.machine_id
    order by chunk.created_at desc, chunk.id desc`;
}

function jobFilterSql(sql: Queryable, f: JobFilter) {
  return sql`${f.status !== undefined ? sql`and status = ${f.status}` : sql``}
    ${f.process_id !== undefined ? sql`and process_id = ${f.process_id}` : sql``}
    ${f.machine_id !== undefined ? sql`and machine_id = ${f.machine_id}` : sql``}
    ${f.input_data !== undefined ? sql`and input_data @> ${sql.json(f.input_data as never)}` : sql``}`;
}

/** Which of a process id and a machine id name a process / machine of the tenant (active or not). */
export async function tenantHasProcessAndMachine(sql: Queryable, tenantId: string, processId: string | null, machineId: string | null) {
  const [row] = await sql<Array<{ process: boolean; machine: boolean }>>`
    select exists (select 1 from processes where id = ${processId} and tenant_id = ${tenantId}) as process,
           exists (select 1 from machines where id = ${machineId} and tenant_id = ${tenantId}) as machine`;
  return row!;
}

/** The tenant's process as a trigger needs it (only the columns used to create a job). */
export interface TriggerProcess {
  id: string;
  name: string;
  is_active: boolean;
  input_schema: StoredInputSchema | null;
  sla_deadline_minutes: number | null;
}

/**
 * What a trigger checks before it writes, read in one round trip: the tenant's subscription and
 * quota usage in the current period, and the process (null when missing or another tenant's).
 * `processId` null skips the process look-up (an id that is not a UUID cannot exist).
 */
export interface TriggerContextRow {
  subscription_status: string;
  monthly_quota: number;
  period_used: number;
  period_start: Date;
  process: TriggerProcess | null;
}

export async function loadTriggerContext(sql: Queryable, tenantId: string, processId: string | null): Promise<TriggerContextRow | null> {
  const [row] = await sql<Array<Omit<TriggerContextRow, 'process'> & { p_id: string | null; p_name: string | null; p_is_active: boolean | null; p_input_schema: Record<string, unknown> | null; p_schema_hash: string | null; p_schema_bytes: number | null; p_sla: number | null }>>`
    select t.subscription_status, t.monthly_quota,
           case when t.quota_period = date_trunc('month', now() at time zone 'utc')::date then t.quota_used else 0 end as period_used,
           date_trunc('month', now() at time zone 'utc')::date as period_start,
           p.id as p_id, p.name as p_name, p.is_active as p_is_active, p.input_schema as p_input_schema,
           md5(p.input_schema::text) as p_schema_hash, octet_length(p.input_schema::text) as p_schema_bytes,
           p.sla_deadline_minutes as p_sla
    from tenants t
    left join processes p on p.id = ${processId} and p.tenant_id = t.id
    where t.id = ${tenantId}`;
  if (!row) return null;
  return {
    subscription_status: row.subscription_status,
    monthly_quota: row.monthly_quota,
    period_used: row.period_used,
    period_start: row.period_start,
    process: row.p_id
      ? {
          id: row.p_id, name: row.p_name!, is_active: row.p_is_active!, sla_deadline_minutes: row.p_sla,
          // hashed and measured by Postgres, so a trigger never serializes the schema to find its compiled validator
          input_schema: row.p_input_schema === null ? null : { schema: row.p_input_schema, hash: row.p_schema_hash!, bytes: row.p_schema_bytes! },
        }
      : null,
  };
}

export interface NewJob {
  tenantId: string;
  processId: string;
  /** The machine the caller named; null = pick the least-loaded online, active machine. */
  machineId: string | null;
  priority: number;
  inputData: Record<string, unknown> | null;
  source: 'api' | 'webhook' | 'chain' | 'retry' | 'queue' | 'manual' | 'schedule' | 'console';
  slaDeadlineMinutes: number | null;
  queueId?: string | null;
  /** The queue trigger that started it (a consumer job). */
  triggerId?: string | null;
  parentJobId?: string | null;
  retryCount?: number;
  notBefore?: Date | null;
  /** A scheduled run: its schedule and the tick it was created for (one job per tick, migration 0010). */
  scheduleId?: string | null;
  scheduledFor?: Date | null;
}

/**
 * Inserts a pending job on the named machine (which must be an active machine of the tenant; it
 * may be offline — the job waits for it) or, without one, on the least-loaded machine of the
 * tenant that is active, `online` (has a free slot) and unattended: an attended machine (a person's
 * desktop robot) runs only what names it. Load = the machine's pending and running jobs per slot;
 * ties go to the freshest heartbeat. Returns null when no machine qualifies. A job on an attended
 * machine is `is_attended`.
 *
 * The machine choice and the insert are one statement, so a machine deactivated in between is
 * never chosen. Concurrent auto-selections read the same load and may pick the same machine:
 * the imbalance is bounded by the number of simultaneous triggers and the jobs still run (they
 * wait for a free slot).
 */
export async function insertJob(sql: Queryable, j: NewJob): Promise<JobWithNames | null> {
  const machine = j.machineId !== null
    ? sql`select m.id, m.name, m.kind from machines m where m.id = ${j.machineId} and m.tenant_id = ${j.tenantId} and m.is_active`
    : sql`
        select m.id, m.name, m.kind from machines m
        where m.tenant_id = ${j.tenantId} and m.is_active and m.status = 'online' and m.kind = 'unattended'
        order by (select count(*) from jobs a where a.machine_id = m.id and a.status in ('pending', 'running', 'waiting_input'))::float8 / m.slots,
                 m.last_heartbeat_at desc nulls last, m.id
        limit 1`;
  const [row] = await sql<JobWithNames[]>`
    with m as (${machine})
    insert into jobs (tenant_id, process_id, machine_id, priority, input_data, source, sla_due_at, queue_id, parent_job_id,
                      retry_count, not_before, trigger_id, is_attended,
                      schedule_id, scheduled_for)
    select ${j.tenantId}, ${j.processId}, m.id, ${j.priority}, ${j.inputData === null ? null : sql.json(j.inputData as never)},
           ${j.source}, case when ${j.slaDeadlineMinutes}::int is null then null else now() + make_interval(mins => ${j.slaDeadlineMinutes}::int) end,
           ${j.queueId ?? null}, ${j.parentJobId ?? null}, ${j.retryCount ?? 0}, ${j.notBefore ?? null},
           ${j.triggerId ?? null}, m.kind = 'attended',
           ${j.scheduleId ?? null}, ${j.scheduledFor ?? null}
    from m
    returning jobs.*, (select name from processes where id = jobs.process_id) as process_name, (select m.name from m) as machine_name`;
  return row ?? null;
}
