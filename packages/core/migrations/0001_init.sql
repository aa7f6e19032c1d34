-- The whole data model. snake_case names match the API's field names.
create extension if not exists pgcrypto;

-- Tenancy ------------------------------------------------------------------------------------
create table tenants (
  id uuid primary key default gen_random_uuid(),
  name text not null unique,
  plan text not null default 'standard',
  -- feature flags of the plan, e.g. {api_keys, webhooks}
  plan_features text[] not null default '{api_keys,webhooks}',
  subscription_status text not null default 'active'
    check (subscription_status in ('active', 'trialing', 'past_due', 'suspended', 'canceled')),
  -- executions allowed per calendar month (UTC); usage is counted atomically on every trigger
  monthly_quota integer not null default 10000 check (monthly_quota >= 0),
  quota_period date not null default date_trunc('month', now() at time zone 'utc')::date,
  quota_used integer not null default 0 check (quota_used >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table users (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  email text not null,
  name text,
  password_hash text not null,
  role text not null check (role in ('admin', 'member')),
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));
create index users_tenant_idx on users (tenant_id);

create table access_tokens (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  token_hash bytea not null unique,
  prefix text not null,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now()
);
create index access_tokens_user_idx on access_tokens (user_id);

-- Catalogue ----------------------------------------------------------------------------------
create table folders (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  description text,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);

create table processes (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  description text,
  release_id uuid not null default gen_random_uuid(),
  folder_id uuid references folders(id) on delete set null,
  input_schema jsonb,
  timeout_seconds integer not null default 3600 check (timeout_seconds between 1 and 604800),
  max_retries integer not null default 0 check (max_retries between 0 and 10),
  auto_retry boolean not null default false,
  retry_delay_seconds integer not null default 60 check (retry_delay_seconds between 0 and 86400),
  tags text[],
  sla_deadline_minutes integer check (sla_deadline_minutes > 0),
  on_success_trigger_process_id uuid references processes(id) on delete set null,
  required_assets text[] not null default '{}',
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);
-- lists order by name: the (tenant_id, name) key serves them; this one the folder_id filter of the public list
create index processes_folder_idx on processes (tenant_id, folder_id, name, id) where is_active;

create table machines (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  description text,
  -- the agent authenticates with a machine key; only its SHA-256 is kept
  machine_key_hash bytea not null unique,
  machine_key_prefix text not null,
  slots integer not null default 1 check (slots between 1 and 64),
  is_active boolean not null default true,
  status text not null default 'offline' check (status in ('online', 'offline', 'busy')),
  running_jobs integer not null default 0 check (running_jobs >= 0),
  last_heartbeat_at timestamptz,
  agent_version text,
  host_info jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);
create index machines_status_idx on machines (tenant_id, status) where is_active;

create table queues (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  description text,
  max_retries integer not null default 3 check (max_retries between 0 and 10),
  consumer_process_id uuid references processes(id) on delete set null,
  max_consumers integer not null default 1 check (max_consumers between 1 and 100),
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);

-- Work ---------------------------------------------------------------------------------------
create table jobs (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  process_id uuid not null references processes(id),
  machine_id uuid not null references machines(id),
  status text not null default 'pending'
    check (status in ('pending', 'running', 'completed', 'failed', 'stopped', 'timed_out')),
  priority integer not null default 3 check (priority between 1 and 5),
  input_data jsonb,
  output_data jsonb,
  logs text,
  error_message text,
  started_at timestamptz,
  finished_at timestamptz,
  retry_count integer not null default 0,
  stop_requested boolean not null default false,
  logs_archived boolean not null default false,
  logs_archive_key text,
  is_attended boolean not null default false,
  pending_input_prompt text,
  pending_input_options jsonb,
  progress_percent integer check (progress_percent between 0 and 100),
  progress_message text,
  resource_metrics jsonb,
  trigger_id uuid,
  schedule_id uuid,
  -- fencing token: bumped on every start; results of an older attempt are refused
  attempt integer not null default 0,
  -- how the job came to be: api, webhook, chain, retry, queue, manual
  source text not null default 'api',
  queue_id uuid references queues(id) on delete set null,
  parent_job_id uuid references jobs(id) on delete set null,
  -- when a failed job with auto_retry is retried (dispatcher creates the retry at that moment)
  not_before timestamptz,
  sla_due_at timestamptz,
  -- set once by the dispatcher when the job was still unfinished at sla_due_at
  sla_breached_at timestamptz,
  timeout_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index jobs_active_machine_idx on jobs (machine_id, status) where status in ('pending', 'running');
create index jobs_active_idx on jobs (status, created_at) where status in ('pending', 'running');
create index jobs_queue_consumers_idx on jobs (queue_id, status) where queue_id is not null and status in ('pending', 'running');
-- the SLA sweep: only unfinished, not yet breached jobs that have a due time
create index jobs_sla_due_idx on jobs (sla_due_at)
  where sla_due_at is not null and sla_breached_at is null and status in ('pending', 'running');

create table queue_items (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  queue_id uuid not null references queues(id) on delete cascade,
  status text not null default 'new'
    check (status in ('new', 'in_progress', 'pending_review', 'completed', 'failed', 'dead_letter')),
  priority integer not null default 3 check (priority between 1 and 5),
  reference text,
  deadline timestamptz,
  postpone timestamptz,
  data jsonb not null,
  result jsonb,
  retry_count integer not null default 0,
  error_message text,
  processed_by uuid,
  created_at timestamptz not null default clock_timestamp(),
  processed_at timestamptz,
  reviewed_by text,
  reviewed_at timestamptz,
  -- fencing: the job holding the item and the attempt number of this hand-out
  job_id uuid,
  attempt integer not null default 0,
  started_at timestamptz,
  updated_at timestamptz not null default now()
);
-- list newest first, with and without a status filter
create index queue_items_list_idx on queue_items (queue_id, created_at desc, id desc);
create index queue_items_status_list_idx on queue_items (queue_id, status, created_at desc, id desc);
-- the take order of README.md "Queue item order" over items ready to take
create index queue_items_ready_idx on queue_items (queue_id, priority desc, deadline asc nulls last, created_at asc, id)
  include (postpone) where status = 'new';
create index queue_items_reference_idx on queue_items (queue_id, reference) where reference is not null;
create index queue_items_in_progress_idx on queue_items (job_id) where status = 'in_progress';
-- the dispatcher's retry policy walks failed items (a short-lived state)
create index queue_items_failed_idx on queue_items (queue_id) where status = 'failed';
-- A queue table churns: every item is updated at least twice (taken, settled), and the take
-- scans the head of queue_items_ready_idx, where the entries of items already taken stay until
-- a vacuum removes them — consumption slows as they pile up (BENCHMARKS.md, B3). Vacuum and
-- analyze it after a fixed number of changed rows, not after 20 % of a table of millions.
alter table queue_items set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
  autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);

-- Exact per-queue, per-status counts without count(*): statement-level triggers add the deltas
-- into a few shards per queue (the shard follows the backend pid so concurrent writers rarely
-- wait on the same row). total = sum over shards. Counter rows are always locked in (queue_id, status)
-- order, so two statements moving items in opposite directions (new→in_progress, in_progress→new)
-- on the same shard cannot deadlock on them.
create table queue_item_counts (
  queue_id uuid not null references queues(id) on delete cascade,
  status text not null,
  shard smallint not null,
  n bigint not null default 0,
  primary key (queue_id, status, shard)
);
-- a few rows updated by every item statement: their dead versions are cleared often
alter table queue_item_counts set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

create function queue_item_counts_apply() returns trigger language plpgsql as $$
declare
  v_shard smallint := (pg_backend_pid() % 8)::smallint;
begin
  if tg_op = 'INSERT' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, count(*) from new_rows group by queue_id, status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  elsif tg_op = 'DELETE' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, -count(*) from old_rows group by queue_id, status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  else
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, sum(delta) from (
        select queue_id, status, -1 as delta from old_rows
        union all
        select queue_id, status, 1 as delta from new_rows
      ) d group by queue_id, status having sum(delta) <> 0 order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  end if;
  return null;
end $$;

create trigger queue_items_count_insert after insert on queue_items
  referencing new table as new_rows for each statement execute function queue_item_counts_apply();
create trigger queue_items_count_update after update on queue_items
  referencing old table as old_rows new table as new_rows for each statement execute function queue_item_counts_apply();
create trigger queue_items_count_delete after delete on queue_items
  referencing old table as old_rows for each statement execute function queue_item_counts_apply();

-- Assets -------------------------------------------------------------------------------------
create table assets (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null,
  type text not null check (type in ('text', 'integer', 'boolean', 'credential')),
  description text,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (tenant_id, name)
);

create table asset_values (
  asset_id uuid not null references assets(id) on delete cascade,
  environment text not null check (environment in ('dev', 'staging', 'production')),
  -- plain value for text/integer/boolean assets
  value jsonb,
  -- credential assets: AES-256-GCM of {"username","password"} (iv | tag | ciphertext)
  secret bytea,
  updated_at timestamptz not null default now(),
  primary key (asset_id, environment),
  check ((value is null) <> (secret is null))
);

-- Credentials --------------------------------------------------------------------------------
create table api_keys (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  name text not null check (char_length(name) >= 2),
  prefix text not null,
  key_hash bytea not null unique,
  is_active boolean not null default true,
  last_used_at timestamptz,
  expires_at timestamptz,
  allowed_ips text[],
  scopes text[] not null default '{}',
  environments text[],
  created_by uuid references users(id) on delete set null,
  revoked_at timestamptz,
  rotated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index api_keys_tenant_idx on api_keys (tenant_id, created_at desc, id desc);

create table audit_log (
  id bigserial primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  actor_type text not null check (actor_type in ('user', 'api_key', 'system', 'machine')),
  actor_id uuid,
  action text not null,
  source text not null,
  resource_type text,
  resource_id uuid,
  details jsonb not null default '{}',
  request_id text,
  ip text,
  created_at timestamptz not null default now()
);
create index audit_log_tenant_idx on audit_log (tenant_id, created_at desc);

-- Idempotency-Key on item and trigger POSTs: the first response is kept for 24 hours
create table idempotency_keys (
  tenant_id uuid not null references tenants(id) on delete cascade,
  scope text not null,
  key text not null,
  request_hash bytea not null,
  -- null while the first request is in flight; its HTTP status once it succeeded
  status integer,
  -- json, not jsonb: a replay answers the first response byte for byte (key order kept)
  response json,
  created_at timestamptz not null default now(),
  primary key (tenant_id, scope, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);
