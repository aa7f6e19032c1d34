import type { Sql } from '../db/sql';
import { insertJob } from '../jobs/repo';
import type { DispatchJobRef } from './port';
import { jobsCreatedEffects, recordEffects } from '../outbox/effects';

/**
 * Queue → jobs (docs/decisions/dispatch.md "Queue consumers"): a queue names the process that consumes it
 * (`consumer_process_id`) and the most consumer jobs at once (`max_consumers`). When it has
 * ready items and fewer active (pending or running) consumer jobs than that, consumer jobs of the
 * process are created on online machines with free slots, spread by free capacity.
 *
 * Two dispatchers (or a nudge and a sweep) may decide at once: the decision and the inserts run
 * under a row lock on the queue, so max_consumers is never exceeded.
 */
interface QueueState {
  id: string;
  tenant_id: string;
  name: string;
  consumer_process_id: string;
  max_consumers: number;
  sla_deadline_minutes: number | null;
  active: number;
  ready: boolean;
}

/**
 * Whether the queue has an item ready now, asked as "the first ready item in take order" rather
 * than `exists (…)`: EXISTS drops any ORDER BY, and for a queue whose waiting items are a large
 * share of the table the planner then expects a sequential scan to meet one at once, while the
 * heap holds the finished history first. Ordered like the take, only `queue_items_ready_idx`
 * answers it cheaply (index-only: postpone is included), whatever the values.
 */
function readyExists(sql: Sql, queueIdColumn: ReturnType<Sql>) {
  return sql`((select true from queue_items i where i.queue_id = ${queueIdColumn} and i.status = 'new'
                 and (i.postpone is null or i.postpone <= now())
               order by i.priority desc, i.deadline asc nulls last, i.created_at asc, i.id
               limit 1) is not null)`;
}

async function queueState(sql: Sql, queueId: string, lock: boolean): Promise<QueueState | null> {
  if (lock) {
    // lock first, count after, in separate statements: under READ COMMITTED a statement that
    // waited for the lock would still count with the snapshot taken before the wait
    const [locked] = await sql`select id from queues where id = ${queueId} for no key update`;
    if (!locked) return null;
  }
  const [row] = await sql<QueueState[]>`
    select q.id, q.tenant_id, q.name, q.consumer_process_id, q.max_consumers, p.sla_deadline_minutes,
           (select count(*) from jobs j where j.queue_id = q.id and j.status in ('pending', 'running'))::int as active,
           ${readyExists(sql, sql`q.id`)} as ready
    from queues q join processes p on p.id = q.consumer_process_id and p.is_active
    where q.id = ${queueId} and q.is_active and not q.is_paused`;
  return row ?? null;
}

/** Creates the consumer jobs a queue needs now, with their jobs-created effect; returns them. */
export async function startQueueConsumers(sql: Sql, queueId: string): Promise<DispatchJobRef[]> {
  // cheap look without a lock first: most nudges find the queue already fully consumed
  const peek = await queueState(sql, queueId, false);
  if (!peek || !peek.ready || peek.active >= peek.max_consumers) return [];
  return sql.begin(async (txn) => {
    const tx = txn as unknown as Sql;
    const q = await queueState(tx, queueId, true);
    if (!q || !q.ready || q.active >= q.max_consumers) return [];
    const wanted = q.max_consumers - q.active;
    const [counted] = await tx<Array<{ ready: number }>>`
      select count(*)::int as ready from (
        select 1 from queue_items where queue_id = ${q.id} and status = 'new' and (postpone is null or postpone <= now())
        limit ${wanted}) r`;
    const ready = counted!.ready;
    const machines = await tx<Array<{ id: string; free: number }>>`
      select m.id, (m.slots - (select count(*) from jobs a where a.machine_id = m.id and a.status in ('pending', 'running')))::int as free
      from machines m
      where m.tenant_id = ${q.tenant_id} and m.is_active and m.status = 'online'`;
    const free = machines.filter((m) => m.free > 0).sort((a, b) => b.free - a.free || (a.id < b.id ? -1 : 1));
    const created: DispatchJobRef[] = [];
    let n = Math.min(wanted, ready);
    while (n > 0 && free.length > 0) {
      free.sort((a, b) => b.free - a.free);
      const m = free[0]!;
      const job = await insertJob(tx, {
        tenantId: q.tenant_id,
        processId: q.consumer_process_id,
        machineId: m.id,
        priority: 3,
        inputData: { queue_id: q.id, queue_name: q.name },
        source: 'queue',
        slaDeadlineMinutes: q.sla_deadline_minutes,
        queueId: q.id,
      });
      if (job) created.push({ id: job.id, tenant_id: job.tenant_id, machine_id: job.machine_id, priority: job.priority, sla_due_at: job.sla_due_at });
      m.free -= 1;
      if (m.free <= 0) free.shift();
      n -= 1;
    }
    await recordEffects(tx, jobsCreatedEffects(created));
    return created;
  });
}

/** Queues (optionally of one tenant) that have ready items and room for more consumers. */
export async function queuesNeedingConsumers(sql: Sql, tenantId: string | null = null): Promise<string[]> {
  const rows = await sql<Array<{ id: string }>>`
    select q.id from queues q join processes p on p.id = q.consumer_process_id and p.is_active
    where q.is_active and not q.is_paused ${tenantId ? sql`and q.tenant_id = ${tenantId}` : sql``}
      and (select count(*) from jobs j where j.queue_id = q.id and j.status in ('pending', 'running')) < q.max_consumers
      and ${readyExists(sql, sql`q.id`)}`;
  return rows.map((r) => r.id);
}

/**
 * Whether other jobs wait for this machine (pending, due). A consumer job holds a slot for as long
 * as its queue has items; it checks this now and then and gives the slot up, so a steady stream
 * of items never starves the machine's other jobs (the queue gets a new consumer afterwards).
 */
export async function machineHasWaitingJobs(sql: Sql, machineId: string, exceptJobId: string): Promise<boolean> {
  const [row] = await sql<Array<{ waiting: boolean }>>`
    select exists (select 1 from jobs where machine_id = ${machineId} and status = 'pending' and id <> ${exceptJobId}
                   and (not_before is null or not_before <= now())) as waiting`;
  return row!.waiting;
}
