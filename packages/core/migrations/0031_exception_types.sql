-- Business and application exceptions (docs/decisions/exception-types.md).
--
-- An item keeps the kind of its last failure next to its error_message: `application` (retried by
-- the queue's policy, then dead-lettered) or `business` (final: the item stays `failed`, keeps its
-- retry_count and is never retried automatically). Null until the item first fails. A job keeps
-- only what its robot said when it failed (`business`, or `application`); a job the engine failed
-- reads as `application` (jobs/serialize.ts), so the engine's own failure paths write nothing new.
alter table queue_items add column exception_type text
  constraint queue_items_exception_type_check check (exception_type in ('business', 'application'));
alter table jobs add column exception_type text
  constraint jobs_exception_type_check check (exception_type in ('business', 'application'));

-- Every failure before this migration was an application one (there was no other kind).
update queue_items set exception_type = 'application' where error_message is not null;

-- The retry policy walks the failed items it may move, not the business failures, which stay
-- failed for good and would otherwise pile up under every pass. `is distinct from`: a failed item
-- an operator inserted without a kind is an application failure, as it always was.
drop index queue_items_failed_idx;
create index queue_items_failed_idx on queue_items (queue_id)
  where status = 'failed' and exception_type is distinct from 'business';

-- The list filtered by kind (?exception_type=), newest first, over the items that ever failed only:
-- an item that never failed adds no entry, so the take and the settle of a success pay nothing.
create index queue_items_exception_list_idx on queue_items (queue_id, exception_type, created_at desc, id desc)
  where exception_type is not null;

-- The per-status counters also count each kind apart, so that a list filtered by kind and the
-- queue's stats read exact totals from the counters like the rest (never a count over the items).
alter table queue_item_counts add column business bigint not null default 0,
                              add column application bigint not null default 0;

create or replace function queue_item_counts_apply() returns trigger language plpgsql as $$
declare
  v_shard smallint := counter_shard();
begin
  if tg_op = 'INSERT' then
    insert into queue_item_counts (queue_id, status, shard, n, business, application)
      select queue_id, status, v_shard, count(*),
             count(*) filter (where exception_type = 'business'), count(*) filter (where exception_type = 'application')
      from new_rows group by queue_id, status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n,
        business = queue_item_counts.business + excluded.business, application = queue_item_counts.application + excluded.application;
  elsif tg_op = 'DELETE' then
    insert into queue_item_counts (queue_id, status, shard, n, business, application)
      select o.queue_id, o.status, v_shard, -count(*),
             -count(*) filter (where o.exception_type = 'business'), -count(*) filter (where o.exception_type = 'application')
      from old_rows o
      where exists (select 1 from queues q where q.id = o.queue_id)
      group by o.queue_id, o.status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n,
        business = queue_item_counts.business + excluded.business, application = queue_item_counts.application + excluded.application;
  else
    insert into queue_item_counts (queue_id, status, shard, n, business, application)
      select queue_id, status, v_shard, sum(delta), coalesce(sum(delta) filter (where exception_type = 'business'), 0),
             coalesce(sum(delta) filter (where exception_type = 'application'), 0)
      from (
        select queue_id, status, exception_type, -1 as delta from old_rows
        union all
        select queue_id, status, exception_type, 1 as delta from new_rows
      ) d group by queue_id, status
      having sum(delta) <> 0 or coalesce(sum(delta) filter (where exception_type is not null), 0) <> 0
      order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n,
        business = queue_item_counts.business + excluded.business, application = queue_item_counts.application + excluded.application;
  end if;
  return null;
end $$;

-- The counters of the items the update above marked (it ran under the former function).
with k as (
  select queue_id, status, count(*) filter (where exception_type = 'business') as business,
         count(*) filter (where exception_type = 'application') as application
  from queue_items where exception_type is not null group by queue_id, status
)
insert into queue_item_counts (queue_id, status, shard, n, business, application)
  select queue_id, status, 0, 0, business, application from k
  on conflict (queue_id, status, shard) do update set business = excluded.business, application = excluded.application;

