import { Type, type Static } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { DateTime, Nullable, Uuid } from '../validation/formats';

/*
 * Series for the console's charts (docs/decisions/queue-series.md): a queue's items finished per
 * bucket, its backlog and its processing-time percentiles; the machines' busy slots. Every read is
 * bounded by the window (a fixed number of buckets) and never scans items or jobs.
 */

/** The two windows: the last hour by minute, the last day by five minutes. */
export const SERIES_WINDOWS = ['hour', 'day'] as const;
export type SeriesWindow = (typeof SERIES_WINDOWS)[number];
const WINDOWS: Record<SeriesWindow, { stepSeconds: number; buckets: number }> = {
  hour: { stepSeconds: 60, buckets: 60 },
  day: { stepSeconds: 300, buckets: 288 },
};

/** How long buckets and samples are kept: the day window and an hour of slack for a late purge. */
export const SERIES_RETENTION_HOURS = 25;
/** Most machines drawn one by one in the machines' series (the workspace's totals cover every machine). */
export const SERIES_MAX_MACHINES = 20;

export const SeriesQuery = Type.Object({
  window: Type.Optional(Type.Unsafe<SeriesWindow>({
    type: 'string', enum: [...SERIES_WINDOWS], default: 'hour',
    description: '`hour`: the current minute and the 59 before, by minute; `day`: the last 24 hours by 5 minutes',
  })),
}, { additionalProperties: false });
export type SeriesQuery = Static<typeof SeriesQuery>;

const count = (description: string) => Type.Integer({ minimum: 0, description });
const sampled = (description: string) => Nullable(Type.Integer({ minimum: 0, description: `${description}; null when no sample was taken in the bucket` }));
const percentile = (p: number) => Nullable(Type.Integer({
  minimum: 0,
  description: `${p}th percentile of the processing time (ms) of the items completed in the bucket, from a histogram with four buckets per doubling (within ±9%); null when none`,
}));

export const QueueSeriesResponse = Type.Object({
  window: Type.Unsafe<SeriesWindow>({ type: 'string', enum: [...SERIES_WINDOWS] }),
  step_seconds: Type.Integer({ description: 'Length of a bucket: 60 for the hour, 300 for the day' }),
  points: Type.Array(Type.Object({
    at: DateTime({ description: 'Start of the bucket' }),
    completed: count('Items that became completed in the bucket'),
    failed: count('Times an item became failed in the bucket'),
    backlog: sampled('Items `new` (ready or postponed) at the highest of the bucket\'s per-minute samples'),
    in_progress: sampled('Items held by a robot, the highest of the bucket\'s per-minute samples'),
    p50_ms: percentile(50),
    p95_ms: percentile(95),
  }), { description: 'Every bucket of the window, oldest first, the current one last (partly elapsed)' }),
});
export type QueueSeriesResponse = Static<typeof QueueSeriesResponse>;

const MachinePoint = Type.Object({
  at: DateTime({ description: 'Start of the bucket' }),
  busy: sampled('Slots running a job, the highest of the bucket\'s per-minute samples'),
  slots: sampled('Slots of the machine(s) at that time'),
});

export const MachineSeriesResponse = Type.Object({
  window: Type.Unsafe<SeriesWindow>({ type: 'string', enum: [...SERIES_WINDOWS] }),
  step_seconds: Type.Integer({ description: 'Length of a bucket: 60 for the hour, 300 for the day' }),
  total: Type.Array(MachinePoint, { description: 'Every active machine of the workspace together, bucket by bucket' }),
  machines: Type.Array(Type.Object({
    id: Uuid(),
    name: Type.String(),
    points: Type.Array(MachinePoint),
  }), { description: `The active machines by name, at most ${SERIES_MAX_MACHINES}` }),
});
export type MachineSeriesResponse = Static<typeof MachineSeriesResponse>;

type Bounds = { step: number; buckets: number };
function boundsOf(window: SeriesWindow | undefined): Bounds & { window: SeriesWindow } {
  const w = window ?? 'hour';
  return { window: w, step: WINDOWS[w].stepSeconds, buckets: WINDOWS[w].buckets };
}

