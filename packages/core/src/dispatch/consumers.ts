import type { Sql } from '../db/sql';
import { insertJob } from '../jobs/repo';
import type { DispatchJobRef, DispatchPort } from './port';
import type { Logger } from '../logger';
import { inTransactionPublishingAtOnce } from '../outbox/at-once';
import { floorOfSql, readyPastFloorSql } from '../queue-items/take';
import { jobsCreatedEffects, recordEffects } from '../outbox/effects';

/**
 * Queue → jobs (docs/decisions/triggers.md): a queue's active triggers each name a process, the
 * most jobs of theirs at once (`max_concurrent_jobs`), the fewest ready items worth a start
 * (`min_items_to_start`) and optionally a machine. While the queue has at least that many ready
 * items and the trigger fewer active (pending or running) jobs than its maximum, consumer jobs of
 * the process are created: on the trigger's machine when it names one, else on online unattended
 * machines with free slots, spread by free capacity. A queue's own consumer settings are its
 * default trigger (migration 0011 keeps them in step).
 *
 * Two dispatchers (or a nudge and a sweep) may decide at once: the decision and the inserts run
 * under a row lock on the queue, so no trigger's maximum is ever exceeded.
 */
interface TriggerState {
  id: string;
  tenant_id: string;
  queue_id: string;
  queue_name: string;
  process_id: string;
  machine_id: string | null;
  max_concurrent_jobs: number;
  min_items_to_start: number;
  sla_deadline_minutes: number | null;
  active: number;
}

/**
 * Whether the queue has at least `n` items ready now, asked as "the first n ready items in take
 * order" rather than `exists (…)` or a bare count: EXISTS drops any ORDER BY, and for a queue whose
 * waiting items are a large share of the table the planner then expects a sequential scan to meet
 * them at once, while the heap holds the finished history first. Ordered like the take, only
 * `queue_items_ready_idx` answers it cheaply (index-only: postpone is included), whatever the values.
 */
function readyAtLeast(sql: Sql, queueIdColumn: ReturnType<Sql>, n: ReturnType<Sql>, floor: boolean) {
  return sql`((select count(*) from ${readySql(sql, queueIdColumn, n, floor)} r) >= ${n})`;
}

/**
 * The first `n` ready items of a queue in take order, as a subquery. With the claim floors
 * engaged (`floor`: CLAIM_FLOOR=on, or auto while vacuum is held back) it reads past the queue's
 * floor as the take does (docs/decisions/claim-floor.md): from the head of the index it would
 * visit, on every nudge, the entry of every item taken since vacuum last ran.
 */
function readySql(sql: Sql, queueIdColumn: ReturnType<Sql>, n: ReturnType<Sql>, floor: boolean) {
  if (!floor) {
    return sql`(select 1 from queue_items i where i.queue_id = ${queueIdColumn} and i.status = 'new'
                 and (i.postpone is null or i.postpone <= now())
               order by i.priority desc, i.deadline asc nulls last, i.created_at asc, i.id
               limit ${n})`;
  }
  return sql`(select 1 from (${readyPastFloorSql(sql, queueIdColumn, n, floorOfSql(sql, queueIdColumn), false)}) ready limit ${n})`;
}

/** The active job count of a trigger (jobs_trigger_active_idx). */
function activeOf(sql: Sql, triggerIdColumn: ReturnType<Sql>) {
  return sql`(select count(*) from jobs j where j.trigger_id = ${triggerIdColumn} and j.status in ('pending', 'running', 'waiting_input'))`;
}

/**
 * The queue's triggers that may start a job now: active, of an active process, on an active
 * unpaused queue, with room under their maximum and enough ready items.
 */
async function triggersWithWork(sql: Sql, queueId: string, lock: boolean, floor: boolean): Promise<TriggerState[]> {
  if (lock) {
    // lock first, count after, in separate statements: under READ COMMITTED a statement that
    // waited for the lock would still count with the snapshot taken before the wait
    const [locked] = await sql`select id from queues where id = ${queueId} for no key update`;
    if (!locked) return [];
  }
  return sql<TriggerState[]>`
    select * from (
      select t.id, t.tenant_id, t.queue_id, q.name as queue_name, t.process_id, t.machine_id, t.max_concurrent_jobs,
             t.min_items_to_start, p.sla_deadline_minutes, ${activeOf(sql, sql`t.id`)}::int as active,
             t.is_queue_default, t.created_at
      from triggers t
      join queues q on q.id = t.queue_id and q.is_active and not q.is_paused
      join processes p on p.id = t.process_id and p.is_active
      where t.queue_id = ${queueId} and t.is_active and ${readyAtLeast(sql, sql`t.queue_id`, sql`t.min_items_to_start`, floor)}
    ) s
    where s.active < s.max_concurrent_jobs
    -- when ready items or machines run short, the queue's own consumer goes first, then the oldest
    order by s.is_queue_default desc, s.created_at, s.id`;
}

