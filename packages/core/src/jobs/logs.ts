import type { Queryable } from '../db/sql';
import { ValidationError } from '../errors';
import { RUN_STATUSES, jobStatusInSql } from './transitions';
import { es } from '../messages/server-messages';

/**
 * A job's log (docs/decisions/job-logs.md): the robot appends text to it while the job runs, the
 * JobResponse shows its tail, and the full text is read back by GET /settings/jobs/{id}/logs from
 * wherever it lives (inline, or the archive once the retention passed).
 */

/** One append: more is refused (the agent sends long output in several appends). */
export const LOG_APPEND_MAX_BYTES = 64 * 1024;
/** A job's whole log: appends past it are dropped and counted, after one marker line. */
export const LOG_TOTAL_MAX_BYTES = 1024 * 1024;
/** The tail of the log a JobResponse carries inline. */
export const LOG_INLINE_MAX_BYTES = 64 * 1024;

/** Written once, when the first append does not fit in LOG_TOTAL_MAX_BYTES. */
export const LOG_TRUNCATED_MARKER = es.logs.truncatedMarker(LOG_TOTAL_MAX_BYTES / 1024 / 1024);

export const LOGS_FIELD_DESCRIPTION =
  `The job's log as the robot appended it while running. Inline it is capped: a log over ${LOG_INLINE_MAX_BYTES / 1024} KiB ` +
  `(UTF-8) shows only its last ${LOG_INLINE_MAX_BYTES / 1024} KiB, after a first line that starts with "… (registro recortado" ` +
  'and says how many bytes were left out; GET /api/v1/settings/jobs/{job_id}/logs returns the whole text. A log keeps ' +
  `at most its first ${LOG_TOTAL_MAX_BYTES / 1024 / 1024} MiB (then a marker line). null before the robot wrote anything, ` +
  'and once the log is archived (logs_archived).';

/** One append to a job's log; `seq` (1, 2, … per run) makes a repeat after a lost answer a no-op. */
export interface LogAppend {
  text: string;
  /** the append's number within the run; one at or below the last applied one is ignored */
  seq?: number;
}

/**
 * Appends to a running (or input-waiting) job's log for this run (the fencing token `attempt`): nothing happens for
 * a stale run or a job that is no longer running. One guarded statement on the job row, which the
 * progress report shares (see reportJobProgress). Past LOG_TOTAL_MAX_BYTES an append is dropped
 * whole, its size added to `logs_dropped_bytes`; the first dropped one writes the marker line.
 * Returns whether a stop was requested, or null when this run no longer owns the job.
 */
export async function appendJobLogs(sql: Queryable, jobId: string, attempt: number, append: LogAppend): Promise<{ stop_requested: boolean } | null> {
  checkAppend(append);
  const [row] = await sql<Array<{ stop_requested: boolean }>>`
    update jobs set ${logAppendSet(sql, append)}, updated_at = now()
    where id = ${jobId} and ${jobStatusInSql(sql, 'status', RUN_STATUSES)} and attempt = ${attempt}
    returning stop_requested`;
  return row ?? null;
}

/** Refuses an append over LOG_APPEND_MAX_BYTES (a robot's bug, told at once rather than cut). */
export function checkAppend(append: LogAppend): void {
  if (Buffer.byteLength(append.text, 'utf8') > LOG_APPEND_MAX_BYTES) {
    throw ValidationError.single(['logs_append', 'text'], es.logs.appendTooLong(LOG_APPEND_MAX_BYTES / 1024), 'too_long');
  }
  if (append.seq !== undefined && !(Number.isInteger(append.seq) && append.seq > 0 && append.seq < 2 ** 31)) {
    throw ValidationError.single(['logs_append', 'seq'], es.logs.seqNotPositive, 'value_error');
  }
}

/**
 * The `set` assignments of an append (every right-hand side sees the row before the update):
 * `logs || $text` while it fits and nothing was dropped yet, else the marker once and a count;
 * an append whose `seq` was already applied changes nothing.
 */
export function logAppendSet(sql: Queryable, append: LogAppend) {
  const { text, seq } = append;
  // the size goes as its own parameter, so the text is sent once however often the guards need it
  const bytes = Buffer.byteLength(text, 'utf8');
  const fresh = seq === undefined ? sql`true` : sql`logs_seq < ${seq}::int`;
  const fits = sql`(logs_dropped_bytes = 0 and coalesce(octet_length(logs), 0) + ${bytes}::int <= ${LOG_TOTAL_MAX_BYTES}::int)`;
  return sql`
    logs = case when not ${fresh} then logs
                when ${fits} then coalesce(logs, '') || ${text}::text
                when logs_dropped_bytes = 0 then coalesce(logs, '') || ${LOG_TRUNCATED_MARKER}::text
                else logs end,
    logs_dropped_bytes = case when not ${fresh} or ${fits} then logs_dropped_bytes else logs_dropped_bytes + ${bytes}::int end
    ${seq === undefined ? sql`` : sql`, logs_seq = greatest(logs_seq, ${seq}::int)`}`;
}

/**
 * What a JobResponse shows of a log: the whole text up to LOG_INLINE_MAX_BYTES, else its last
 * LOG_INLINE_MAX_BYTES (cut at a character boundary) after a line saying what was left out.
 */
export function inlineLogs(logs: string | null): string | null {
  if (logs === null || logs.length <= LOG_INLINE_MAX_BYTES / 4) return logs;
  const bytes = Buffer.from(logs, 'utf8');
  if (bytes.length <= LOG_INLINE_MAX_BYTES) return logs;
  let start = bytes.length - LOG_INLINE_MAX_BYTES;
  // never start inside a UTF-8 sequence: skip its continuation bytes (10xxxxxx)
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return es.logs.trimmedHeader(start, bytes.length) + bytes.subarray(start).toString('utf8');
}