/**
 * The histogram's bucket b holds times from 2^(b/4) to 2^((b+1)/4) ms; a percentile answers the
 * geometric middle of the bucket where its rank falls.
 */
export function percentileOf(histogram: Array<{ bucket: number; n: number }>, p: number): number | null {
  const sorted = [...histogram].sort((a, b) => a.bucket - b.bucket);
  const total = sorted.reduce((s, h) => s + h.n, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const h of sorted) {
    seen += h.n;
    if (seen >= rank) return Math.round(2 ** ((h.bucket + 0.5) / 4));
  }
  return null;
}

/** A queue's series over the window: one row per bucket, read from the buckets, the histogram and the samples. */
export async function readQueueSeries(sql: Queryable, queue: { id: string }, query: SeriesQuery): Promise<QueueSeriesResponse> {
  const { window, step, buckets } = boundsOf(query.window);
  const [rows, times] = await Promise.all([
    sql<Array<{ at: Date; completed: number; failed: number; backlog: number | null; in_progress: number | null }>>`
      with w as (
        select date_bin(make_interval(secs => ${step}), now(), timestamptz '2000-01-01') as last_at, make_interval(secs => ${step}) as step
      ), b as (
        select generate_series(w.last_at - w.step * ${buckets - 1}, w.last_at, w.step) as at from w
      ), m as (
        select date_bin(w.step, minute, timestamptz '2000-01-01') as at, sum(completed)::bigint as completed, sum(failed)::bigint as failed
        from queue_item_minutes, w where queue_id = ${queue.id} and minute >= w.last_at - w.step * ${buckets - 1}
        group by 1
      ), s as (
        select date_bin(w.step, minute, timestamptz '2000-01-01') as at, max(backlog)::bigint as backlog, max(in_progress)::bigint as in_progress
        from queue_minute_samples, w where queue_id = ${queue.id} and minute >= w.last_at - w.step * ${buckets - 1}
        group by 1
      )
      select b.at, coalesce(m.completed, 0)::bigint as completed, coalesce(m.failed, 0)::bigint as failed, s.backlog, s.in_progress
      from b left join m on m.at = b.at left join s on s.at = b.at
      order by b.at`,
    sql<Array<{ at: Date; bucket: number; n: number }>>`
      select date_bin(make_interval(secs => ${step}), minute, timestamptz '2000-01-01') as at, bucket, sum(n)::bigint as n
      from queue_item_minute_times
      where queue_id = ${queue.id}
        and minute >= date_bin(make_interval(secs => ${step}), now(), timestamptz '2000-01-01') - make_interval(secs => ${step}) * ${buckets - 1}
      group by 1, 2`,
  ]);
  const histograms = new Map<number, Array<{ bucket: number; n: number }>>();
  for (const h of times) {
    const key = h.at.getTime();
    const list = histograms.get(key) ?? [];
    list.push({ bucket: h.bucket, n: Number(h.n) });
    histograms.set(key, list);
  }
  return {
    window,
    step_seconds: step,
    points: rows.map((r) => {
      const histogram = histograms.get(r.at.getTime()) ?? [];
      return {
        at: r.at.toISOString(),
        completed: Number(r.completed),
        failed: Number(r.failed),
        backlog: r.backlog === null ? null : Number(r.backlog),
        in_progress: r.in_progress === null ? null : Number(r.in_progress),
        p50_ms: percentileOf(histogram, 50),
        p95_ms: percentileOf(histogram, 95),
      };
    }),
  };
}

