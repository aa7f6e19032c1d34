import { Type, type Static } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { DateTime, Nullable } from '../validation/formats';
import { SERIES_RETENTION_HOURS } from './queue-series';
import { consumerCapacity, forecastDeadlines, type ForecastMachine, type ForecastTrigger } from './queue-forecast';
import { loadQueueItemCounts, type QueueRow } from './queues';

/** How close a deadline must be for its unfinished item to count as at risk. */
export const DEADLINE_RISK_MINUTES = 60;

const count = (description: string) => Type.Integer({ minimum: 0, description });

/**
 * How many ready items, from the head of the take order, the forecast reads. Past it, items are
 * neither counted late nor weigh on machines_needed (docs/decisions/deadline-forecast.md).
 */
export const FORECAST_MAX_ITEMS = 2_000;
/** How many of the last hour's completions, the most recent first, the median is taken over. */
export const FORECAST_MAX_HISTORY = 1_000;

export const QueueForecast = Type.Object({
  handling_seconds_p50: Nullable(Type.Number({ minimum: 0, description: `Median of processed_at − started_at (taken to completed) over the items completed in the last 60 minutes (the ${FORECAST_MAX_HISTORY} most recent at most), in seconds to the millisecond; null when none` })),
  consumers: count('Consumer jobs of the queue that can work at once now: its active triggers\' maximums, on their machine when they name one, else on unattended machines, over active machines not offline and their slots not held by other work; 0 when the queue is paused'),
  ready_items: count('Items ready to take now (the same as `ready`)'),
  examined_items: count(`Ready items, from the head of the take order, that late_items and machines_needed looked at: all of them up to ${FORECAST_MAX_ITEMS}`),
  drain_at: Nullable(DateTime({ description: 'When the ready items are done at the current pace: now + ceil(ready_items / consumers) × handling_seconds_p50; null without history or consumers' })),
  late_items: Nullable(Type.Integer({ minimum: 0, description: 'Examined items that would finish after their deadline: the item at position k (0-based) of the take order finishes at now + ceil((k + 1) / consumers) × handling_seconds_p50 (every item with a deadline when there are no consumers); null without history' })),
  machines_needed: Nullable(Type.Integer({ minimum: 1, description: 'The fewest consumers with which every examined item with a deadline finishes on time, leaving out those less than one handling_seconds_p50 away (late whatever the number); null without history, or when no examined item has a deadline it can still make' })),
}, { description: 'Will the ready items make their deadlines at the current pace (docs/decisions/deadline-forecast.md). Items added meanwhile, retries and machines coming online are not foreseen.' });
export type QueueForecast = Static<typeof QueueForecast>;

export const QueueStatsResponse = Type.Object({
  counts: Type.Object({
    new: count('Items waiting to be taken (ready or postponed)'),
    in_progress: count('Items a robot holds now'),
    pending_review: count('Items waiting for a person to approve or reject them'),
    completed: count('Items done'),
    failed: count('Items failed: business exceptions (final, see business_failed) and application exceptions about to be retried or dead-lettered'),
    dead_letter: count('Items out of retries (re-drive to process them again)'),
  }, { description: 'Exact, from the per-status counters kept with every change (never a count over the queue)' }),
  business_failed: count('Of counts.failed, the items that failed with a business exception: final, never retried automatically (a bulk retry with include_business runs them again); the rest are application exceptions'),
  ready: count('`new` items a robot may take now (not postponed)'),
  postponed: count('`new` items whose `postpone` is still in the future'),
  oldest_ready_at: Nullable(DateTime({ description: 'created_at of the oldest ready item (how long the queue has been waiting); null when none is ready' })),
  deadline_at_risk: count(`Items new or in progress whose deadline has passed or comes within ${DEADLINE_RISK_MINUTES} minutes`),
  completed_last_hour: count('Items that became completed in the last 60 minutes (whole minutes: the current one and the 59 before)'),
  failed_last_hour: count('Times an item became failed in the last 60 minutes (an item retried and failed twice counts twice)'),
  business_failed_last_hour: count('Of failed_last_hour, the business exceptions (a reviewer\'s rejection is one); the rest were application exceptions'),
  avg_processing_ms_last_hour: Nullable(Type.Integer({ minimum: 0, description: 'Mean time from a robot taking an item to completing it, over the items completed in the last 60 minutes; null when none' })),
  consumers_running: count('Consumer jobs of the queue running now'),
  is_paused: Type.Boolean({ description: 'Paused: items are accepted, no consumer takes them (POST …/resume)' }),
  forecast: QueueForecast,
});
export type QueueStatsResponse = Static<typeof QueueStatsResponse>;

