import { Type, type Static } from '@sinclair/typebox';
import type { Queryable, Sql } from '../db/sql';
import type { Logger } from '../logger';
import { ConflictError, NotFoundError } from '../errors';
import { recordAudit } from '../audit/audit';
import { Uuid } from '../validation/formats';
import { QI_COLUMNS, type QueueItemRow } from './repo';
import { PAYLOAD_OF_QI_SQL, QUEUE_ITEM_TRANSITIONS as T, queueItemStatusSql as statusSql } from './transitions';
import { recordEffect } from '../outbox/effects';
import { es } from '../messages/server-messages';

/**
 * Human review and dead-letter re-drive (docs/decisions/dispatch.md "Queue items"): their guarded
 * transitions (approve, reject, re-drive; from the table of queue-items/transitions.ts) and, for
 * the management API (admin access token), each decision as its transition and an audit row in
 * one transaction, with the effect on the dispatch engine (outbox/effects.ts).
 */
export const QueueItemPathParams = Type.Object({ queue_id: Uuid(), item_id: Uuid() });
export type QueueItemPathParams = Static<typeof QueueItemPathParams>;
export const QueuePathParams = Type.Object({ queue_id: Uuid() });
export type QueuePathParams = Static<typeof QueuePathParams>;

export const ApproveItemBody = Type.Object(
  { comment: Type.Optional(Type.String({ maxLength: 1000, description: 'Free text kept in the audit log' })) },
  { additionalProperties: false },
);
export const RejectItemBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'Recorded as the item error_message' })) },
  { additionalProperties: false },
);
export const RedriveBody = Type.Object(
  {
    item_ids: Type.Optional(Type.Array(Uuid(), {
      minItems: 1, maxItems: 1000, uniqueItems: true,
      description: 'Dead-letter items to re-drive; omitted = every dead-letter item of the queue',
    })),
  },
  { additionalProperties: false },
);
export type RedriveBody = Static<typeof RedriveBody>;
export const RedriveResponse = Type.Object({ redriven: Type.Integer({ minimum: 0 }) });

export interface ReviewActor {
  tenantId: string;
  userId: string;
  /** recorded as reviewed_by */
  reviewer: string;
  requestId?: string | null;
  ip?: string | null;
}

export interface ReviewDeps {
  sql: Sql;
  logger?: Logger;
}

export interface ReviewDecision {
  tenantId: string;
  queueId: string;
  itemId: string;
  /** who decided (recorded as reviewed_by) */
  reviewer: string;
  /** for a rejection: recorded as error_message */
  reason?: string | null;
}

/** Human review, approved: `pending_review → new`. Null when the item is not pending review. */
export async function approveQueueItem(sql: Queryable, d: ReviewDecision): Promise<QueueItemRow | null> {
  const [row] = await sql<QueueItemRow[]>`
    update queue_items qi set status = ${statusSql(sql, T.approve.to)}, reviewed_by = ${d.reviewer}, reviewed_at = now(), job_id = null, updated_at = now()
    where id = ${d.itemId} and queue_id = ${d.queueId} and tenant_id = ${d.tenantId} and status = ${statusSql(sql, T.approve.from)}
    returning ${sql(QI_COLUMNS)}, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data`;
  return row ?? null;
}

/** Human review, rejected: `pending_review → failed`, a business failure (final, never retried by the policy). */
export async function rejectQueueItem(sql: Queryable, d: ReviewDecision): Promise<QueueItemRow | null> {
  const [row] = await sql<QueueItemRow[]>`
    update queue_items qi set status = ${statusSql(sql, T.reject.to)}, reviewed_by = ${d.reviewer}, reviewed_at = now(),
           error_message = ${d.reason ?? es.queues.rejectedInReview}, exception_type = 'business', updated_at = now()
    where id = ${d.itemId} and queue_id = ${d.queueId} and tenant_id = ${d.tenantId} and status = ${statusSql(sql, T.reject.from)}
    returning ${sql(QI_COLUMNS)}, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data`;
  return row ?? null;
}

/**
 * Operator re-drive: `dead_letter → new` for the given items (or every dead-letter item of the
 * queue when `itemIds` is null), with retry_count reset so the retry policy starts afresh.
 */