/** Busy slots over the window: the workspace's active machines together, and each of the first by name. */
export async function readMachineSeries(sql: Queryable, tenantId: string, query: SeriesQuery): Promise<MachineSeriesResponse> {
  const { window, step, buckets } = boundsOf(query.window);
  const machines = await sql<Array<{ id: string; name: string }>>`
    select id, name from machines where tenant_id = ${tenantId} and is_active order by name, id limit ${SERIES_MAX_MACHINES}`;
  const ids = machines.map((m) => m.id);
  const [total, each] = await Promise.all([
    sql<Array<{ at: Date; busy: number | null; slots: number | null }>>`
      with w as (
        select date_bin(make_interval(secs => ${step}), now(), timestamptz '2000-01-01') as last_at, make_interval(secs => ${step}) as step
      ), b as (
        select generate_series(w.last_at - w.step * ${buckets - 1}, w.last_at, w.step) as at from w
      ), per_minute as (
        select s.minute, sum(s.busy)::bigint as busy, sum(s.slots)::bigint as slots
        from machine_minute_samples s join machines m on m.id = s.machine_id, w
        where m.tenant_id = ${tenantId} and m.is_active and s.minute >= w.last_at - w.step * ${buckets - 1}
        group by s.minute
      ), t as (
        select date_bin(w.step, minute, timestamptz '2000-01-01') as at, max(busy)::bigint as busy, max(slots)::bigint as slots
        from per_minute, w group by 1
      )
      select b.at, t.busy, t.slots from b left join t on t.at = b.at order by b.at`,
    ids.length === 0 ? Promise.resolve([] as Array<{ machine_id: string; at: Date; busy: number; slots: number }>) : sql<Array<{ machine_id: string; at: Date; busy: number; slots: number }>>`
      select machine_id, date_bin(make_interval(secs => ${step}), minute, timestamptz '2000-01-01') as at, max(busy)::int as busy, max(slots)::int as slots
      from machine_minute_samples
      where machine_id = any(${ids}::uuid[])
        and minute >= date_bin(make_interval(secs => ${step}), now(), timestamptz '2000-01-01') - make_interval(secs => ${step}) * ${buckets - 1}
      group by 1, 2`,
  ]);
  const byMachine = new Map<string, Map<number, { busy: number; slots: number }>>();
  for (const r of each) {
    const m = byMachine.get(r.machine_id) ?? new Map();
    m.set(r.at.getTime(), { busy: Number(r.busy), slots: Number(r.slots) });
    byMachine.set(r.machine_id, m);
  }
  const num = (v: number | null) => (v === null ? null : Number(v));
  return {
    window,
    step_seconds: step,
    total: total.map((r) => ({ at: r.at.toISOString(), busy: num(r.busy), slots: num(r.slots) })),
    machines: machines.map((m) => ({
      id: m.id,
      name: m.name,
      points: total.map((r) => {
        const p = byMachine.get(m.id)?.get(r.at.getTime());
        return { at: r.at.toISOString(), busy: p ? p.busy : null, slots: p ? p.slots : null };
      }),
    })),
  };
}

/**
 * The dispatcher's per-minute samples of every active queue's backlog and every active machine's
 * busy slots. Called on every sweep; the first caller in a minute, whichever replica, claims it and
 * writes, the others find it claimed and stop at the claim.
 */
export async function sampleMinute(sql: Queryable): Promise<{ claimed: boolean; queues: number; machines: number }> {
  const [row] = await sql<Array<{ claimed: number; queues: number; machines: number }>>`
    with claim as (
      insert into stat_sample_minutes (minute) values (date_trunc('minute', now())) on conflict do nothing returning minute
    ), q as (
      insert into queue_minute_samples (queue_id, minute, backlog, in_progress)
        select q.id, c.minute,
               coalesce(sum(k.n) filter (where k.status = 'new'), 0),
               coalesce(sum(k.n) filter (where k.status = 'in_progress'), 0)
        from claim c cross join queues q left join queue_item_counts k on k.queue_id = q.id
        where q.is_active
        group by q.id, c.minute
        on conflict do nothing
        returning 1
    ), m as (
      insert into machine_minute_samples (machine_id, minute, busy, slots)
        select m.id, c.minute, least(m.running_jobs, m.slots), m.slots
        from claim c cross join machines m where m.is_active
        on conflict do nothing
        returning 1
    )
    select (select count(*) from claim)::int as claimed, (select count(*) from q)::int as queues, (select count(*) from m)::int as machines`;
  return { claimed: row!.claimed > 0, queues: row!.queues, machines: row!.machines };
}
