-- The delivery log's insert path (docs/decisions/events.md): on the healthy path every delivered
-- event writes one row next to the work that made the event, so that row is kept small and cheap.
--
-- A delivery that succeeds at its first attempt no longer keeps a copy of its body: the event in
-- the feed holds the same content, and a redelivery rebuilds the body from it (while the
-- retention keeps the event). The copy was most of the row, and of the WAL it wrote.
-- Deliveries waiting behind a failure, test events and redeliveries still carry theirs.
alter table webhook_deliveries alter column body drop not null;

-- No foreign keys on the log: each one checked every inserted row (a trigger and a KEY SHARE lock
-- on the subscription's and the tenant's row per delivery). A deleted subscription, or one deleted
-- with its tenant, still takes its deliveries with it, by one statement-level delete.
alter table webhook_deliveries
  drop constraint webhook_deliveries_tenant_id_fkey,
  drop constraint webhook_deliveries_subscription_id_fkey;

create function webhook_deliveries_of_deleted() returns trigger language plpgsql as $$
begin
  delete from webhook_deliveries d using old_rows o where d.subscription_id = o.id;
  return null;
end $$;

create trigger webhook_subscriptions_deliveries after delete on webhook_subscriptions
  referencing old table as old_rows for each statement execute function webhook_deliveries_of_deleted();
