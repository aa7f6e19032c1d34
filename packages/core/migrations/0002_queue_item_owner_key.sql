-- An item belongs to a queue, and to that queue's workspace. One foreign key says both: before,
-- two keys (queue, tenant) ran two integrity checks per inserted item and allowed an item whose
-- tenant was not its queue's. The check per row is about a fifth of Postgres's work for a
-- `POST …/items` (BENCHMARKS.md, B1). Deleting a workspace still deletes its items: tenants →
-- queues → queue_items, both on delete cascade.
alter table queues add constraint queues_id_tenant_key unique (id, tenant_id);
alter table queue_items
  add constraint queue_items_queue_tenant_fkey foreign key (queue_id, tenant_id)
    references queues (id, tenant_id) on delete cascade,
  drop constraint queue_items_queue_id_fkey,
  drop constraint queue_items_tenant_id_fkey;

-- Deleting a queue (or its workspace) deletes its items, and the counter trigger then added their
-- negative counts for a queue already gone, which its foreign key refused: the whole delete
-- failed. The counts of a deleted queue go with it, so deleted items of a queue no longer there
-- are not counted.
create or replace function queue_item_counts_apply() returns trigger language plpgsql as $$
declare
  v_shard smallint := (pg_backend_pid() % 8)::smallint;
begin
  if tg_op = 'INSERT' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, count(*) from new_rows group by queue_id, status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  elsif tg_op = 'DELETE' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select o.queue_id, o.status, v_shard, -count(*) from old_rows o
      where exists (select 1 from queues q where q.id = o.queue_id)
      group by o.queue_id, o.status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  else
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, sum(delta) from (
        select queue_id, status, -1 as delta from old_rows
        union all
        select queue_id, status, 1 as delta from new_rows
      ) d group by queue_id, status having sum(delta) <> 0 order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  end if;
  return null;
end $$;
