import { randomUUID } from 'node:crypto';
import type { Queryable, Sql } from '../db/sql';
import { Batcher, isPool } from '../db/call-batcher';
import { queueReadyEffectOfInserted } from '../outbox/effects';
import { itemAddedEventsOfInserted } from '../events/item-added';
import { findQueueByName, type QueueRow } from '../catalog/queues';
import {
  CHOSEN_ON_INSERT, freshItemRow, insertQueueItem, ITEM_STATE_COLUMNS, payloadsOfInserted, type ChosenOnInsert, type NewQueueItem, type QueueItemRow, type QueueRef,
} from './repo';

/**
 * The hot path of `POST …/items` under load (BENCHMARKS.md, B1): concurrent requests share their
 * Postgres round trips. Queue look-ups of one event-loop turn become one SELECT, and single-item
 * inserts become one multi-row INSERT (one parse, one commit, one run of the counter trigger);
 * an insert addressed by queue name finds its queue in the same statement (no look-up first).
 * Each request still gets exactly its own row or its own error (see Batcher); reads are never
 * cached, so a deactivated queue answers 404 at once. Each statement records one `queue-ready`
 * effect per queue it filled, in the statement itself (outbox/effects.ts).
 */
interface Batchers {
  queues: Batcher<{ tenantId: string; name: string }, QueueRow | null>;
  items: Batcher<{ queue: QueueRef; item: NewQueueItem }, QueueItemRow>;
  itemsByName: Batcher<ByName, QueueItemRow | null>;
}

interface ByName {
  tenantId: string;
  queueName: string;
  item: NewQueueItem;
}

const bySql = new WeakMap<Sql, Batchers>();

/*
 * Fewer, larger batches cost less CPU per item (one statement, one commit, one run of the counter
 * trigger) than more, smaller ones, and the machine is CPU-bound long before Postgres runs out of
 * connections. Look-ups and inserts by queue keep two in flight, so a slow batch does not stall
 * everything behind it; the insert by name — the whole of a `POST …/items` under load — keeps one:
 * larger batches, less Postgres CPU per item and fewer socket writes from the API, for a wait of
 * at most one batch (measured in BENCHMARKS.md, B1).
 */

function batchers(sql: Sql): Batchers {
  let b = bySql.get(sql);
  if (!b) {
    b = {
      queues: new Batcher({
        runBatch: (keys) => findQueuesByNames(sql, keys),
        runOne: (k) => findQueueByName(sql, k.tenantId, k.name),
        maxBatch: 200,
        maxInFlight: 2,
      }),
      items: new Batcher({
        runBatch: (inputs) => insertQueueItemsBatch(sql, inputs),
        runOne: (i) => insertQueueItem(sql, i.queue, i.item),
        maxBatch: 200,
        maxInFlight: 2,
      }),
      itemsByName: new Batcher({
        runBatch: (inputs) => insertQueueItemsByNameBatch(sql, inputs),
        runOne: (i) => insertQueueItemByName(sql, i),
        maxBatch: 200,
        maxInFlight: 1,
      }),
    };
    bySql.set(sql, b);
  }
  return b;
}

export function findQueueByNameBatched(sql: Queryable, tenantId: string, name: string): Promise<QueueRow | null> {
  return isPool(sql) ? batchers(sql).queues.run({ tenantId, name }) : findQueueByName(sql, tenantId, name);
}

export function insertQueueItemBatched(sql: Queryable, queue: QueueRef, item: NewQueueItem): Promise<QueueItemRow> {
  return isPool(sql) ? batchers(sql).items.run({ queue, item }) : insertQueueItem(sql, queue, item);
}

/**
 * Inserts an item into the caller's tenant's active queue of that name; null when there is no
 * such queue (nothing is written then).
 */
export function insertQueueItemByNameBatched(sql: Sql, tenantId: string, queueName: string, item: NewQueueItem): Promise<QueueItemRow | null> {
  return batchers(sql).itemsByName.run({ tenantId, queueName, item });
}

async function findQueuesByNames(sql: Sql, keys: Array<{ tenantId: string; name: string }>): Promise<Array<QueueRow | null>> {
  const wanted = [...new Map(keys.map((k) => [`${k.tenantId}\u0000${k.name}`, { tenant_id: k.tenantId, name: k.name }])).values()];
  const rows = await sql<QueueRow[]>`
    select q.* from queues q
    join jsonb_to_recordset(${JSON.stringify(wanted)}::text::jsonb) as k(tenant_id uuid, name text)
      on q.tenant_id = k.tenant_id and q.name = k.name`;
  const found = new Map(rows.map((r) => [`${r.tenant_id}\u0000${r.name}`, r]));
  return keys.map((k) => found.get(`${k.tenantId}\u0000${k.name}`) ?? null);
}

