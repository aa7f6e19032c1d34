-- An item's payload apart from its state (docs/decisions/item-payloads.md).
--
-- Every take and every settle of an item is an update that cannot be HOT (its status is indexed),
-- so it wrote a new entry into every index of queue_items, the payload's GIN index included, and
-- a new copy of the payload into the heap and into the triggers' transition tables, for a payload
-- that never changes after the add. The payload now lives in its own table, written once when the
-- item is added and deleted with it; state changes touch only the narrower row.
create table queue_item_payloads (
  id uuid primary key,
  -- the search filters by queue as it reads the GIN index's matches (no join for that)
  queue_id uuid not null,
  data jsonb not null
);

insert into queue_item_payloads (id, queue_id, data) select id, queue_id, data from queue_items;
-- the payload search (migration 0020), now over the payloads alone
create index queue_item_payloads_data_idx on queue_item_payloads using gin (data jsonb_path_ops);
-- Added and removed as fast as queue_items (migration 0001): vacuum and analyze after a fixed
-- number of rows, not a share of millions. Vacuum also moves the GIN index's pending list into
-- the index, which an add would otherwise do itself once the list is full.
alter table queue_item_payloads set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
  autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000,
  autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);

-- the item as a person reads it, for an item's event (migration 0014): the same function, whose
-- payload is now read from its table (only for the rows that emit an event: takes emit none)
drop function queue_item_event_data(queue_items);
alter table queue_items drop column data;

create function queue_item_event_data(q queue_items) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', q.id, 'queue_id', q.queue_id, 'status', q.status, 'priority', q.priority, 'reference', q.reference,
    'deadline', event_iso(q.deadline), 'postpone', event_iso(q.postpone),
    'data', (select p.data from queue_item_payloads p where p.id = q.id), 'result', q.result,
    'retry_count', q.retry_count, 'error_message', q.error_message, 'processed_by', q.processed_by,
    'created_at', event_iso(q.created_at), 'processed_at', event_iso(q.processed_at),
    'reviewed_by', q.reviewed_by, 'reviewed_at', event_iso(q.reviewed_at))
$$;

-- Whatever deletes items (retention, a bulk delete, a queue's or a workspace's cascade) deletes
-- their payloads in the same statement. No foreign key: its check would lock every new item's
-- row once more (a WAL record per item) for a reference the add statement itself guarantees.
create function queue_item_payloads_delete() returns trigger language plpgsql as $$
begin
  delete from queue_item_payloads p using old_rows o where p.id = o.id;
  return null;
end $$;

create trigger queue_items_payloads_delete after delete on queue_items
  referencing old table as old_rows for each statement execute function queue_item_payloads_delete();

-- The whole item, payload included, as one relation: for reads that want everything (the archive,
-- an operator's query) and for an operator's INSERT of whole items (an import by SQL), which the
-- trigger below splits into the two tables. The platform's own adds write both tables in one
-- statement and never insert through the view.
create view queue_item_records as
  select qi.id, qi.tenant_id, qi.queue_id, qi.status, qi.priority, qi.reference, qi.deadline, qi.postpone, p.data,
         qi.result, qi.retry_count, qi.error_message, qi.processed_by, qi.created_at, qi.processed_at, qi.reviewed_by,
         qi.reviewed_at, qi.job_id, qi.attempt, qi.started_at, qi.updated_at
  from queue_items qi join queue_item_payloads p on p.id = qi.id;

alter view queue_item_records alter column id set default gen_random_uuid();
alter view queue_item_records alter column status set default 'new';
alter view queue_item_records alter column priority set default 3;
alter view queue_item_records alter column retry_count set default 0;
alter view queue_item_records alter column created_at set default clock_timestamp();
alter view queue_item_records alter column attempt set default 0;
alter view queue_item_records alter column updated_at set default now();

create function queue_item_records_insert() returns trigger language plpgsql as $$
begin
  insert into queue_items (id, tenant_id, queue_id, status, priority, reference, deadline, postpone, result, retry_count,
                           error_message, processed_by, created_at, processed_at, reviewed_by, reviewed_at, job_id, attempt,
                           started_at, updated_at)
  values (new.id, new.tenant_id, new.queue_id, new.status, new.priority, new.reference, new.deadline, new.postpone, new.result,
          new.retry_count, new.error_message, new.processed_by, new.created_at, new.processed_at, new.reviewed_by,
          new.reviewed_at, new.job_id, new.attempt, new.started_at, new.updated_at);
  insert into queue_item_payloads (id, queue_id, data) values (new.id, new.queue_id, new.data);
  return new;
end $$;

create trigger queue_item_records_insert instead of insert on queue_item_records
  for each row execute function queue_item_records_insert();
