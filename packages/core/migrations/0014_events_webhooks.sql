-- Events out: the tenant's event feed and signed webhooks (docs/decisions/events.md).
--
-- An event is written by the statement that makes the change, in its transaction: item adds
-- write theirs in the insert statement (queue-items/batched-inserts.ts, repo.ts), every other
-- change by the triggers below, so that every path that changes a status (the agent, the sweeps,
-- the retry policy, a person) emits exactly one event per change and nothing when it rolls back.
--
-- Order and cursor: `seq` alone is not commit-ordered (a transaction that commits later may hold
-- a smaller number). Each event keeps the id of its transaction (`xid`); readers only return
-- events whose transaction is older than the oldest one still running
-- (pg_snapshot_xmin(pg_current_snapshot())), in (xid, seq) order. Every event not yet visible
-- then belongs to a transaction at or above that horizon, so it sorts after everything already
-- returned: a reader that keeps its cursor never skips a late commit. No counter row is locked.
-- No foreign key to tenants: its check would take a KEY SHARE lock on the tenant's row for every
-- event, and every item completion of a tenant would meet on that row. A deleted tenant's events
-- go with the retention purge.
create table events (
  seq bigserial not null,
  xid xid8 not null default pg_current_xact_id(),
  tenant_id uuid not null,
  type text not null,
  occurred_at timestamptz not null default now(),
  data jsonb not null,
  primary key (tenant_id, xid, seq)
);
-- the retention purge walks by time; a BRIN index costs next to nothing on the insert path
create index events_occurred_brin on events using brin (occurred_at);

-- ISO 8601 in UTC with milliseconds, as the API renders dates (Date#toISOString).
create function event_iso(t timestamptz) returns text language sql immutable as $$
  select to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- The cursor a client sees: the transaction id and the sequence number, 16 hex digits each, so
-- that ids compare as strings in feed order.
create function event_cursor(x xid8, s bigint) returns text language sql immutable as $$
  select lpad(to_hex(x::text::bigint), 16, '0') || lpad(to_hex(s), 16, '0')
$$;

-- A queue item as the API shows it (queue-items/serialize.ts).
create function queue_item_event_data(q queue_items) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', q.id, 'queue_id', q.queue_id, 'status', q.status, 'priority', q.priority, 'reference', q.reference,
    'deadline', event_iso(q.deadline), 'postpone', event_iso(q.postpone), 'data', q.data, 'result', q.result,
    'retry_count', q.retry_count, 'error_message', q.error_message, 'processed_by', q.processed_by,
    'created_at', event_iso(q.created_at), 'processed_at', event_iso(q.processed_at),
    'reviewed_by', q.reviewed_by, 'reviewed_at', event_iso(q.reviewed_at))
$$;

-- A job as the API shows it (jobs/serialize.ts), without its log (read it from the API).
create function job_event_data(j jobs) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', j.id, 'tenant_id', j.tenant_id, 'process_id', j.process_id, 'machine_id', j.machine_id, 'status', j.status,
    'priority', j.priority, 'input_data', j.input_data, 'output_data', j.output_data, 'error_message', j.error_message,
    'started_at', event_iso(j.started_at), 'finished_at', event_iso(j.finished_at), 'retry_count', j.retry_count,
    'stop_requested', j.stop_requested, 'is_attended', j.is_attended, 'pending_input_prompt', j.pending_input_prompt,
    'pending_input_options', j.pending_input_options, 'progress_percent', j.progress_percent,
    'progress_message', j.progress_message, 'created_at', event_iso(j.created_at), 'updated_at', event_iso(j.updated_at),
    'process_name', (select p.name from processes p where p.id = j.process_id),
    'machine_name', (select m.name from machines m where m.id = j.machine_id),
    'trigger_id', j.trigger_id, 'schedule_id', j.schedule_id)
$$;

-- Items: one statement-level trigger shares the transition tables the counter triggers already
-- build, so a batch of 200 settled items costs one INSERT, and claims (new → in_progress) none.
create function queue_item_events() returns trigger language plpgsql as $$
begin
  insert into events (tenant_id, type, data)
  select n.tenant_id, t.type, queue_item_event_data(n)
  from new_rows n
  join old_rows o on o.id = n.id
  cross join lateral (values
    (case when n.status is distinct from o.status then
       case n.status
         when 'completed' then 'item.completed'
         when 'pending_review' then 'item.pending_review'
         when 'dead_letter' then 'item.dead_letter'
         when 'failed' then case when o.status = 'in_progress' then 'item.failed' end
       end
     end),
    (case when n.reviewed_at is distinct from o.reviewed_at and n.reviewed_at is not null then 'item.reviewed' end)
  ) as t(type)
  where t.type is not null;
  return null;
end $$;

create trigger queue_items_events after update on queue_items
  referencing old table as old_rows new table as new_rows for each statement execute function queue_item_events();

