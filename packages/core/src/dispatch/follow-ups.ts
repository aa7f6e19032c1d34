import type { Queryable } from '../db/sql';
import { insertJob, type JobRow } from '../jobs/repo';
import { pickMachineForFollowUp } from '../machines/heartbeat';
import type { DispatchJobRef } from './port';

/**
 * What happens after a job reaches a final status, in the same transaction as that transition
 * (so a follow-up is never lost and never made twice: the guarded transition succeeds once).
 *
 *  - completed → if the process names `on_success_trigger_process_id` (active, same tenant),
 *    a new pending job of that process (source `chain`, parent_job_id, input = the parent's
 *    output_data), on the least-loaded online machine (else the parent's).
 *  - failed / timed_out → if the process has `auto_retry` and the job's retry_count is below
 *    the process's `max_retries`, a new pending job (source `retry`, retry_count + 1, same
 *    input and priority) that may start only after `retry_delay_seconds` (`not_before`), on the
 *    same machine unless it is offline. Consumer jobs (source `queue`) are not retried: their
 *    items have the queue's own retry policy. Nor is a job its robot failed with a business
 *    exception: running it again would meet the same data (docs/decisions/exception-types.md).
 *  - stopped → nothing.
 *
 * Engine-made jobs do not consume the tenant's monthly quota (docs/decisions/dispatch.md).
 */
export interface ProcessFollowUpSettings {
  auto_retry: boolean;
  max_retries: number;
  retry_delay_seconds: number;
  on_success_trigger_process_id: string | null;
}

export async function createFollowUps(tx: Queryable, job: JobRow): Promise<DispatchJobRef[]> {
  if (job.status === 'completed') return chainJob(tx, job);
  if (job.status === 'failed' && job.exception_type === 'business') return [];
  if ((job.status === 'failed' || job.status === 'timed_out') && job.source !== 'queue') return retryJob(tx, job);
  return [];
}

/** What the dispatch engine needs of a job it puts on its machine's queue. */
export function dispatchRefOf(j: JobRow): DispatchJobRef {
  return { id: j.id, tenant_id: j.tenant_id, machine_id: j.machine_id, priority: j.priority, sla_due_at: j.sla_due_at, not_before: j.not_before };
}

async function chainJob(tx: Queryable, job: JobRow): Promise<DispatchJobRef[]> {
  const [next] = await tx<Array<{ id: string; sla_deadline_minutes: number | null }>>`
    select n.id, n.sla_deadline_minutes
    from processes p join processes n on n.id = p.on_success_trigger_process_id
    where p.id = ${job.process_id} and n.tenant_id = ${job.tenant_id} and n.is_active`;
  if (!next) return [];
  const machineId = await pickMachineForFollowUp(tx, job.tenant_id, job.machine_id);
  if (!machineId) return [];
  const created = await insertJob(tx, {
    tenantId: job.tenant_id,
    processId: next.id,
    machineId,
    priority: job.priority,
    inputData: job.output_data ?? null,
    source: 'chain',
    slaDeadlineMinutes: next.sla_deadline_minutes,
    parentJobId: job.id,
  });
  return created ? [dispatchRefOf(created)] : [];
}

async function retryJob(tx: Queryable, job: JobRow): Promise<DispatchJobRef[]> {
  const [p] = await tx<Array<ProcessFollowUpSettings & { sla_deadline_minutes: number | null; not_before: Date }>>`
    select auto_retry, max_retries, retry_delay_seconds, on_success_trigger_process_id, sla_deadline_minutes,
           now() + make_interval(secs => retry_delay_seconds) as not_before
    from processes where id = ${job.process_id} and is_active`;
  if (!p || !p.auto_retry || job.retry_count >= p.max_retries) return [];
  const machineId = await pickMachineForFollowUp(tx, job.tenant_id, job.machine_id);
  if (!machineId) return [];
  const created = await insertRetryOf(tx, job, machineId, {
    slaDeadlineMinutes: p.sla_deadline_minutes, notBefore: p.retry_delay_seconds > 0 ? p.not_before : null,
  });
  return created ? [dispatchRefOf(created)] : [];
}

/**
 * The retry of an ended job, automatic or asked for (bulk/steps.ts): same process, input and
 * priority, source `retry`, retry_count + 1, `parent_job_id` the retried job, on `machineId`.
 */
export function insertRetryOf(
  tx: Queryable,
  job: JobRow,
  machineId: string,
  opts: { slaDeadlineMinutes: number | null; notBefore?: Date | null },
): Promise<JobRow | null> {
  return insertJob(tx, {
    tenantId: job.tenant_id,
    processId: job.process_id,
    machineId,
    priority: job.priority,
    inputData: job.input_data,
    source: 'retry',
    slaDeadlineMinutes: opts.slaDeadlineMinutes,
    parentJobId: job.id,
    retryCount: job.retry_count + 1,
    notBefore: opts.notBefore ?? null,
  });
}