/**
 * A queue's figures in one round trip, each from a counter, a per-minute bucket or a small
 * index (docs/decisions/queue-stats.md): none grows with the queue's size.
 */
export async function readQueueStats(sql: Queryable, queue: Pick<QueueRow, 'id' | 'tenant_id' | 'is_active' | 'is_paused'>): Promise<QueueStatsResponse> {
  const [counts, [row], [f]] = await Promise.all([
    loadQueueItemCounts(sql, [queue.id]),
    sql<Array<{
      postponed: number; oldest_ready_at: Date | null; deadline_at_risk: number; business_failed: number;
      completed: number; failed: number; failed_business: number; processing_ms: number; timed: number; consumers_running: number;
    }>>`
      select
        (select count(*) from queue_items where queue_id = ${queue.id} and status = 'new' and postpone > now())::bigint as postponed,
        (select created_at from queue_items where queue_id = ${queue.id} and status = 'new' and (postpone is null or postpone <= now())
          order by created_at, id limit 1) as oldest_ready_at,
        (select count(*) from queue_items where queue_id = ${queue.id} and status in ('new', 'in_progress')
          and deadline <= now() + make_interval(mins => ${DEADLINE_RISK_MINUTES}))::bigint as deadline_at_risk,
        (select coalesce(sum(business), 0) from queue_item_counts where queue_id = ${queue.id} and status = 'failed')::bigint as business_failed,
        m.completed, m.failed, m.failed_business, m.processing_ms, m.timed,
        (select count(*) from jobs where queue_id = ${queue.id} and status = 'running')::bigint as consumers_running
      from (
        select coalesce(sum(completed), 0)::bigint as completed, coalesce(sum(failed), 0)::bigint as failed,
               coalesce(sum(failed_business), 0)::bigint as failed_business,
               coalesce(sum(processing_ms), 0)::bigint as processing_ms, coalesce(sum(timed), 0)::bigint as timed
        from queue_item_minutes where queue_id = ${queue.id} and minute > now() - interval '1 hour') m`,
    readForecastInputs(sql, queue),
  ]);
  const c = counts.get(queue.id)!;
  const r = row!;
  const ready = Math.max(0, c.new - r.postponed);
  return {
    counts: { new: c.new, in_progress: c.in_progress, pending_review: c.pending_review, completed: c.completed, failed: c.failed, dead_letter: c.dead_letter },
    business_failed: r.business_failed,
    ready,
    postponed: r.postponed,
    oldest_ready_at: r.oldest_ready_at ? r.oldest_ready_at.toISOString() : null,
    deadline_at_risk: r.deadline_at_risk,
    completed_last_hour: r.completed,
    failed_last_hour: r.failed,
    business_failed_last_hour: r.failed_business,
    avg_processing_ms_last_hour: r.timed > 0 ? Math.round(r.processing_ms / r.timed) : null,
    consumers_running: r.consumers_running,
    is_paused: queue.is_paused,
    forecast: forecastOf(f!, queue, ready),
  };
}

type ForecastInputs = {
  now: Date; p50: number | null; deadlines: number[]; triggers: ForecastTrigger[]; machines: ForecastMachine[];
};
type ForecastQueue = Pick<QueueRow, 'id' | 'tenant_id' | 'is_active' | 'is_paused'>;

