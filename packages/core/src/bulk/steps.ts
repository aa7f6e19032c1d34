import type { Queryable } from '../db/sql';
import { recordEffect, recordEffects, jobsCreatedEffects } from '../outbox/effects';
import { retryEndedItems } from '../queue-items/retry';
import { redriveDeadLetterItems } from '../queue-items/review';
import type { JobRow } from '../jobs/repo';
import { stopActiveJob } from '../jobs/service';
import { pickMachineForFollowUp } from '../machines/heartbeat';
import { consumeExecution } from '../tenants/quota';
import type { DispatchJobRef } from '../dispatch/port';
import { dispatchRefOf, insertRetryOf } from '../dispatch/follow-ups';
import { ITEM_ACTION_STATUSES, JOB_ACTION_STATUSES, type ItemActionName, type JobActionName } from './schemas';

/**
 * What one chunk of a bulk action does to the rows it locked, in the chunk's transaction. Status
 * changes go through the state machines (queue-items/transitions.ts, jobs/transitions.ts), and
 * each step re-checks the status it needs, so a row that moved on since it was counted is gone
 * through without being changed. Returns how many rows changed.
 */
export interface ChunkContext {
  tenantId: string;
  queueId: string | null;
  params: { priority?: number; postpone?: string | null; include_business?: boolean };
}

export async function applyItemChunk(tx: Queryable, action: ItemActionName, c: ChunkContext, ids: string[]): Promise<number> {
  const queueId = c.queueId!;
  const statuses = ITEM_ACTION_STATUSES[action] as readonly string[];
  const editable = statusIn(tx, statuses);
  let changed: number;
  switch (action) {
    case 'redrive':
      changed = await redriveDeadLetterItems(tx, { tenantId: c.tenantId, queueId, itemIds: ids });
      break;
    case 'retry':
      changed = await retryEndedItems(tx, { tenantId: c.tenantId, queueId, itemIds: ids, business: c.params.include_business === true });
      break;
    case 'delete':
      changed = (await tx`delete from queue_items where id = any(${ids}::uuid[]) and queue_id = ${queueId} and ${editable}`).count;
      break;
    case 'set_priority':
      changed = (await tx`
        update queue_items set priority = ${c.params.priority!}, updated_at = now()
        where id = any(${ids}::uuid[]) and queue_id = ${queueId} and ${editable}`).count;
      break;
    case 'postpone':
      changed = (await tx`
        update queue_items set postpone = ${c.params.postpone ?? null}::timestamptz, updated_at = now()
        where id = any(${ids}::uuid[]) and queue_id = ${queueId} and ${editable}`).count;
      break;
  }
  // items back to `new` (or sooner due): the queue's consumers take them now
  if (changed > 0 && action !== 'delete') await recordEffect(tx, { kind: 'queue-ready', queue_id: queueId, tenant_id: c.tenantId });
  return changed;
}

function statusIn(tx: Queryable, statuses: readonly string[]) {
  return tx`status = any(${statuses as string[]}::text[])`;
}

export async function applyJobChunk(tx: Queryable, action: JobActionName, c: ChunkContext, ids: string[]): Promise<number> {
  const jobs = await tx<JobRow[]>`select * from jobs where id = any(${ids}::uuid[]) and tenant_id = ${c.tenantId} order by created_at, id`;
  let changed = 0;
  if (action === 'stop') {
    for (const job of jobs) if (await stopActiveJob(tx, c.tenantId, job)) changed++;
    return changed;
  }
  const created: DispatchJobRef[] = [];
  for (const job of jobs) {
    const ref = await retryByHand(tx, job);
    if (ref) created.push(ref);
  }
  await recordEffects(tx, jobsCreatedEffects(created));
  return created.length;
}

/**
 * A new pending job for an ended one, as the automatic retry makes it (dispatch/follow-ups.ts):
 * same process, input and priority, retry_count + 1, `parent_job_id` naming the retried job, on
 * its machine unless that one is offline. Not for a queue's consumer run (its items have the
 * queue's retry policy), a job of a deactivated process, nor one already retried. A person asked
 * for it, so unlike the engine's own follow-ups it is an execution of the monthly quota: once the
 * quota is used up, the rest are gone through without being retried.
 */
async function retryByHand(tx: Queryable, job: JobRow): Promise<DispatchJobRef | null> {
  if (!(JOB_ACTION_STATUSES.retry as readonly string[]).includes(job.status) || job.source === 'queue') return null;
  const [p] = await tx<Array<{ sla_deadline_minutes: number | null }>>`
    select sla_deadline_minutes from processes where id = ${job.process_id} and tenant_id = ${job.tenant_id} and is_active`;
  if (!p) return null;
  const [retried] = await tx`select 1 from jobs where parent_job_id = ${job.id} and source = 'retry' limit 1`;
  if (retried) return null;
  const machineId = await pickMachineForFollowUp(tx, job.tenant_id, job.machine_id);
  if (!machineId) return null;
  if (!(await consumeExecution(tx, job.tenant_id))) return null;
  const row = await insertRetryOf(tx, job, machineId, { slaDeadlineMinutes: p.sla_deadline_minutes });
  return row ? dispatchRefOf(row) : null;
}
