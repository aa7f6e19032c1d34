-- The counter shards a transaction writes (queue_item_counts, queue_item_minutes) were chosen by
-- backend pid modulo 8. Two busy backends with the same remainder then wrote the same counter
-- rows, so each waited for the other's commit, WAL flush included, on every statement: a queue's
-- consumers ran at about half speed in the runs where two of their connections collided, which
-- a run could not choose (BENCHMARKS.md, B3). Now a transaction takes a shard no other running
-- transaction holds, by a transaction-scoped advisory lock (released at commit or rollback, so it
-- works through a transaction-mode pooler), and keeps it for all its statements (a
-- transaction-local setting), so that its counter rows are still locked in one order. Only when
-- all 16 are held does it fall back to the pid's shard and wait there, as before. Readers sum over
-- the shards, whatever their number: the rows of the former 8 stay valid.
create function counter_shard() returns smallint language plpgsql as $$
declare
  v_held text := current_setting('svc.counter_shard', true);
  v_base int := pg_backend_pid() % 16;
  v_shard int;
begin
  if v_held is not null and v_held <> '' then
    return v_held::smallint;
  end if;
  for i in 0..15 loop
    v_shard := (v_base + i) % 16;
    -- 1,668,182,386 is 'crs1' (counter shards) in ASCII: the two-key form keeps clear of the
    -- migrations' one-key lock
    if pg_try_advisory_xact_lock(1668182386, v_shard) then
      perform set_config('svc.counter_shard', v_shard::text, true);
      return v_shard::smallint;
    end if;
  end loop;
  return v_base::smallint;
end $$;

create or replace function queue_item_counts_apply() returns trigger language plpgsql as $$
declare
  v_shard smallint := counter_shard();
begin
  if tg_op = 'INSERT' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select queue_id, status, v_shard, count(*) from new_rows group by queue_id, status order by 1, 2
      on conflict (queue_id, status, shard) do update set n = queue_item_counts.n + excluded.n;
  elsif tg_op = 'DELETE' then
    insert into queue_item_counts (queue_id, status, shard, n)
      select o.queue_id, o.status, v_shard, -count(*) from old_rows o
      where exists (select 1 from queues q where q.id = o.queue_id)
      group by o.queue_id, o.status order by 1, 2
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

create or replace function queue_item_minutes_apply() returns trigger language plpgsql as $$
begin
  insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
    select n.queue_id, date_trunc('minute', now()), counter_shard(),
           count(*) filter (where n.status = 'completed'),
           count(*) filter (where n.status = 'failed'),
           coalesce(sum(extract(epoch from n.processed_at - n.started_at) * 1000)
             filter (where n.status = 'completed' and n.processed_at >= n.started_at), 0)::bigint,
           count(*) filter (where n.status = 'completed' and n.processed_at >= n.started_at)
    from new_rows n join old_rows o on o.id = n.id
    where n.status in ('completed', 'failed') and o.status <> n.status
    group by n.queue_id order by 1
    on conflict (queue_id, minute, shard) do update set
      completed = queue_item_minutes.completed + excluded.completed,
      failed = queue_item_minutes.failed + excluded.failed,
      processing_ms = queue_item_minutes.processing_ms + excluded.processing_ms,
      timed = queue_item_minutes.timed + excluded.timed;
  return null;
end $$;
