-- Schedules (docs/decisions/schedules.md): a process started by a cron expression in a time zone.
-- `next_run_at` is the next tick to fire (null while inactive); the dispatchers' fire loop takes
-- due rows FOR UPDATE SKIP LOCKED and advances it in the transaction that creates the job, so a
-- tick fires once whatever the number of replicas. `last_error*` keep the last run that was
-- refused (quota, no machine, inactive process), which is never silently dropped.
create table schedules (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  description text,
  process_id uuid not null references processes(id),
  cron text not null check (length(cron) between 1 and 120),
  timezone text not null default 'UTC' check (length(timezone) between 1 and 64),
  machine_id uuid references machines(id),
  input_data jsonb,
  priority integer not null default 3 check (priority between 1 and 5),
  is_active boolean not null default true,
  missed_runs text not null default 'skip' check (missed_runs in ('skip', 'run_once')),
  next_run_at timestamptz,
  last_run_at timestamptz,
  last_job_id uuid,
  last_error text,
  last_error_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);
-- the fire loop's look-up: due, active schedules in tick order
create index schedules_due_idx on schedules (next_run_at) where is_active and next_run_at is not null;

-- The tick a scheduled job was created for. A second guard behind the row lock: one job per
-- schedule and tick, enforced by the database.
alter table jobs add column scheduled_for timestamptz;
create unique index jobs_schedule_tick_key on jobs (schedule_id, scheduled_for) where schedule_id is not null;
