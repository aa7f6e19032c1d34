import type { Queryable } from '../db/sql';

/**
 * The part of an item insert statement that writes its `item.added` events (docs/decisions/events.md),
 * beside its `queue-ready` effect: `with ins as (insert … returning id, queue_id, tenant_id), …`.
 * Other events come from the triggers of migration 0014; an add is written here because only the
 * statement knows whether its rows are one request each (the batched single adds: one event per
 * item) or one bulk request (one event per queue with the count, never one per item).
 * Put it before the outbox CTE: postgres.js reads the text before a `${sql(columns)}` helper to
 * choose its form, and this fragment last would turn the final `select ${sql(columns)}` into an
 * INSERT's `(…)values(…)` (the batch then fails and every add runs alone).
 */
export function itemAddedEventsOfInserted(sql: Queryable, per: 'item' | 'bulk') {
  return per === 'item'
    ? sql`ev as (
        insert into events (tenant_id, type, data)
        select tenant_id, 'item.added', jsonb_build_object('queue_id', queue_id, 'count', 1, 'item_ids', jsonb_build_array(id))
        from ins)`
    : sql`ev as (
        insert into events (tenant_id, type, data)
        select tenant_id, 'item.added', jsonb_build_object('queue_id', queue_id, 'count', count(*))
        from ins group by tenant_id, queue_id)`;
}
