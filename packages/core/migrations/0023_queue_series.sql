-- Charts of a queue and of the machines (GET /settings/queues/{id}/series, GET /settings/machines/series,
-- docs/decisions/queue-series.md): what the per-minute buckets did not keep.
--
-- Processing-time percentiles: a histogram per queue, minute and shard, next to the buckets'
-- sum and count. Bucket b holds the items completed in 2^(b/4) to 2^((b+1)/4) ms (four buckets per
-- doubling, so a percentile read from it is within ±9% of the exact one); a day of hours-long
-- items needs about a hundred buckets, most minutes use a handful.
create table queue_item_minute_times (
  queue_id uuid not null references queues(id) on delete cascade,
  minute   timestamptz not null,
  shard    smallint not null,
  bucket   smallint not null,
  n        bigint not null,
  primary key (queue_id, minute, shard, bucket)
);
alter table queue_item_minute_times set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
-- the purge deletes by age across every queue
create index queue_item_minute_times_minute_idx on queue_item_minute_times (minute);
create index queue_item_minutes_minute_idx on queue_item_minutes (minute);

-- One pass over the statement's transition tables feeds both. The histogram's insert reads the
-- buckets' insert to completion first (a subquery on its output), so every transaction locks the
-- buckets, then the histogram, each in queue order.
create or replace function queue_item_minutes_apply() returns trigger language plpgsql as $$
begin
  with done as materialized (
    select n.queue_id, n.status,
           case when n.status = 'completed' and n.processed_at >= n.started_at
                then extract(epoch from n.processed_at - n.started_at)::float8 * 1000 end as ms
    from new_rows n join old_rows o on o.id = n.id
    where n.status in ('completed', 'failed') and o.status <> n.status
  ), minutes as (
    insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
      select queue_id, date_trunc('minute', now()), counter_shard(),
             count(*) filter (where status = 'completed'),
             count(*) filter (where status = 'failed'),
             coalesce(sum(ms), 0)::bigint,
             count(ms)
      from done group by queue_id order by 1
      on conflict (queue_id, minute, shard) do update set
        completed = queue_item_minutes.completed + excluded.completed,
        failed = queue_item_minutes.failed + excluded.failed,
        processing_ms = queue_item_minutes.processing_ms + excluded.processing_ms,
        timed = queue_item_minutes.timed + excluded.timed
      returning 1
  )
  insert into queue_item_minute_times (queue_id, minute, shard, bucket, n)
    select queue_id, date_trunc('minute', now()), counter_shard(),
           floor(4 * log(greatest(ms, 1)) / log(2.0::float8))::smallint as bucket, count(*)
    from done where ms is not null and (select count(*) from minutes) >= 0
    group by 1, 2, 3, 4 order by 1, 4
    on conflict (queue_id, minute, shard, bucket) do update set n = queue_item_minute_times.n + excluded.n;
  return null;
end $$;

-- Backlog and busy slots over time: a sample per queue and per machine per minute, taken by the
-- dispatcher's sweep. The first replica to claim the minute (stat_sample_minutes, on conflict do
-- nothing) writes the samples; the others find it claimed and read nothing.
create table stat_sample_minutes (minute timestamptz primary key);

create table queue_minute_samples (
  queue_id    uuid not null references queues(id) on delete cascade,
  minute      timestamptz not null,
  backlog     bigint not null,
  in_progress bigint not null,
  primary key (queue_id, minute)
);
create index queue_minute_samples_minute_idx on queue_minute_samples (minute);

create table machine_minute_samples (
  machine_id uuid not null references machines(id) on delete cascade,
  minute     timestamptz not null,
  busy       integer not null,
  slots      integer not null,
  primary key (machine_id, minute)
);
create index machine_minute_samples_minute_idx on machine_minute_samples (minute);