/** Creates the consumer jobs a queue's triggers need now, with their jobs-created effect; returns them. */
export async function startQueueConsumers(sql: Sql, queueId: string, opts: { floor?: boolean; atOnce?: DispatchPort; logger?: Logger } = {}): Promise<DispatchJobRef[]> {
  const floor = opts.floor ?? false;
  // cheap look without a lock first: most nudges find the queue already fully consumed
  if ((await triggersWithWork(sql, queueId, false, floor)).length === 0) return [];
  // the jobs go to their machines' queues right after the commit, not a relay pass later
  return inTransactionPublishingAtOnce({ sql, atOnce: opts.atOnce, logger: opts.logger }, async (txn) => {
    const tx = txn as unknown as Sql;
    const triggers = await triggersWithWork(tx, queueId, true, floor);
    if (triggers.length === 0) return [];
    const t0 = triggers[0]!;
    // one count serves every trigger: enough to tell each one's minimum and all their room
    const enough = Math.max(...triggers.map((t) => t.min_items_to_start), triggers.reduce((n, t) => n + t.max_concurrent_jobs - t.active, 0));
    const [counted] = await tx<Array<{ ready: number }>>`
      select count(*)::int as ready from ${readySql(tx, tx`${queueId}::uuid`, tx`${enough}`, floor)} r`;
    let ready = counted!.ready;
    const named = triggers.map((t) => t.machine_id).filter((id): id is string => id !== null);
    // auto-selection never picks an attended machine (a person's desktop); a trigger may name one
    const machines = await tx<Array<{ id: string; free: number; kind: string }>>`
      select m.id, m.kind, (m.slots - (select count(*) from jobs a where a.machine_id = m.id and a.status in ('pending', 'running', 'waiting_input')))::int as free
      from machines m
      where m.tenant_id = ${t0.tenant_id} and m.is_active and m.status = 'online'
        and (m.kind = 'unattended' or m.id = any(${named}::uuid[]))`;
    const free = machines.filter((m) => m.free > 0);
    const created: DispatchJobRef[] = [];
    for (const t of triggers) {
      if (ready < t.min_items_to_start) continue;
      let n = Math.min(t.max_concurrent_jobs - t.active, ready);
      while (n > 0) {
        const candidates = free.filter((m) => m.free > 0 && (t.machine_id === null ? m.kind === 'unattended' : m.id === t.machine_id));
        if (candidates.length === 0) break;
        candidates.sort((a, b) => b.free - a.free || (a.id < b.id ? -1 : 1));
        const m = candidates[0]!;
        const job = await insertJob(tx, {
          tenantId: t.tenant_id,
          processId: t.process_id,
          machineId: m.id,
          priority: 3,
          inputData: { queue_id: t.queue_id, queue_name: t.queue_name },
          source: 'queue',
          slaDeadlineMinutes: t.sla_deadline_minutes,
          queueId: t.queue_id,
          triggerId: t.id,
        });
        if (job) created.push({ id: job.id, tenant_id: job.tenant_id, machine_id: job.machine_id, priority: job.priority, sla_due_at: job.sla_due_at });
        m.free -= 1;
        ready -= 1;
        n -= 1;
      }
    }
    await recordEffects(tx, jobsCreatedEffects(created));
    return created;
  });
}

/** Queues (optionally of one tenant) with a trigger that has ready items enough and room for more jobs. */
export async function queuesNeedingConsumers(sql: Sql, tenantId: string | null = null, opts: { floor?: boolean } = {}): Promise<string[]> {
  const rows = await sql<Array<{ id: string }>>`
    select distinct t.queue_id as id from triggers t
    join queues q on q.id = t.queue_id and q.is_active and not q.is_paused
    join processes p on p.id = t.process_id and p.is_active
    where t.is_active ${tenantId ? sql`and t.tenant_id = ${tenantId}` : sql``}
      and ${activeOf(sql, sql`t.id`)} < t.max_concurrent_jobs
      and ${readyAtLeast(sql, sql`t.queue_id`, sql`t.min_items_to_start`, opts.floor ?? false)}`;
  return rows.map((r) => r.id);
}

/**
 * Whether other jobs wait for this machine (pending, due). A consumer job holds a slot for as long
 * as its queue has items; it checks this now and then and gives the slot up, so a steady stream
 * of items never starves the machine's other jobs (the queue gets a new consumer afterwards).
 */
/**
 * When the earliest pending job of a machine may start (now or later: a retry's delay), or null
 * when none waits: a robot that connects has its machine's queue read only if there is work.
 */
export async function earliestPendingStart(sql: Sql, machineId: string): Promise<Date | null> {
  const [row] = await sql<Array<{ at: Date | null; any: boolean }>>`
    select min(coalesce(not_before, now())) as at, count(*) > 0 as any
      from jobs where machine_id = ${machineId} and status = 'pending'`;
  return row?.any ? row.at : null;
}

export async function machineHasWaitingJobs(sql: Sql, machineId: string, exceptJobId: string): Promise<boolean> {
  const [row] = await sql<Array<{ waiting: boolean }>>`
    select exists (select 1 from jobs where machine_id = ${machineId} and status = 'pending' and id <> ${exceptJobId}
                   and (not_before is null or not_before <= now())) as waiting`;
  return row!.waiting;
}
