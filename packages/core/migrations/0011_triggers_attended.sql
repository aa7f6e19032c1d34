-- Queue triggers and attended machines (docs/decisions/triggers.md).

-- A machine is a person's desktop robot (`attended`) or an unattended one (the default). Nothing
-- auto-selects an attended machine; a trigger or a job trigger may name one.
alter table machines add column kind text not null default 'unattended' check (kind in ('unattended', 'attended'));

-- A queue trigger starts consumer jobs of `process_id` for `queue_id` while the queue has at least
-- `min_items_to_start` ready items and fewer than `max_concurrent_jobs` active (pending or running)
-- jobs of the trigger. `is_queue_default` marks the one trigger a queue's own consumer settings
-- (`consumer_process_id`, `max_consumers`) stand for; the triggers below keep the two in step.
create table triggers (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  type text not null default 'queue' check (type in ('queue')),
  queue_id uuid not null references queues(id) on delete cascade,
  process_id uuid not null references processes(id) on delete cascade,
  machine_id uuid references machines(id) on delete set null,
  max_concurrent_jobs integer not null default 1 check (max_concurrent_jobs between 1 and 100),
  min_items_to_start integer not null default 1 check (min_items_to_start between 1 and 10000),
  is_active boolean not null default true,
  is_queue_default boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index triggers_queue_default_key on triggers (queue_id) where is_queue_default;
create index triggers_queue_active_idx on triggers (queue_id) where is_active;
create index triggers_tenant_list_idx on triggers (tenant_id, created_at, id);
-- the consumer decision counts a trigger's active jobs on every queue nudge
create index jobs_trigger_active_idx on jobs (trigger_id) where trigger_id is not null and status in ('pending', 'running');

-- Existing consumer settings become each queue's default trigger, and the consumer jobs they
-- started carry it, so the first decision after the upgrade counts them.
insert into triggers (tenant_id, queue_id, process_id, max_concurrent_jobs, is_queue_default, created_at, updated_at)
  select tenant_id, id, consumer_process_id, max_consumers, true, created_at, updated_at
  from queues where consumer_process_id is not null;
update jobs j set trigger_id = t.id
  from triggers t
  where t.is_queue_default and j.queue_id = t.queue_id and j.source = 'queue' and j.trigger_id is null;

-- Queue settings → default trigger. Whoever writes the queue (API, svc apply, a script), its
-- trigger follows in the same transaction. A queue without a consumer keeps a default trigger
-- that is inactive (its machine and min_items_to_start survive a consumer set again).
-- pg_trigger_depth() > 1 means the change came from the opposite sync: nothing to echo.
create function queues_sync_default_trigger() returns trigger language plpgsql as $$
begin
  if pg_trigger_depth() > 1 then return null; end if;
  if new.consumer_process_id is not null then
    insert into triggers (tenant_id, queue_id, process_id, max_concurrent_jobs, is_queue_default)
      values (new.tenant_id, new.id, new.consumer_process_id, new.max_consumers, true)
    on conflict (queue_id) where is_queue_default do update
      set process_id = excluded.process_id, max_concurrent_jobs = excluded.max_concurrent_jobs, is_active = true, updated_at = now()
      where (triggers.process_id, triggers.max_concurrent_jobs, triggers.is_active)
            is distinct from (excluded.process_id, excluded.max_concurrent_jobs, true);
  else
    update triggers set is_active = false, max_concurrent_jobs = new.max_consumers, updated_at = now()
      where queue_id = new.id and is_queue_default
        and (is_active or max_concurrent_jobs <> new.max_consumers);
  end if;
  return null;
end $$;
create trigger queues_sync_default_trigger
  after insert or update of consumer_process_id, max_consumers on queues
  for each row execute function queues_sync_default_trigger();

-- Default trigger → queue settings: a PATCH or DELETE of the default trigger shows on the queue.
create function triggers_sync_queue_settings() returns trigger language plpgsql as $$
begin
  if pg_trigger_depth() > 1 or not new.is_queue_default then return null; end if;
  update queues
    set consumer_process_id = case when new.is_active then new.process_id end,
        max_consumers = new.max_concurrent_jobs, updated_at = now()
    where id = new.queue_id
      and (consumer_process_id, max_consumers)
          is distinct from (case when new.is_active then new.process_id end, new.max_concurrent_jobs);
  return null;
end $$;
create trigger triggers_sync_queue_settings
  after insert or update of process_id, max_concurrent_jobs, is_active on triggers
  for each row execute function triggers_sync_queue_settings();
