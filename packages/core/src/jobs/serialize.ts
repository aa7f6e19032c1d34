import type { JobWithNames } from './repo';
import { inlineLogs } from './logs';
import { STOP_JOB_FIELDS, type JobResponse, type ResourceMetricsValue, type StopJobResponse } from './schemas';
import { iso } from '../validation/iso-date';

/**
 * The kind of a failed job's failure: what its robot said, else `application` (the engine's own
 * failures, a lost machine or lease, are application ones); null unless the job failed.
 */
export function jobExceptionType(row: Pick<JobWithNames, 'status' | 'exception_type'>): JobResponse['exception_type'] {
  return row.status === 'failed' ? (row.exception_type ?? 'application') : null;
}

/** JobResponse: the only way a job leaves the system (API, CLI, OpenAPI examples). */
export function toJobResponse(row: JobWithNames): JobResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    process_id: row.process_id,
    machine_id: row.machine_id,
    status: row.status,
    priority: row.priority,
    input_data: row.input_data,
    output_data: row.output_data,
    logs: inlineLogs(row.logs),
    error_message: row.error_message,
    exception_type: jobExceptionType(row),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    retry_count: row.retry_count,
    stop_requested: row.stop_requested,
    logs_archived: row.logs_archived,
    logs_archive_key: row.logs_archive_key,
    is_attended: row.is_attended,
    pending_input_prompt: row.pending_input_prompt,
    pending_input_options: row.pending_input_options,
    progress_percent: row.progress_percent,
    progress_message: row.progress_message,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    process_name: row.process_name ?? null,
    machine_name: row.machine_name ?? null,
    resource_metrics: (row.resource_metrics as ResourceMetricsValue | null) ?? null,
    trigger_id: row.trigger_id,
    schedule_id: row.schedule_id,
  };
}

/** The stop response: exactly the fields the contract documents for it. */
export function toStopJobResponse(row: JobWithNames): StopJobResponse {
  const full = toJobResponse(row);
  const out = {} as Record<string, unknown>;
  for (const field of STOP_JOB_FIELDS) out[field] = full[field];
  return out as StopJobResponse;
}
