-- Human input (docs/decisions/human-input.md): a running job may ask a person for a value and
-- waits in `waiting_input` until an admin answers, is stopped, or its machine is lost.
alter table jobs drop constraint jobs_status_check;
alter table jobs add constraint jobs_status_check
  check (status in ('pending', 'running', 'waiting_input', 'completed', 'failed', 'stopped', 'timed_out'));

-- The job's timeout does not run while it waits: at the ask the time it had left is kept here
-- and timeout_at is cleared; the answer sets timeout_at = now() + input_timeout_left again.
alter table jobs add column input_timeout_left interval;
-- The last answer, as {"value": …} (a JSON null is a valid answer), kept for the robot's poll
-- when the pub/sub message that carries the news is lost. Cleared by the next ask.
alter table jobs add column input_answer jsonb;

-- A waiting job is still active (it holds its machine slot, its queue items and its SLA): the
-- partial indexes of active jobs cover it, so the sweeps and load counts that now include it
-- keep using them. Queries that still name only ('pending', 'running') are implied by the wider
-- predicate and keep them too.
drop index jobs_active_machine_idx;
create index jobs_active_machine_idx on jobs (machine_id, status) where status in ('pending', 'running', 'waiting_input');
drop index jobs_active_idx;
create index jobs_active_idx on jobs (status, created_at) where status in ('pending', 'running', 'waiting_input');
drop index jobs_queue_consumers_idx;
create index jobs_queue_consumers_idx on jobs (queue_id, status)
  where queue_id is not null and status in ('pending', 'running', 'waiting_input');
drop index jobs_sla_due_idx;
create index jobs_sla_due_idx on jobs (sla_due_at)
  where sla_due_at is not null and sla_breached_at is null and status in ('pending', 'running', 'waiting_input');
drop index jobs_trigger_active_idx;
create index jobs_trigger_active_idx on jobs (trigger_id)
  where trigger_id is not null and status in ('pending', 'running', 'waiting_input');
