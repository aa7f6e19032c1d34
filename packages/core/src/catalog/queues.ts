import type { Queryable } from '../db/sql';
import { ConflictError, NotFoundError } from '../errors';
import { es } from '../messages/server-messages';
import { validate } from '../validation/validate';
import { QueueCreate, QueueUpdate, type CatalogListQuery } from './schemas';
import { assertSameTenant, presentColumns, uniqueName } from './record-rules';
import { iso } from '../validation/iso-date';
import { pageWindow, toPage, type Page } from './paging';
import { QUEUE_ITEM_STATUSES, type QueueItemStatus } from '../queue-items/schemas';

/** A work queue of a tenant (the public API names only `max_retries`; the rest is ours). */
export interface QueueRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  max_retries: number;
  consumer_process_id: string | null;
  max_consumers: number;
  is_active: boolean;
  is_paused: boolean;
  retention_completed_days: number;
  retention_failed_days: number;
  retention_action: 'delete' | 'archive';
  /** no two items of the queue share a reference (docs/decisions/unique-references.md) */
  unique_references: boolean;
  created_at: Date;
  updated_at: Date;
}

export type QueueItemCounts = Record<QueueItemStatus | 'total', number>;

export function emptyItemCounts(): QueueItemCounts {
  return { total: 0, new: 0, in_progress: 0, pending_review: 0, completed: 0, failed: 0, dead_letter: 0 };
}

/**
 * Per-status item counts of some queues, read from the trigger-maintained `queue_item_counts`
 * shards (a handful of rows per queue, never a scan of queue_items).
 */
export async function loadQueueItemCounts(sql: Queryable, queueIds: readonly string[]): Promise<Map<string, QueueItemCounts>> {
  const out = new Map<string, QueueItemCounts>(queueIds.map((id) => [id, emptyItemCounts()]));
  if (queueIds.length === 0) return out;
  const rows = await sql<{ queue_id: string; status: string; n: number }[]>`
    select queue_id, status, sum(n)::bigint as n from queue_item_counts
    where queue_id = any(${queueIds as string[]}::uuid[]) group by queue_id, status`;
  for (const r of rows) {
    const counts = out.get(r.queue_id)!;
    if ((QUEUE_ITEM_STATUSES as readonly string[]).includes(r.status)) counts[r.status as keyof QueueItemCounts] = r.n;
    counts.total += r.n;
  }
  return out;
}

