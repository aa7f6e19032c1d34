import type { Queryable } from '../db/sql';
import { itemRetryOutcomes } from '../metrics/domain';
import type { QueueItemStatus } from './schemas';
import { QUEUE_ITEM_TRANSITIONS as T, queueItemStatusSql as statusSql } from './transitions';

/**
 * Retries of failed and dead-letter items: the engine's retry policy over application failures,
 * and an operator's retry of ended items (the bulk action `retry`, business failures only when
 * asked for). The re-drive with fresh retries is with the review decisions (review.ts).
 */

/** How the retry policy's statements and index (migration 0031) tell the failures they may move. */
const RETRYABLE_FAILURE_SQL = "exception_type is distinct from 'business'";

/**
 * The retry policy (docs/decisions/dispatch.md): a failed item with retry_count < the queue's max_retries goes
 * back to `new` with retry_count + 1; otherwise `dead_letter`. One set statement over the
 * application failures of one queue (or of all queues), through queue_items_failed_idx: business
 * failures are final and never read here. Returns the queues where items became ready.
 */
export async function applyItemRetryPolicy(sql: Queryable, queueId: string | null = null): Promise<{ retried: number; deadLettered: number; readyQueues: string[] }> {
  const rows = await sql<{ queue_id: string; status: QueueItemStatus }[]>`
    update queue_items qi
       set status = case when qi.retry_count < q.max_retries then ${statusSql(sql, T.retry.to)} else ${statusSql(sql, T.exhaust.to)} end,
           retry_count = case when qi.retry_count < q.max_retries then qi.retry_count + 1 else qi.retry_count end,
           job_id = null, updated_at = now()
      from queues q
     where qi.status = ${statusSql(sql, T.retry.from)} and qi.${sql.unsafe(RETRYABLE_FAILURE_SQL)} and q.id = qi.queue_id
       ${queueId ? sql`and qi.queue_id = ${queueId}` : sql``}
    returning qi.queue_id, qi.status`;
  const retried = rows.filter((r) => r.status === T.retry.to);
  if (retried.length) itemRetryOutcomes.inc({ outcome: 'retried' }, retried.length);
  if (rows.length > retried.length) itemRetryOutcomes.inc({ outcome: 'dead_letter' }, rows.length - retried.length);
  return {
    retried: retried.length,
    deadLettered: rows.length - retried.length,
    readyQueues: [...new Set(retried.map((r) => r.queue_id))],
  };
}

/**
 * dead_letter → new for one more attempt (retry_count kept): the bulk action `retry`; with
 * `business`, business failures too (failed → new, retry_count kept), only when asked for.
 */
export async function retryEndedItems(
  sql: Queryable,
  q: { tenantId: string; queueId: string; itemIds: readonly string[]; business: boolean },
): Promise<number> {
  const res = await sql`
    update queue_items set status = ${statusSql(sql, T.retryDeadLetter.to)}, job_id = null, updated_at = now()
    where queue_id = ${q.queueId} and tenant_id = ${q.tenantId} and id = any(${q.itemIds as string[]}::uuid[])
      and (status = ${statusSql(sql, T.retryDeadLetter.from)}
           ${q.business ? sql`or (status = ${statusSql(sql, T.retryBusiness.from)} and exception_type = 'business')` : sql``})`;
  return res.count;
}