-- Jobs, machines and API keys change one row at a time: row triggers whose WHEN clause keeps
-- progress reports, lease renewals, heartbeats and key touches free of any work.
create function job_events() returns trigger language plpgsql as $$
declare
  kind text;
begin
  if tg_op = 'INSERT' then
    kind := 'job.created';
  elsif new.status = 'running' and old.status = 'pending' then
    kind := 'job.started';
  elsif new.status in ('waiting_input', 'completed', 'failed', 'stopped', 'timed_out') then
    kind := 'job.' || new.status;
  end if;
  if kind is not null then
    insert into events (tenant_id, type, data) values (new.tenant_id, kind, job_event_data(new));
  end if;
  return null;
end $$;

create trigger jobs_events_insert after insert on jobs for each row execute function job_events();
create trigger jobs_events_update after update on jobs for each row
  when (old.status is distinct from new.status) execute function job_events();

create function machine_events() returns trigger language plpgsql as $$
begin
  if (old.status = 'offline') <> (new.status = 'offline') then
    insert into events (tenant_id, type, data) values (new.tenant_id,
      case when new.status = 'offline' then 'machine.offline' else 'machine.online' end,
      jsonb_build_object('id', new.id, 'tenant_id', new.tenant_id, 'name', new.name, 'description', new.description,
        'status', new.status, 'slots', new.slots, 'kind', to_jsonb(new)->'kind', 'running_jobs', new.running_jobs,
        'is_active', new.is_active, 'last_heartbeat_at', event_iso(new.last_heartbeat_at),
        'agent_version', new.agent_version, 'created_at', event_iso(new.created_at), 'updated_at', event_iso(new.updated_at)));
  end if;
  return null;
end $$;

create trigger machines_events after update on machines for each row
  when (old.status is distinct from new.status) execute function machine_events();

-- An API key as the API shows it (api-keys/serialize.ts): never its hash.
create function api_key_events() returns trigger language plpgsql as $$
declare
  kind text;
begin
  if tg_op = 'INSERT' then
    kind := 'api_key.created';
  elsif new.revoked_at is not null and old.revoked_at is null then
    kind := 'api_key.revoked';
  elsif new.rotated_at is distinct from old.rotated_at then
    kind := 'api_key.rotated';
  end if;
  if kind is not null then
    insert into events (tenant_id, type, data) values (new.tenant_id, kind,
      jsonb_build_object('id', new.id, 'name', new.name, 'prefix', new.prefix, 'is_active', new.is_active,
        'last_used_at', event_iso(new.last_used_at), 'expires_at', event_iso(new.expires_at),
        'allowed_ips', new.allowed_ips, 'scopes', new.scopes, 'environments', new.environments,
        'created_at', event_iso(new.created_at)));
  end if;
  return null;
end $$;

create trigger api_keys_events_insert after insert on api_keys for each row execute function api_key_events();
create trigger api_keys_events_update after update on api_keys for each row
  when (old.revoked_at is distinct from new.revoked_at or old.rotated_at is distinct from new.rotated_at)
  execute function api_key_events();

-- Webhook subscriptions. The signing secret is kept encrypted (security/secret-box.ts, the asset
-- key) because signing needs it in clear. `cursor_*` is the last event handed to deliveries:
-- a new subscription starts at its own transaction, so it gets what commits after it.
create table webhook_subscriptions (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  url text not null,
  event_types text[] not null,
  description text,
  is_active boolean not null default true,
  secret_sealed bytea not null,
  secret_prefix text not null,
  cursor_xid xid8 not null default pg_current_xact_id(),
  cursor_seq bigint not null default 0,
  -- a dispatcher replica delivering for it holds it until then (no transaction stays open)
  lease_owner text,
  lease_until timestamptz,
  -- since when every delivery fails; past 24 hours it is disabled
  failing_since timestamptz,
  disabled_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_subscriptions_tenant_idx on webhook_subscriptions (tenant_id, created_at, id);
create index webhook_subscriptions_active_idx on webhook_subscriptions (id) where is_active;

-- One row per event handed to a subscription (and per test or redelivery, `in_order` false).
-- Written only for tenants with a subscription. `body` is what is sent, so a redelivery does not
-- depend on the event still being in the feed.
create table webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  subscription_id uuid not null references webhook_subscriptions(id) on delete cascade,
  event_id text not null,
  event_type text not null,
  event_xid xid8,
  event_seq bigint,
  in_order boolean not null default true,
  body text not null,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  first_attempt_at timestamptz,
  last_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  last_duration_ms integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index webhook_deliveries_event_key on webhook_deliveries (subscription_id, event_xid, event_seq) where in_order;
create index webhook_deliveries_pending_idx on webhook_deliveries (subscription_id, event_xid, event_seq) where status = 'pending';
create index webhook_deliveries_list_idx on webhook_deliveries (subscription_id, created_at desc, id desc);
create index webhook_deliveries_created_brin on webhook_deliveries using brin (created_at);