function forecastOf(f: ForecastInputs, queue: ForecastQueue, ready: number): QueueForecast {
  // a paused or deactivated queue gets no consumer, whatever its triggers say
  const triggers = queue.is_active && !queue.is_paused ? f.triggers : [];
  return forecastDeadlines({
    now: f.now,
    readyItems: ready,
    deadlines: f.deadlines.map((d) => (Number.isFinite(d) ? new Date(d) : null)),
    p50Seconds: f.p50 === null ? null : Math.round(Number(f.p50) * 1000) / 1000,
    consumers: consumerCapacity(triggers, f.machines),
  });
}

/**
 * The forecast's late items alone, for the state gauges: the ready count only bounds what is
 * examined, and the deadlines read are ready items already, so it is not read.
 */
export async function readQueueLateItems(sql: Queryable, queue: ForecastQueue): Promise<number | null> {
  const [f] = await readForecastInputs(sql, queue);
  return forecastOf(f!, queue, f!.deadlines.length).late_items;
}

/**
 * What the forecast needs, in one statement, none of it growing with the queue: the median over
 * the newest completions through `queue_items_ended_idx` (ended items by when they ended), the
 * deadlines of the first ready items in take order through `queue_items_ready_idx` (index-only),
 * the queue's triggers and the workspace's machines that are not offline with the slots other work
 * leaves them (the same reading as `startQueueConsumers`). The figures are the database's, at its
 * `now()`, so an API clock off by seconds does not move them.
 */
function readForecastInputs(sql: Queryable, queue: Pick<QueueRow, 'id' | 'tenant_id'>) {
  return sql<ForecastInputs[]>`
    select now() as now,
      (select percentile_cont(0.5) within group (order by extract(epoch from h.processed_at - h.started_at))
         from (select processed_at, started_at from queue_items
               where queue_id = ${queue.id} and status = 'completed' and updated_at > now() - interval '1 hour'
                 and processed_at > now() - interval '1 hour' and processed_at >= started_at
               order by updated_at desc limit ${FORECAST_MAX_HISTORY}) h) as p50,
      -- postgres.js reads a NULL inside a float8[] as NaN: no deadline travels as Infinity instead
      array(select coalesce((extract(epoch from deadline) * 1000)::float8, 'Infinity') from queue_items
            where queue_id = ${queue.id} and status = 'new' and (postpone is null or postpone <= now())
            order by priority desc, deadline asc nulls last, created_at asc, id
            limit ${FORECAST_MAX_ITEMS}) as deadlines,
      (select coalesce(json_agg(json_build_object('max_concurrent_jobs', t.max_concurrent_jobs, 'machine_id', t.machine_id)), '[]')
         from triggers t join processes p on p.id = t.process_id and p.is_active
         where t.queue_id = ${queue.id} and t.is_active) as triggers,
      (select coalesce(json_agg(json_build_object('id', m.id, 'kind', m.kind, 'available', m.slots - (
                 select count(*) from jobs j where j.machine_id = m.id and j.status in ('pending', 'running', 'waiting_input')
                   and j.queue_id is distinct from ${queue.id}))), '[]')
         from machines m where m.tenant_id = ${queue.tenant_id} and m.is_active and m.status in ('online', 'busy')) as machines`;
}

/**
 * Drops per-minute buckets, histograms and samples past the series' retention (the dispatcher's
 * periodic purge): the charts read a day back (docs/decisions/queue-series.md).
 */
export async function purgeQueueStatBuckets(sql: Queryable): Promise<number> {
  const h = SERIES_RETENTION_HOURS;
  const counts = await Promise.all([
    sql`delete from queue_item_minutes where minute < now() - make_interval(hours => ${h})`,
    sql`delete from queue_item_minute_times where minute < now() - make_interval(hours => ${h})`,
    sql`delete from queue_minute_samples where minute < now() - make_interval(hours => ${h})`,
    sql`delete from machine_minute_samples where minute < now() - make_interval(hours => ${h})`,
    sql`delete from stat_sample_minutes where minute < now() - make_interval(hours => ${h})`,
  ]);
  return counts.reduce((n, r) => n + r.count, 0);
}
