-- Bulk actions by filter (docs/decisions/bulk-actions.md): one row per action a person or a key
-- asked for, walked in chunks by a keyset cursor over (created_at, id). Each chunk's changes and
-- the cursor's advance commit together, so after a crash every row is either done or untouched
-- and the action resumes from its cursor.
create table bulk_actions (
  id uuid primary key default gen_random_uuid(),
  tenant_id uuid not null references tenants(id) on delete cascade,
  -- 'queue_items' (queue_id set) or 'jobs'
  target text not null,
  queue_id uuid references queues(id) on delete cascade,
  action text not null,
  -- what the action sets (priority, postpone), as asked
  params jsonb not null default '{}',
  -- the filter as asked, or null when `ids` names the rows
  filter jsonb,
  ids uuid[],
  status text not null default 'pending',
  total integer not null,
  done integer not null default 0,
  changed integer not null default 0,
  -- rows created after the action was asked for are not part of it
  snapshot_at timestamptz not null default now(),
  cursor_created_at timestamptz,
  cursor_id uuid,
  cancel_requested boolean not null default false,
  -- the runner holding the action; another may take it over once the lease lapses
  lease_until timestamptz,
  -- fences a chunk: a runner whose lease was taken over commits nothing more
  lease_token uuid,
  error_message text,
  created_by jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);

create index bulk_actions_tenant_idx on bulk_actions (tenant_id, created_at desc, id desc);
create index bulk_actions_open_idx on bulk_actions (created_at) where status in ('pending', 'running');

-- A job retried by hand is retried once: the bulk action `retry` skips jobs that already have a
-- retry (automatic or by hand), which this finds without reading the tenant's jobs.
create index jobs_parent_idx on jobs (parent_job_id) where parent_job_id is not null;
