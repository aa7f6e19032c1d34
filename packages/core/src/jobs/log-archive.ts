import { promisify } from 'node:util';
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Uuid } from '../validation/formats';
import { JobStatusName } from './schemas';
import { gunzip, gzip } from 'node:zlib';
import type { Queryable, Sql } from '../db/sql';
import { NotFoundError } from '../errors';
import { FINAL_JOB_STATUSES } from './transitions';
import { es } from '../messages/server-messages';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Where finished jobs' logs go after LOG_RETENTION_DAYS (docs/decisions/job-logs.md). The key a
 * `put` returns is stored on the job (`logs_archive_key`) and names its backend by its prefix, so
 * an object store can be added later behind this interface while old keys still read back.
 */
export interface LogArchive {
  /**
   * Stores one job's whole log and returns its key. `tx` is the sweep's transaction: a backend
   * in Postgres writes in it, so the blob and the job's `logs_archived` commit together; an
   * external one writes before the commit under a deterministic key (a retry overwrites it).
   */
  put(tx: Queryable, entry: { tenantId: string; jobId: string; text: string; droppedBytes: number }): Promise<string>;
  /** The text stored under `key`, or null when there is none. */
  get(sql: Queryable, key: string): Promise<string | null>;
}

const PG_PREFIX = 'pg:job-logs/';

/** The archive as a table of gzip blobs (`job_log_archives`, migration 0013). */
export const pgLogArchive: LogArchive = {
  async put(tx, { tenantId, jobId, text, droppedBytes }) {
    const key = `${PG_PREFIX}${tenantId}/${jobId}`;
    const data = await gzipAsync(Buffer.from(text, 'utf8'));
    await tx`
      insert into job_log_archives (key, tenant_id, job_id, encoding, original_bytes, dropped_bytes, data)
      values (${key}, ${tenantId}, ${jobId}, 'gzip', ${Buffer.byteLength(text, 'utf8')}, ${droppedBytes}, ${data})
      on conflict (key) do update set data = excluded.data, original_bytes = excluded.original_bytes, dropped_bytes = excluded.dropped_bytes`;
    return key;
  },
  async get(sql, key) {
    if (!key.startsWith(PG_PREFIX)) return null;
    const [row] = await sql<Array<{ data: Buffer }>>`select data from job_log_archives where key = ${key}`;
    return row ? (await gunzipAsync(row.data)).toString('utf8') : null;
  },
};

/** How many jobs one sweep archives (each compressed in the dispatcher, off its event loop). */
export const LOG_ARCHIVE_BATCH = 50;

/**
 * The dispatcher's archive sweep: the logs of finished jobs that ended more than `retentionDays`
 * ago (database clock) move into the archive, and each job gets `logs_archived`, its key and
 * `logs: null`, in one transaction per batch. The rows are taken `for update skip locked` and
 * the closing update is guarded by `not logs_archived`, so two dispatchers sweeping at once
 * archive each log once. Returns the ids archived.
 */
export async function archiveJobLogs(sql: Sql, archive: LogArchive, retentionDays: number, batch = LOG_ARCHIVE_BATCH): Promise<string[]> {
  return sql.begin(async (tx) => {
    const rows = await tx<Array<{ id: string; tenant_id: string; logs: string; logs_dropped_bytes: string | number }>>`
      select id, tenant_id, logs, logs_dropped_bytes from jobs
      where logs is not null and not logs_archived and status = any(${FINAL_JOB_STATUSES as string[]}::text[])
        and finished_at <= now() - make_interval(secs => ${retentionDays * 86_400}::float8)
      order by finished_at
      limit ${batch}
      for update skip locked`;
    if (rows.length === 0) return [];
    const keys: string[] = [];
    for (const r of rows) {
      keys.push(await archive.put(tx, { tenantId: r.tenant_id, jobId: r.id, text: r.logs, droppedBytes: Number(r.logs_dropped_bytes) }));
    }
    const done = await tx<Array<{ id: string }>>`
      update jobs j set logs = null, logs_archived = true, logs_archive_key = a.key, updated_at = now()
        from unnest(${rows.map((r) => r.id)}::uuid[], ${keys}::text[]) as a(id, key)
       where j.id = a.id and not j.logs_archived and j.logs is not null
      returning j.id`;
    return done.map((d) => d.id);
  }) as Promise<string[]>;
}

/** GET /settings/jobs/{job_id}/logs: a job's whole log, wherever it lives. */
export const JobLogsResponse = Type.Object({
  job_id: Uuid(),
  status: JobStatusName,
  logs: Nullable(Type.String({ description: 'The whole log (not capped like the JobResponse\'s `logs`); null when the robot wrote nothing.' })),
  archived: Type.Boolean({ description: 'true when the text was read from the archive (the job\'s logs_archived).' }),
  archive_key: Nullable(Type.String({ description: 'The job\'s logs_archive_key; null while the log is inline.' })),
  size_bytes: Type.Integer({ minimum: 0, description: 'UTF-8 size of `logs`.' }),
  dropped_bytes: Type.Integer({ minimum: 0, description: 'Bytes the robot sent after the log reached its total bound (1 MiB), dropped after a marker line.' }),
});
export type JobLogsRead = Static<typeof JobLogsResponse>;

/** A job's whole log, inline or from the archive; another tenant's job is a missing one (404). */
export async function readJobLogs(sql: Sql, archive: LogArchive, tenantId: string, jobId: string): Promise<JobLogsRead> {
  const [job] = await sql<Array<{ id: string; status: string; logs: string | null; logs_archived: boolean; logs_archive_key: string | null; logs_dropped_bytes: string | number }>>`
    select id, status, logs, logs_archived, logs_archive_key, logs_dropped_bytes from jobs where id = ${jobId} and tenant_id = ${tenantId}`;
  if (!job) throw new NotFoundError(es.jobs.notFound);
  let logs = job.logs;
  if (job.logs_archived && job.logs_archive_key) {
    logs = await archive.get(sql, job.logs_archive_key);
    // an archived job whose blob is gone is a broken store, not a missing job: fail loudly
    if (logs === null) throw new Error(`job ${job.id}: archived logs not found under ${job.logs_archive_key}`);
  }
  return {
    job_id: job.id,
    status: job.status as JobLogsRead['status'],
    logs,
    archived: job.logs_archived,
    archive_key: job.logs_archive_key,
    size_bytes: logs === null ? 0 : Buffer.byteLength(logs, 'utf8'),
    dropped_bytes: Number(job.logs_dropped_bytes),
  };
}