-- Failures per minute, each kind apart (the stats' last hour).
alter table queue_item_minutes add column failed_business bigint not null default 0;

create or replace function queue_item_minutes_apply() returns trigger language plpgsql as $$
begin
  with done as materialized (
    select n.queue_id, n.status, n.exception_type,
           case when n.status = 'completed' and n.processed_at >= n.started_at
                then extract(epoch from n.processed_at - n.started_at)::float8 * 1000 end as ms
    from new_rows n join old_rows o on o.id = n.id
    where n.status in ('completed', 'failed') and o.status <> n.status
  ), minutes as (
    insert into queue_item_minutes (queue_id, minute, shard, completed, failed, failed_business, processing_ms, timed)
      select queue_id, date_trunc('minute', now()), counter_shard(),
             count(*) filter (where status = 'completed'),
             count(*) filter (where status = 'failed'),
             count(*) filter (where status = 'failed' and exception_type = 'business'),
             coalesce(sum(ms), 0)::bigint,
             count(ms)
      from done group by queue_id order by 1
      on conflict (queue_id, minute, shard) do update set
        completed = queue_item_minutes.completed + excluded.completed,
        failed = queue_item_minutes.failed + excluded.failed,
        failed_business = queue_item_minutes.failed_business + excluded.failed_business,
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

-- Events carry the kind: item.failed and item.dead_letter say which failure it was.
create or replace function queue_item_event_data(q queue_items) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', q.id, 'queue_id', q.queue_id, 'status', q.status, 'priority', q.priority, 'reference', q.reference,
    'deadline', event_iso(q.deadline), 'postpone', event_iso(q.postpone),
    'data', (select p.data from queue_item_payloads p where p.id = q.id), 'result', q.result,
    'retry_count', q.retry_count, 'error_message', q.error_message, 'exception_type', q.exception_type,
    'processed_by', q.processed_by, 'created_at', event_iso(q.created_at), 'processed_at', event_iso(q.processed_at),
    'reviewed_by', q.reviewed_by, 'reviewed_at', event_iso(q.reviewed_at))
$$;

create or replace function job_event_data(j jobs) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', j.id, 'tenant_id', j.tenant_id, 'process_id', j.process_id, 'machine_id', j.machine_id, 'status', j.status,
    'priority', j.priority, 'input_data', j.input_data, 'output_data', j.output_data, 'error_message', j.error_message,
    'exception_type', case when j.status = 'failed' then coalesce(j.exception_type, 'application') end,
    'started_at', event_iso(j.started_at), 'finished_at', event_iso(j.finished_at), 'retry_count', j.retry_count,
    'stop_requested', j.stop_requested, 'is_attended', j.is_attended, 'pending_input_prompt', j.pending_input_prompt,
    'pending_input_options', j.pending_input_options, 'progress_percent', j.progress_percent,
    'progress_message', j.progress_message, 'created_at', event_iso(j.created_at), 'updated_at', event_iso(j.updated_at),
    'process_name', (select p.name from processes p where p.id = j.process_id),
    'machine_name', (select m.name from machines m where m.id = j.machine_id),
    'trigger_id', j.trigger_id, 'schedule_id', j.schedule_id)
$$;

-- The whole item as one relation (migration 0029) with its kind of failure, for an operator's
-- reads and inserts.
create or replace view queue_item_records as
  select qi.id, qi.tenant_id, qi.queue_id, qi.status, qi.priority, qi.reference, qi.deadline, qi.postpone, p.data,
         qi.result, qi.retry_count, qi.error_message, qi.processed_by, qi.created_at, qi.processed_at, qi.reviewed_by,
         qi.reviewed_at, qi.job_id, qi.attempt, qi.started_at, qi.updated_at, qi.exception_type
  from queue_items qi join queue_item_payloads p on p.id = qi.id;

create or replace function queue_item_records_insert() returns trigger language plpgsql as $$
begin
  insert into queue_items (id, tenant_id, queue_id, status, priority, reference, deadline, postpone, result, retry_count,
                           error_message, processed_by, created_at, processed_at, reviewed_by, reviewed_at, job_id, attempt,
                           started_at, updated_at, exception_type)
  values (new.id, new.tenant_id, new.queue_id, new.status, new.priority, new.reference, new.deadline, new.postpone, new.result,
          new.retry_count, new.error_message, new.processed_by, new.created_at, new.processed_at, new.reviewed_by,
          new.reviewed_at, new.job_id, new.attempt, new.started_at, new.updated_at, new.exception_type);
  insert into queue_item_payloads (id, queue_id, data) values (new.id, new.queue_id, new.data);
  return new;
end $$;
