-- A paused queue (docs/decisions/queue-pause.md) still accepts items, but no consumer job is
-- started for it and its running consumers take nothing more: they finish the items they hold
-- and end. Resuming records a queue-ready effect, so consumers start again at once.
alter table queues add column is_paused boolean not null default false;
