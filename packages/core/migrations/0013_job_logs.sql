-- Job logs (docs/decisions/job-logs.md). The robot appends to `jobs.logs` as it runs; past the
-- total bound the rest is dropped and counted here (the log keeps its first part and one marker
-- line). Finished jobs' logs older than LOG_RETENTION_DAYS move, compressed, into the archive
-- table below; the job keeps `logs_archived` and `logs_archive_key` and its `logs` becomes null.
alter table jobs add column logs_dropped_bytes bigint not null default 0;
-- The number of the last append applied: an append repeated after a lost answer (same number)
-- is applied once.
alter table jobs add column logs_seq integer not null default 0;

-- The archive backend kept in Postgres: one compressed blob per job, by key. The key names the
-- backend ("pg:"), so an object store can take over later behind the same interface.
create table job_log_archives (
  key text primary key,
  tenant_id uuid not null references tenants(id) on delete cascade,
  job_id uuid not null unique references jobs(id) on delete cascade,
  encoding text not null check (encoding in ('gzip')),
  original_bytes bigint not null,
  dropped_bytes bigint not null default 0,
  data bytea not null,
  created_at timestamptz not null default now()
);

-- What the archive sweep looks for: finished jobs whose logs are still inline, oldest first.
create index jobs_logs_to_archive_idx on jobs (finished_at) where logs is not null and not logs_archived;
