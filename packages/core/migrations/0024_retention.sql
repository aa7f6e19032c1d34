-- Retention (docs/decisions/retention.md): how long items and jobs that ended stay, and whether
-- they are archived (as NDJSON, into ARCHIVE_DIR) before they are deleted.
alter table queues
  add column retention_completed_days double precision not null default 30 check (retention_completed_days >= 0),
  add column retention_failed_days double precision not null default 90 check (retention_failed_days >= 0),
  add column retention_action text not null default 'archive' check (retention_action in ('delete', 'archive'));

alter table tenants
  add column job_retention_days double precision not null default 90 check (job_retention_days >= 0),
  add column job_retention_action text not null default 'archive' check (job_retention_action in ('delete', 'archive'));

-- An upgrade deletes nothing by itself: the queues and workspaces that exist when retention
-- arrives archive first (and wait, with a warning, until ARCHIVE_DIR is set), so history kept
-- until now is not removed before an operator chooses. Those made from now on delete by default.
alter table queues alter column retention_action set default 'delete';
alter table tenants alter column job_retention_action set default 'delete';

-- The pass finds a queue's expired items oldest first without reading the live ones: only ended
-- items are in it, ordered by when they ended (updated_at: the last change, which for an ended
-- item is its ending). status is already indexed, so this adds no HOT-update loss of its own.
create index queue_items_ended_idx on queue_items (queue_id, updated_at, id)
  where status in ('completed', 'failed', 'dead_letter');
create index jobs_ended_idx on jobs (tenant_id, finished_at, id)
  where status in ('completed', 'failed', 'stopped', 'timed_out');

-- The manifest of the archive: a file exists in it once its batch's delete committed, in the
-- same transaction, so a file written by a batch that was killed before its delete is never
-- listed (nor restored) and its rows are archived again, once, by the next pass.
create table archive_files (
  key text primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  -- 'queue_items' (queue_id set) or 'jobs'
  kind text not null check (kind in ('queue_items', 'jobs')),
  queue_id uuid,
  queue_name text,
  -- the hour (UTC) in which the rows of the file ended
  hour timestamptz not null,
  rows integer not null,
  bytes bigint not null,
  first_ended_at timestamptz not null,
  last_ended_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index archive_files_scope_idx on archive_files (tenant_id, kind, queue_id, hour);

-- What a pass removed since its last event: each batch adds its rows in its own transaction, and
-- the end of a pass turns the sum into one event per queue (or tenant's jobs) and resets it, so a
-- pass killed midway loses no count and never writes an event per item.
create table retention_progress (
  kind text not null check (kind in ('queue_items', 'jobs')),
  -- the queue, or the tenant for jobs
  target_id uuid not null,
  tenant_id uuid not null references tenants(id) on delete cascade,
  deleted bigint not null default 0,
  archived bigint not null default 0,
  last_pass_at timestamptz,
  primary key (kind, target_id)
);
