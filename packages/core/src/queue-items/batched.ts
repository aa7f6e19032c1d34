import { randomUUID } from 'node:crypto';
import type { Queryable, Sql } from '../db/sql';
import { Batcher } from '../db/batcher';
import { findQueueByName, type QueueRow } from '../catalog/queues';
import { ITEM_COLUMNS, insertQueueItem, type NewQueueItem, type QueueItemRow, type QueueRef } from './repo';

/**
 * The hot path of `POST …/items` under load (BENCHMARKS.md, B1): concurrent requests share their
 * Postgres round trips. Queue look-ups of one event-loop turn become one SELECT, and single-item
 * inserts become one multi-row INSERT (one parse, one commit, one run of the counter trigger).
 * Each request still gets exactly its own row or its own error (see Batcher); reads are never
 * cached, so a deactivated queue answers 404 at once.
 */
interface Batchers {
  queues: Batcher<{ tenantId: string; name: string }, QueueRow | null>;
  items: Batcher<{ queue: QueueRef; item: NewQueueItem }, QueueItemRow>;
}

const bySql = new WeakMap<Sql, Batchers>();

/** Only the pool batches: a transaction's statements must stay on it, in order. */
function isPool(sql: Queryable): sql is Sql {
  return typeof (sql as Sql).begin === 'function';
}

function batchers(sql: Sql): Batchers {
  let b = bySql.get(sql);
  if (!b) {
    b = {
      queues: new Batcher({
        runBatch: (keys) => findQueuesByNames(sql, keys),
        runOne: (k) => findQueueByName(sql, k.tenantId, k.name),
        maxBatch: 200,
      }),
      items: new Batcher({
        runBatch: (inputs) => insertQueueItemsBatch(sql, inputs),
        runOne: (i) => insertQueueItem(sql, i.queue, i.item),
        maxBatch: 200,
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

async function findQueuesByNames(sql: Sql, keys: Array<{ tenantId: string; name: string }>): Promise<Array<QueueRow | null>> {
  const wanted = [...new Map(keys.map((k) => [`${k.tenantId}\u0000${k.name}`, { tenant_id: k.tenantId, name: k.name }])).values()];
  const rows = await sql<QueueRow[]>`
    select q.* from queues q
    join jsonb_to_recordset(${JSON.stringify(wanted)}::text::jsonb) as k(tenant_id uuid, name text)
      on q.tenant_id = k.tenant_id and q.name = k.name`;
  const found = new Map(rows.map((r) => [`${r.tenant_id}\u0000${r.name}`, r]));
  return keys.map((k) => found.get(`${k.tenantId}\u0000${k.name}`) ?? null);
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
    priority: item.priority,
    reference: item.reference,
    deadline: item.deadline,
    postpone: item.postpone,
    data: item.data,
  }));
  const rows = await sql<QueueItemRow[]>`
    insert into queue_items (id, tenant_id, queue_id, priority, reference, deadline, postpone, data)
    select (e.value->>'id')::uuid, (e.value->>'tenant_id')::uuid, (e.value->>'queue_id')::uuid, (e.value->>'priority')::int,
           e.value->>'reference', (e.value->>'deadline')::timestamptz, (e.value->>'postpone')::timestamptz, e.value->'data'
    from jsonb_array_elements(${JSON.stringify(records)}::text::jsonb) with ordinality as e(value, n)
    order by e.n
    returning ${sql(ITEM_COLUMNS)}`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  return records.map((r) => byId.get(r.id)!).filter(Boolean);
}
