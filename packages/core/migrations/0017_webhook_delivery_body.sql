-- A delivery that succeeds at its first attempt no longer keeps a copy of its body: the event in
-- the feed holds the same content, and a redelivery rebuilds the body from it (while the
-- retention keeps the event). The copy was most of the row, and of the WAL that every delivered
-- event wrote next to the work that made it (BENCHMARKS.md, B3 with a webhook subscription).
-- Deliveries waiting behind a failure, test events and redeliveries still carry theirs.
alter table webhook_deliveries alter column body drop not null;
