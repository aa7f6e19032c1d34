-- Unique references per queue, for the queues that ask for them (docs/decisions/unique-references.md).
--
-- A unique index on queue_items (queue_id, reference) would be kept by every add of every queue,
-- the hot path of B1 and B3, for a rule most queues do not want. The references of the queues
-- that do want it live in a table of their own whose primary key is the rule: an add writes a row
-- there only when its queue has the setting on and the item has a reference, so two adds of one
-- reference cannot both commit whatever their timing.
alter table queues add column unique_references boolean not null default false;

create table queue_item_references (
  queue_id uuid not null,
  reference text not null,
  -- the item holding the reference: what a refused add names in its answer
  item_id uuid not null,
  primary key (queue_id, reference)
);
-- the queues with the setting on, few: what an add checks its own queues against
create index queues_unique_references_idx on queues (id) where unique_references;

-- Every insert of items (the platform's adds, the view's INSERT, an archive's restore) records
-- the references of the queues with the setting on, in the same statement: a clash, with a stored
-- item or within the statement, fails the statement and so the whole add. The transition table is
-- the one the counters' trigger already captures. A statement whose queues all have the setting
-- off stops at the first check (measured: ~10 µs for one item, ~30 µs for a bulk of 1,000, where
-- joining every new row with its queue cost ~800 µs; docs/decisions/unique-references.md); no
-- index of queue_items grows for it.
create function queue_item_references_insert() returns trigger language plpgsql as $$
begin
  if exists (select 1 from queues q where q.unique_references and q.id in (select n.queue_id from new_rows n)) then
    insert into queue_item_references (queue_id, reference, item_id)
    select n.queue_id, n.reference, n.id
    from new_rows n join queues q on q.id = n.queue_id
    where n.reference is not null and q.unique_references;
  end if;
  return null;
end $$;

create trigger queue_items_references_insert after insert on queue_items
  referencing new table as new_rows for each statement execute function queue_item_references_insert();

-- Whatever deletes items (retention, a bulk delete, a queue's or a workspace's cascade) frees
-- their references in the same statement, so a removed item no longer blocks its reference. As
-- for the payloads (0029), no foreign key: its check would lock each new item's row once more.
-- Items without a reference, most of them, are not looked at.
create function queue_item_references_delete() returns trigger language plpgsql as $$
begin
  delete from queue_item_references r using old_rows o
  where o.reference is not null and r.queue_id = o.queue_id and r.reference = o.reference and r.item_id = o.id;
  return null;
end $$;

create trigger queue_items_references_delete after delete on queue_items
  referencing old table as old_rows for each statement execute function queue_item_references_delete();