export function toQueueResponse(row: QueueRow, counts: QueueItemCounts = emptyItemCounts()) {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    description: row.description,
    max_retries: row.max_retries,
    consumer_process_id: row.consumer_process_id,
    max_consumers: row.max_consumers,
    is_active: row.is_active,
    is_paused: row.is_paused,
    retention_completed_days: row.retention_completed_days,
    retention_failed_days: row.retention_failed_days,
    retention_action: row.retention_action,
    unique_references: row.unique_references,
    item_counts: counts,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function createQueue(sql: Queryable, tenantId: string, input: unknown): Promise<QueueRow> {
  const body = validate(QueueCreate, input);
  await assertSameTenant(sql, 'processes', tenantId, body.consumer_process_id, 'consumer_process_id');
  return uniqueName(sql, 'queue', body.name, async (q) => {
    const [row] = await q<QueueRow[]>`
      insert into queues (tenant_id, name, description, max_retries, consumer_process_id, max_consumers, is_active, is_paused,
                          retention_completed_days, retention_failed_days, retention_action, unique_references)
      values (${tenantId}, ${body.name}, ${body.description ?? null}, ${body.max_retries ?? 3},
              ${body.consumer_process_id ?? null}, ${body.max_consumers ?? 1}, ${body.is_active ?? true}, ${body.is_paused ?? false},
              ${body.retention_completed_days ?? 30}, ${body.retention_failed_days ?? 90}, ${body.retention_action ?? 'delete'},
              ${body.unique_references ?? false})
      returning *`;
    return row!;
  });
}

export async function findQueue(sql: Queryable, tenantId: string, id: string): Promise<QueueRow | null> {
  const [row] = await sql<QueueRow[]>`select * from queues where id = ${id} and tenant_id = ${tenantId}`;
  return row ?? null;
}

/** Another tenant's queue answers exactly like a missing one. */
export async function getQueue(sql: Queryable, tenantId: string, id: string): Promise<QueueRow> {
  const row = await findQueue(sql, tenantId, id);
  if (!row) throw new NotFoundError();
  return row;
}

export async function findQueueByName(sql: Queryable, tenantId: string, name: string): Promise<QueueRow | null> {
  const [row] = await sql<QueueRow[]>`select * from queues where tenant_id = ${tenantId} and name = ${name}`;
  return row ?? null;
}

export async function listQueues(sql: Queryable, tenantId: string, query: Partial<CatalogListQuery> = {}): Promise<Page<QueueRow>> {
  const { page, limit, offset } = pageWindow(query);
  const active = query.is_active ?? null;
  const where = sql`tenant_id = ${tenantId} and (${active}::boolean is null or is_active = ${active})`;
  const [rows, [count]] = await Promise.all([
    sql<QueueRow[]>`select * from queues where ${where} order by name, id limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from queues where ${where}`,
  ]);
  return toPage(rows, page, limit, count!.total);
}

export async function updateQueue(sql: Queryable, tenantId: string, id: string, patch: unknown): Promise<QueueRow> {
  const body = validate(QueueUpdate, patch);
  if ('consumer_process_id' in body) {
    await assertSameTenant(sql, 'processes', tenantId, body.consumer_process_id, 'consumer_process_id');
  }
  const cols = presentColumns(body, [
    'name', 'description', 'max_retries', 'consumer_process_id', 'max_consumers', 'is_active', 'is_paused',
    'retention_completed_days', 'retention_failed_days', 'retention_action', 'unique_references',
  ]);
  return uniqueName(sql, 'queue', body.name, async (q) => {
    // the setting as it was, locked: two changes of it cannot interleave their index builds
    const [before] = body.unique_references === undefined
      ? [undefined]
      : await q<Array<{ unique_references: boolean }>>`
          select unique_references from queues where id = ${id} and tenant_id = ${tenantId} for update`;
    const [row] = await q<QueueRow[]>`
      update queues set ${q(cols)}, updated_at = now()
      where id = ${id} and tenant_id = ${tenantId} returning *`;
    if (!row) throw new NotFoundError();
    if (before && before.unique_references !== row.unique_references) await indexReferences(q, row.id, row.unique_references);
    return row;
  });
}

/**
 * Fills or empties a queue's rows of `queue_item_references` as its setting turns on or off, in
 * the transaction that changes the setting. Turning it on over items that already share a
 * reference is refused (409, with how many): the rule would not hold for them.
 */
async function indexReferences(sql: Queryable, queueId: string, on: boolean): Promise<void> {
  if (!on) {
    await sql`delete from queue_item_references where queue_id = ${queueId}`;
    return;
  }
  const [dup] = await sql<Array<{ refs: number; items: number }>>`
    select count(*)::int as refs, coalesce(sum(n), 0)::int as items from (
      select count(*) as n from queue_items where queue_id = ${queueId} and reference is not null
      group by reference having count(*) > 1) d`;
  if (dup!.refs > 0) {
    throw new ConflictError(es.queues.duplicateReferencesHeld(dup!.refs, dup!.items), {
      field: 'unique_references', duplicate_references: dup!.refs, duplicate_items: dup!.items,
    });
  }
  await sql`
    insert into queue_item_references (queue_id, reference, item_id)
    select queue_id, reference, id from queue_items where queue_id = ${queueId} and reference is not null`;
}

/** POST …/pause and …/resume: sets `is_paused` (a queue already so is answered as it is). */
export async function setQueuePaused(sql: Queryable, tenantId: string, id: string, paused: boolean): Promise<QueueRow> {
  const [row] = await sql<QueueRow[]>`
    update queues set is_paused = ${paused}, updated_at = case when is_paused = ${paused} then updated_at else now() end
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}

/** An inactive queue keeps its items (readable, never lost); whether it still accepts items is the item API's call. */
export async function deactivateQueue(sql: Queryable, tenantId: string, id: string): Promise<QueueRow> {
  const [row] = await sql<QueueRow[]>`
    update queues set is_active = false, updated_at = now()
    where id = ${id} and tenant_id = ${tenantId} returning *`;
  if (!row) throw new NotFoundError();
  return row;
}
