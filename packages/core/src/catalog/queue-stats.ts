import { Type, type Static } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { DateTime, Nullable } from '../validation/formats';
import { SERIES_RETENTION_HOURS } from './queue-series';
import { loadQueueItemCounts, type QueueRow } from './queues';

/** How close a deadline must be for its unfinished item to count as at risk. */
export const DEADLINE_RISK_MINUTES = 60;

const count = (description: string) => Type.Integer({ minimum: 0, description });

export const QueueStatsResponse = Type.Object({
  counts: Type.Object({
    new: count('Items waiting to be taken (ready or postponed)'),
    in_progress: count('Items a robot holds now'),
    pending_review: count('Items waiting for a person to approve or reject them'),
    completed: count('Items done'),
    failed: count('Items failed and about to be retried or dead-lettered'),
    dead_letter: count('Items out of retries (re-drive to process them again)'),
  }, { description: 'Exact, from the per-status counters kept with every change (never a count over the queue)' }),
  ready: count('`new` items a robot may take now (not postponed)'),
  postponed: count('`new` items whose `postpone` is still in the future'),
  oldest_ready_at: Nullable(DateTime({ description: 'created_at of the oldest ready item (how long the queue has been waiting); null when none is ready' })),
  deadline_at_risk: count(`Items new or in progress whose deadline has passed or comes within ${DEADLINE_RISK_MINUTES} minutes`),
  completed_last_hour: count('Items that became completed in the last 60 minutes (whole minutes: the current one and the 59 before)'),
  failed_last_hour: count('Times an item became failed in the last 60 minutes (an item retried and failed twice counts twice)'),
  avg_processing_ms_last_hour: Nullable(Type.Integer({ minimum: 0, description: 'Mean time from a robot taking an item to completing it, over the items completed in the last 60 minutes; null when none' })),
  consumers_running: count('Consumer jobs of the queue running now'),
  is_paused: Type.Boolean({ description: 'Paused: items are accepted, no consumer takes them (POST …/resume)' }),
});
export type QueueStatsResponse = Static<typeof QueueStatsResponse>;

/**
 * A queue's figures in one round trip, each from a counter, a per-minute bucket or a small
 * index (docs/decisions/queue-stats.md): none grows with the queue's size.
 */
export async function readQueueStats(sql: Queryable, queue: Pick<QueueRow, 'id' | 'is_paused'>): Promise<QueueStatsResponse> {
  const [counts, [row]] = await Promise.all([
    loadQueueItemCounts(sql, [queue.id]),
    sql<Array<{
      postponed: number; oldest_ready_at: Date | null; deadline_at_risk: number;
      completed: number; failed: number; processing_ms: number; timed: number; consumers_running: number;
    }>>`
      select
        (select count(*) from queue_items where queue_id = ${queue.id} and status = 'new' and postpone > now())::bigint as postponed,
        (select created_at from queue_items where queue_id = ${queue.id} and status = 'new' and (postpone is null or postpone <= now())
          order by created_at, id limit 1) as oldest_ready_at,
        (select count(*) from queue_items where queue_id = ${queue.id} and status in ('new', 'in_progress')
          and deadline <= now() + make_interval(mins => ${DEADLINE_RISK_MINUTES}))::bigint as deadline_at_risk,
        m.completed, m.failed, m.processing_ms, m.timed,
        (select count(*) from jobs where queue_id = ${queue.id} and status = 'running')::bigint as consumers_running
      from (
        select coalesce(sum(completed), 0)::bigint as completed, coalesce(sum(failed), 0)::bigint as failed,
               coalesce(sum(processing_ms), 0)::bigint as processing_ms, coalesce(sum(timed), 0)::bigint as timed
        from queue_item_minutes where queue_id = ${queue.id} and minute > now() - interval '1 hour') m`,
  ]);
  const c = counts.get(queue.id)!;
  const r = row!;
  return {
    counts: { new: c.new, in_progress: c.in_progress, pending_review: c.pending_review, completed: c.completed, failed: c.failed, dead_letter: c.dead_letter },
    ready: Math.max(0, c.new - r.postponed),
    postponed: r.postponed,
    oldest_ready_at: r.oldest_ready_at ? r.oldest_ready_at.toISOString() : null,
    deadline_at_risk: r.deadline_at_risk,
    completed_last_hour: r.completed,
    failed_last_hour: r.failed,
    avg_processing_ms_last_hour: r.timed > 0 ? Math.round(r.processing_ms / r.timed) : null,
    consumers_running: r.consumers_running,
    is_paused: queue.is_paused,
  };
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
