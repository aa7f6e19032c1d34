-- The transactional outbox (docs/decisions/outbox.md). A command writes the effects it causes
-- (put jobs on their machine's queue, nudge a queue's consumers, hand failed items to the retry
-- policy, abort a run, a machine came online) in the same transaction as the change itself; the
-- relay in the dispatcher publishes them and deletes them. A crash between the commit and the
-- publish leaves the row here for the next relay pass, so no effect is ever lost.
create table outbox (
  id         bigserial primary key,
  kind       text not null,
  payload    jsonb not null,
  created_at timestamptz not null default now()
);

-- Wakes the relay (LISTEN outbox) once per statement that wrote effects; Postgres delivers the
-- notification at commit, and folds repeats of one transaction into one. A statement-level
-- trigger costs one call per batch, not one per row, on the batched hot paths. The payload names
-- what was written (`queue-ready:<queue id>` for nudges, the kind for the rest) so that a relay
-- holding a queue's nudges back for its window is not woken by each batch of that queue's items;
-- a payload too long for NOTIFY is sent empty, which wakes every relay.
create function outbox_notify() returns trigger language plpgsql as $$
declare
  what text;
begin
  select string_agg(distinct case when kind in ('queue-ready', 'items-failed') then kind || ':' || (payload->>'queue_id') else kind end, ',')
    into what from inserted;
  if what is not null then
    perform pg_notify('outbox', case when length(what) > 7000 then '' else what end);
  end if;
  return null;
end $$;

create trigger outbox_notify after insert on outbox
  referencing new table as inserted
  for each statement execute function outbox_notify();