export async function redriveDeadLetterItems(
  sql: Queryable,
  q: { tenantId: string; queueId: string; itemIds: readonly string[] | null },
): Promise<number> {
  const res = await sql`
    update queue_items set status = ${statusSql(sql, T.redrive.to)}, retry_count = 0, job_id = null, updated_at = now()
    where queue_id = ${q.queueId} and tenant_id = ${q.tenantId} and status = ${statusSql(sql, T.redrive.from)}
      ${q.itemIds ? sql`and id = any(${q.itemIds as string[]}::uuid[])` : sql``}`;
  return res.count;
}

/** The tenant's queue (any, active or not: a deactivated queue's items can still be reviewed). */
export async function getTenantQueue(sql: Sql, tenantId: string, queueId: string): Promise<{ id: string; tenant_id: string; name: string }> {
  const [q] = await sql<Array<{ id: string; tenant_id: string; name: string }>>`
    select id, tenant_id, name from queues where id = ${queueId} and tenant_id = ${tenantId}`;
  if (!q) throw new NotFoundError(es.queues.queueNotFound);
  return q;
}

async function itemStatus(sql: Sql, queueId: string, itemId: string): Promise<string> {
  const [row] = await sql<Array<{ status: string }>>`select status from queue_items where id = ${itemId} and queue_id = ${queueId}`;
  if (!row) throw new NotFoundError(es.queues.itemNotFound);
  return row.status;
}

/**
 * approve: pending_review → new (the item is processed again); reject: pending_review → failed
 * (the queue's retry policy then applies). 404 for a queue or item outside the tenant, 409 when
 * the item is not pending review.
 */
export async function reviewQueueItem(
  deps: ReviewDeps,
  actor: ReviewActor,
  target: { queueId: string; itemId: string },
  decision: { approve: true; comment?: string } | { approve: false; reason?: string },
): Promise<QueueItemRow> {
  const queue = await getTenantQueue(deps.sql, actor.tenantId, target.queueId);
  const row = await deps.sql.begin(async (tx) => {
    const d = { tenantId: actor.tenantId, queueId: queue.id, itemId: target.itemId, reviewer: actor.reviewer };
    const updated = decision.approve ? await approveQueueItem(tx, d) : await rejectQueueItem(tx, { ...d, reason: decision.reason ?? null });
    if (!updated) return null;
    await recordAudit(tx, {
      tenantId: actor.tenantId,
      actorType: 'user',
      actorId: actor.userId,
      action: decision.approve ? 'approve_queue_item' : 'reject_queue_item',
      source: 'api',
      resourceType: 'queue_item',
      resourceId: updated.id,
      details: decision.approve ? { queue_id: queue.id, comment: decision.comment ?? null } : { queue_id: queue.id, reason: decision.reason ?? null },
      requestId: actor.requestId ?? null,
      ip: actor.ip ?? null,
    });
    await recordEffect(tx, decision.approve
      ? { kind: 'queue-ready', queue_id: queue.id, tenant_id: queue.tenant_id }
      : { kind: 'items-failed', queue_id: queue.id });
    return updated;
  });
  if (!row) {
    const status = await itemStatus(deps.sql, queue.id, target.itemId);
    throw new ConflictError(es.queues.itemNotPendingReview(status), { status });
  }
  return row;
}

/** dead_letter → new for the given items (or all of the queue), with retry_count reset. */
export async function redriveQueueItems(deps: ReviewDeps, actor: ReviewActor, queueId: string, body: () => RedriveBody): Promise<number> {
  const queue = await getTenantQueue(deps.sql, actor.tenantId, queueId);
  const itemIds = body().item_ids ?? null;
  const n = await deps.sql.begin(async (tx) => {
    const count = await redriveDeadLetterItems(tx, { tenantId: actor.tenantId, queueId: queue.id, itemIds });
    await recordAudit(tx, {
      tenantId: actor.tenantId,
      actorType: 'user',
      actorId: actor.userId,
      action: 'redrive_queue_items',
      source: 'api',
      resourceType: 'queue',
      resourceId: queue.id,
      details: { redriven: count, item_ids: itemIds ? itemIds.length : 'all' },
      requestId: actor.requestId ?? null,
      ip: actor.ip ?? null,
    });
    if (count > 0) await recordEffect(tx, { kind: 'queue-ready', queue_id: queue.id, tenant_id: queue.tenant_id });
    return count;
  });
  return n;
}
