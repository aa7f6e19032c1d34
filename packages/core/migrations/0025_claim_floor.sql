-- The claim floor (docs/decisions/claim-floor.md): per queue, a lower bound on the created_at of
-- the ready items without a deadline, so the take can start its index range past the entries of
-- items already taken. While vacuum is held back those entries stay at the head of
-- queue_items_ready_idx, and a take that starts at the head visits each one. No row: no floor.
-- The take only reads it; the dispatcher recomputes it from the items, and the trigger below
-- lowers it at once when an older item becomes ready again.
create table queue_ready_floor (
  queue_id uuid primary key references queues(id) on delete cascade,
  floor timestamptz not null,
  updated_at timestamptz not null default now()
);
-- one row per queue rewritten every pass: keep its dead versions few
alter table queue_ready_floor set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

-- Any statement that leaves an item ready, without a deadline and older than its queue's floor
-- (a retry, a release, an approval, a re-drive, a bulk retry, a postpone cleared, an insert by a
-- transaction that began long ago) lowers the floor to it in the same transaction, so the next
-- take finds it. Takes and settles leave no row `new` and write nothing here.
create function queue_ready_floor_lower() returns trigger language plpgsql as $$
begin
  -- no floor anywhere (CLAIM_FLOOR=off, or auto while vacuum runs): the new rows are not even read
  if not exists (select 1 from queue_ready_floor) then
    return null;
  end if;
  -- the floors to lower, locked in queue order first: two statements lowering the floors of the
  -- same queues wait for each other in one order, never in a cycle (the pass skips locked floors)
  perform 1 from queue_ready_floor f
    join (select queue_id, min(created_at) as min_created from new_rows
           where status = 'new' and deadline is null and (postpone is null or postpone <= now())
           group by queue_id) m on m.queue_id = f.queue_id
   where f.floor > m.min_created
   order by f.queue_id
     for update of f;
  update queue_ready_floor f set floor = m.min_created, updated_at = now()
    from (select queue_id, min(created_at) as min_created from new_rows
           where status = 'new' and deadline is null and (postpone is null or postpone <= now())
           group by queue_id) m
   where f.queue_id = m.queue_id and f.floor > m.min_created;
  return null;
end $$;

create trigger queue_items_ready_floor_insert after insert on queue_items
  referencing new table as new_rows for each statement execute function queue_ready_floor_lower();
create trigger queue_items_ready_floor_update after update on queue_items
  referencing new table as new_rows for each statement execute function queue_ready_floor_lower();
