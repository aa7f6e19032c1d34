-- A queue's figures for its operators (GET /settings/queues/{id}/stats,
-- docs/decisions/queue-stats.md), each read without scanning the queue.
--
-- Items finished per minute: the statement-level update trigger adds, per queue, the items that
-- became completed or failed in that statement, and the processing time of those completed, into
-- a minute's bucket. Shards follow the backend pid like the status counters, so concurrent
-- consumers rarely wait on one row; rows are locked in queue order. The dispatcher's purge drops
-- buckets older than two hours.
create table queue_item_minutes (
  queue_id      uuid not null references queues(id) on delete cascade,
  minute        timestamptz not null,
  shard         smallint not null,
  completed     bigint not null default 0,
  failed        bigint not null default 0,
  -- sum of processed_at - started_at over the completed items that have both, and their number
  processing_ms bigint not null default 0,
  timed         bigint not null default 0,
  primary key (queue_id, minute, shard)
);
alter table queue_item_minutes set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

create function queue_item_minutes_apply() returns trigger language plpgsql as $$
begin
  insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
    select n.queue_id, date_trunc('minute', now()), (pg_backend_pid() % 8)::smallint,
           count(*) filter (where n.status = 'completed'),
           count(*) filter (where n.status = 'failed'),
           coalesce(sum(extract(epoch from n.processed_at - n.started_at) * 1000)
             filter (where n.status = 'completed' and n.processed_at >= n.started_at), 0)::bigint,
           count(*) filter (where n.status = 'completed' and n.processed_at >= n.started_at)
    from new_rows n join old_rows o on o.id = n.id
    where n.status in ('completed', 'failed') and o.status <> n.status
    group by n.queue_id order by 1
    on conflict (queue_id, minute, shard) do update set
      completed = queue_item_minutes.completed + excluded.completed,
      failed = queue_item_minutes.failed + excluded.failed,
      processing_ms = queue_item_minutes.processing_ms + excluded.processing_ms,
      timed = queue_item_minutes.timed + excluded.timed;
  return null;
end $$;

create trigger queue_items_minutes_update after update on queue_items
  referencing old table as old_rows new table as new_rows for each statement execute function queue_item_minutes_apply();

-- Postponed items and items whose deadline is near: small subsets, indexed on their own (items
-- without a postpone or a deadline pay nothing).
create index queue_items_postponed_idx on queue_items (queue_id, postpone) where status = 'new' and postpone is not null;
create index queue_items_deadline_idx on queue_items (queue_id, deadline)
  where status in ('new', 'in_progress') and deadline is not null;