/** An item's own columns in a batch's JSON rows (the INSERT reads them by name). */
function itemRecord(item: NewQueueItem): NewQueueItem {
  return { priority: item.priority, reference: item.reference, deadline: item.deadline, postpone: item.postpone, data: item.data };
}

/** A batch's rows as the table `src`: one JSON parameter, parsed once, in their order `n`. */
function batchSource(sql: Sql, records: object[]) {
  return sql`src as materialized (
      select (e.value->>'id')::uuid as id, e.n, e.value, e.value->'data' as data
      from jsonb_array_elements(${JSON.stringify(records)}::text::jsonb) with ordinality as e(value, n))`;
}

/** What an INSERT `ins` of items brings along in the same statement: payloads, events, the queue's nudge; it answers the chosen columns. */
function afterInsert(sql: Sql) {
  return sql`${payloadsOfInserted(sql)},
    ${itemAddedEventsOfInserted(sql, 'item')},
    ${queueReadyEffectOfInserted(sql)}
    select ${sql(CHOSEN_ON_INSERT)} from ins`;
}

/**
 * One INSERT for items of any queues: the rows travel as one JSON array (one parameter, one
 * parse whatever the count) and keep their order; ids are made here to give each caller its row.
 */
async function insertQueueItemsBatch(sql: Sql, inputs: Array<{ queue: QueueRef; item: NewQueueItem }>): Promise<QueueItemRow[]> {
  const records = inputs.map(({ queue, item }) => ({
    id: randomUUID(),
    tenant_id: queue.tenant_id,
    queue_id: queue.id,
    ...itemRecord(item),
  }));
  const rows = await sql<ChosenOnInsert[]>`
    with ${batchSource(sql, records)},
    ins as (
      insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone)
      select src.id, (src.value->>'tenant_id')::uuid, (src.value->>'queue_id')::uuid, (src.value->>'priority')::int,
             src.value->>'reference', (src.value->>'deadline')::timestamptz, (src.value->>'postpone')::timestamptz
      from src
      order by src.n
      returning ${sql(CHOSEN_ON_INSERT)}, tenant_id),
    ${afterInsert(sql)}`;
  // every row is inserted (the queues were checked); a missing one fails the batch (Batcher)
  return freshRows(records, inputs, rows).filter((r): r is QueueItemRow => r !== null);
}

async function insertQueueItemsByNameBatch(sql: Sql, inputs: ByName[]): Promise<Array<QueueItemRow | null>> {
  const records = inputs.map(({ tenantId, queueName, item }) => ({
    id: randomUUID(),
    tenant_id: tenantId,
    queue_name: queueName,
    ...itemRecord(item),
  }));
  const rows = await sql<ChosenOnInsert[]>`
    with ${batchSource(sql, records)},
    ins as (
      insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone)
      select src.id, q.tenant_id, q.id, (src.value->>'priority')::int, src.value->>'reference',
             (src.value->>'deadline')::timestamptz, (src.value->>'postpone')::timestamptz
      from src
      join queues q on q.tenant_id = (src.value->>'tenant_id')::uuid and q.name = src.value->>'queue_name' and q.is_active
      order by src.n
      returning ${sql(CHOSEN_ON_INSERT)}, tenant_id),
    ${afterInsert(sql)}`;
  return freshRows(records, inputs, rows);
}

/** Each input's whole row, in input order, from what the INSERT returned; null where none was. */
function freshRows(
  records: Array<{ id: string; tenant_id: string }>,
  inputs: Array<{ item: NewQueueItem }>,
  returned: ChosenOnInsert[],
): Array<QueueItemRow | null> {
  const byId = new Map(returned.map((r) => [r.id, r]));
  return records.map((r, i) => {
    const chosen = byId.get(r.id);
    return chosen ? freshItemRow(r.tenant_id, inputs[i]!.item, chosen) : null;
  });
}

async function insertQueueItemByName(sql: Sql, { tenantId, queueName, item }: ByName): Promise<QueueItemRow | null> {
  const [row] = await sql<QueueItemRow[]>`
    with src as (select gen_random_uuid() as id, ${sql.json(item.data as never)}::jsonb as data),
    ins as (
      insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone)
      select src.id, q.tenant_id, q.id, ${item.priority}, ${item.reference},
             ${item.deadline}::text::timestamptz, ${item.postpone}::text::timestamptz
      from src, queues q where q.tenant_id = ${tenantId} and q.name = ${queueName} and q.is_active
      returning ${sql(ITEM_STATE_COLUMNS)}),
    ${payloadsOfInserted(sql)},
    ${itemAddedEventsOfInserted(sql, 'item')},
    ${queueReadyEffectOfInserted(sql)}
    select ins.*, src.data from ins join src on src.id = ins.id`;
  return row ?? null;
}
