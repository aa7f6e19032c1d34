import type { Gauge } from 'prom-client';
import type { Sql } from '../db/sql';
import { gauge } from './registry';
import { readQueueLateItems } from '../catalog/queue-stats';

/**
 * Gauges of the platform's state, read from Postgres when scraped (never per request), at most
 * once per `ttlMs` however many scrapes and replicas ask: the reads use the per-status counter
 * rows (`queue_item_counts`), index probes and small tables, never a scan of items or jobs.
 * Cardinality: queue series exist for at most `maxQueues` queues (the largest by item count); the
 * rest are summed into one series labelled tenant="_other", queue="_other"
 * (docs/decisions/observability.md). The API serves these; every replica reports the same values.
 */
export interface PlatformGaugeOptions {
  /** how long one read from Postgres answers scrapes */
  ttlMs?: number;
  /** queues with their own series (tenant, queue); the rest share `_other` */
  maxQueues?: number;
}

export const OTHER_LABEL = '_other';

const queueItems = gauge<'tenant' | 'queue' | 'status'>({
  name: 'svc_queue_items',
  collect: fillOnce,
  help: 'Queue items by tenant, queue and status (from the per-status counters; queues beyond the bound are summed into _other).',
  labelNames: ['tenant', 'queue', 'status'],
});
const oldestReady = gauge<'tenant' | 'queue'>({
  name: 'svc_queue_oldest_ready_item_age_seconds',
  collect: fillOnce,
  help: 'Age of the oldest item waiting (status new) in each queue with its own series; 0 when none waits.',
  labelNames: ['tenant', 'queue'],
});
const lateItems = gauge<'tenant' | 'queue'>({
  name: 'svc_queue_late_items',
  collect: fillOnce,
  help: "Ready items of each queue with its own series that would finish after their deadline at the current pace (the stats' forecast.late_items; 0 when none has a deadline or nothing completed in the last hour).",
  labelNames: ['tenant', 'queue'],
});
const machines = gauge<'status'>({
  name: 'svc_machines',
  collect: fillOnce,
  help: 'Active machines by status (online, busy, offline).',
  labelNames: ['status'],
});
const outboxBacklog = gauge({
  name: 'svc_outbox_backlog',
  collect: fillOnce,
  help: 'Effects waiting in the outbox for the relay (counted up to 100000).',
});
const outboxAge = gauge({
  name: 'svc_outbox_oldest_age_seconds',
  collect: fillOnce,
  help: 'Age of the oldest effect waiting in the outbox; 0 when empty.',
});
const pgConnections = gauge<'state'>({
  name: 'svc_pg_connections',
  collect: fillOnce,
  help: "The platform's Postgres connections as Postgres sees them (pg_stat_activity), by state; active = in use.",
  labelNames: ['state'],
});
const stateUp = gauge({
  name: 'svc_platform_state_up',
  collect: fillOnce,
  help: '1 when the last read of the platform state from Postgres succeeded, else 0.',
});

interface Snapshot {
  queueItems: Array<{ tenant: string; queue: string; status: string; n: number }>;
  oldest: Array<{ tenant: string; queue: string; age: number }>;
  late: Array<{ tenant: string; queue: string; n: number }>;
  machines: Array<{ status: string; n: number }>;
  backlog: number;
  outboxAge: number;
  pg: Array<{ state: string; n: number }>;
}

let source: { sql: Sql; ttlMs: number; maxQueues: number } | null = null;
let cached: { at: number; snapshot: Promise<Snapshot> } | null = null;

/** Makes this process's scrapes report the platform state read through `sql` (the API does). */
export function registerPlatformGauges(sql: Sql, opts: PlatformGaugeOptions = {}): void {
  source = { sql, ttlMs: opts.ttlMs ?? 5_000, maxQueues: opts.maxQueues ?? 200 };
  cached = null;
}

/** prom-client renders the metrics in parallel: every gauge waits for the same fill. */
let filling: Promise<void> | null = null;
function fillOnce(): Promise<void> {
  filling ??= fill().finally(() => { filling = null; });
  return filling;
}

async function fill(): Promise<void> {
  if (!source) return;
  const now = Date.now();
  if (!cached || now - cached.at >= source.ttlMs) cached = { at: now, snapshot: read(source.sql, source.maxQueues) };
  const all: Gauge<string>[] = [queueItems, oldestReady, lateItems, machines, outboxBacklog, outboxAge, pgConnections];
  for (const g of all) g.reset();
  let s: Snapshot;
  try {
    s = await cached.snapshot;
  } catch {
    cached = null;
    stateUp.set(0);
    return;
  }
  stateUp.set(1);
  for (const r of s.queueItems) queueItems.set({ tenant: r.tenant, queue: r.queue, status: r.status }, r.n);
  for (const r of s.oldest) oldestReady.set({ tenant: r.tenant, queue: r.queue }, r.age);
  for (const r of s.late) lateItems.set({ tenant: r.tenant, queue: r.queue }, r.n);
  for (const r of s.machines) machines.set({ status: r.status }, r.n);
  outboxBacklog.set(s.backlog);
  outboxAge.set(s.outboxAge);
  for (const r of s.pg) pgConnections.set({ state: r.state }, r.n);
}

async function read(sql: Sql, maxQueues: number): Promise<Snapshot> {
  const counts = await sql<Array<{ queue_id: string; tenant: string; queue: string; status: string; n: number; ranked: boolean }>>`
    with per_queue as (
      select queue_id, status, sum(n)::bigint as n from queue_item_counts group by queue_id, status
    ), ranked as (
      select queue_id from per_queue group by queue_id order by sum(n) desc, queue_id limit ${maxQueues}
    )
    select p.queue_id, t.name as tenant, q.name as queue, p.status, p.n, p.queue_id in (select queue_id from ranked) as ranked
      from per_queue p join queues q on q.id = p.queue_id join tenants t on t.id = q.tenant_id`;
  const queueItems: Snapshot['queueItems'] = [];
  const other = new Map<string, number>();
  const ranked = new Set<string>();
  for (const r of counts) {
    if (r.ranked) {
      ranked.add(r.queue_id);
      queueItems.push({ tenant: r.tenant, queue: r.queue, status: r.status, n: Number(r.n) });
    } else {
      other.set(r.status, (other.get(r.status) ?? 0) + Number(r.n));
    }
  }
  for (const [status, n] of other) queueItems.push({ tenant: OTHER_LABEL, queue: OTHER_LABEL, status, n });
  const [oldest, late, machineRows, [outbox], pg] = await Promise.all([
    // one backward probe of (queue_id, status, created_at desc) per queue with its own series
    sql<Array<{ tenant: string; queue: string; age: number | null }>>`
      select t.name as tenant, q.name as queue,
             extract(epoch from now() - (select qi.created_at from queue_items qi
                                          where qi.queue_id = q.id and qi.status = 'new'
                                          order by qi.created_at asc limit 1))::float8 as age
        from queues q join tenants t on t.id = q.tenant_id
       where q.id = any(${[...ranked]}::uuid[])`,
    readLateItems(sql, [...ranked]),
    sql<Array<{ status: string; n: number }>>`select status, count(*)::int as n from machines where is_active group by status`,
    sql<Array<{ backlog: number; age: number | null }>>`
      select (select count(*)::int from (select 1 from outbox limit 100000) o) as backlog,
             extract(epoch from now() - (select created_at from outbox order by id limit 1))::float8 as age`,
    sql<Array<{ state: string | null; n: number }>>`
      select state, count(*)::int as n from pg_stat_activity
       where datname = current_database() and application_name = 'svc' group by state`,
  ]);
  return {
    queueItems,
    oldest: oldest.map((r) => ({ tenant: r.tenant, queue: r.queue, age: Math.max(0, r.age ?? 0) })),
    late,
    machines: machineRows,
    backlog: outbox?.backlog ?? 0,
    outboxAge: Math.max(0, outbox?.age ?? 0),
    pg: pg.map((r) => ({ state: r.state ?? 'unknown', n: r.n })),
  };
}

/**
 * The deadline forecast's late items of the queues with their own series. Only a queue with a
 * ready item that has a deadline can have one late (one probe of queue_items_deadline_idx each);
 * the others are 0 without reading their forecast. Those with one are read one after another:
 * each is a bounded read (docs/decisions/deadline-forecast.md), and a scrape must not take the
 * pool from the requests.
 */
async function readLateItems(sql: Sql, queueIds: string[]): Promise<Snapshot['late']> {
  const queues = await sql<Array<{ id: string; tenant_id: string; is_active: boolean; is_paused: boolean; tenant: string; queue: string; deadlines: boolean }>>`
    select q.id, q.tenant_id, q.is_active, q.is_paused, t.name as tenant, q.name as queue,
           exists (select 1 from queue_items qi where qi.queue_id = q.id and qi.status = 'new' and qi.deadline is not null) as deadlines
      from queues q join tenants t on t.id = q.tenant_id
     where q.id = any(${queueIds}::uuid[])`;
  const late: Snapshot['late'] = [];
  for (const q of queues) {
    const n = q.deadlines ? await readQueueLateItems(sql, q) : 0;
    late.push({ tenant: q.tenant, queue: q.queue, n: n ?? 0 });
  }
  return late;
}
