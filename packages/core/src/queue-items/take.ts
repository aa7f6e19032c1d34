import type { Queryable } from '../db/sql';
import { observeSettleAndClaim } from '../metrics/items';
import type { QueueItemStatus } from './schemas';
import {
  PAYLOAD_OF_QI_SQL, QUEUE_ITEM_TRANSITIONS as T, checkOutcomes, outcomeRowsSql, queueItemStatusSql as statusSql, type ItemOutcome,
} from './transitions';

/**
 * The take: a consumer's round trip that settles the outcomes of the items it finished and takes
 * the next ready items (settleAndClaimItems; settleAndClaimItemsBatch for many consumers in one
 * statement), and its pieces: the take order, the most items one take may hold, and the read past
 * a queue's claim floor (CLAIM_FLOOR, docs/decisions/claim-floor.md). The status changes are
 * entries of the table of transitions.ts, and so are the outcomes the settle accepts.
 */

/**
 * The take order (README.md "Queue item order"), over items ready to take (status new and
 * `postpone` passed): priority DESC, items with a deadline before those without, nearest
 * deadline first, then FIFO by created_at (id breaks exact ties). The claim's ORDER BY below is
 * the same rule and walks the partial index `queue_items_ready_idx`.
 */
export interface TakeOrderKey {
  id: string;
  priority: number;
  /** microseconds since the epoch, or null */
  deadline_us: number | null;
  created_us: number;
}

export function compareTakeOrder(a: TakeOrderKey, b: TakeOrderKey): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.deadline_us !== b.deadline_us) {
    if (a.deadline_us === null) return 1;
    if (b.deadline_us === null) return -1;
    return a.deadline_us - b.deadline_us;
  }
  if (a.created_us !== b.created_us) return a.created_us - b.created_us;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** An item as handed to a robot: what it needs to process it, and the fencing token. */
export interface ClaimedItem extends TakeOrderKey {
  attempt: number;
  queue_id: string;
  reference: string | null;
  data: Record<string, unknown>;
  retry_count: number;
}

/** The most items one round trip may take (a consumer's `prefetch` is 1..100). */
export const MAX_TAKE = 100;

export interface SettleAndClaim {
  queueId: string;
  /** The consumer job that holds (and takes) the items. */
  jobId: string;
  /** The consumer job's own fencing token: items are taken only while that run still owns the job. */
  jobAttempt: number;
  /** Recorded as `processed_by` on the items it takes. */
  machineId: string;
  outcomes: readonly ItemOutcome[];
  /** How many items to take now (0 = only settle). */
  take: number;
}

export interface SettleAndClaimResult {
  /** The outcomes the guard accepted (stale ones are absent). */
  settled: Array<{ id: string; status: QueueItemStatus }>;
  /** Items taken, in the take order. */
  claimed: ClaimedItem[];
}

/** How the take reads the ready items (the CLAIM_FLOOR setting, docs/decisions/claim-floor.md). */
export interface TakeOptions {
  /** start each priority's items without a deadline at the queue's claim floor */
  floor?: boolean;
}

/** Item priorities, most urgent first (the `priority between 1 and 5` check of queue_items). */
export const PRIORITIES_DESC = [5, 4, 3, 2, 1] as const;

/** A queue's claim floor as SQL: -infinity when it has none (docs/decisions/claim-floor.md). */
export function floorOfSql(sql: Queryable, queueId: unknown) {
  return sql`coalesce((select f.floor from queue_ready_floor f where f.queue_id = ${queueId}), '-infinity'::timestamptz)`;
}

/**
 * The first `limit` ready items of one queue in the take order, locked (`FOR UPDATE SKIP
 * LOCKED`), read past the queue's claim floor: for each priority, most urgent first, the items
 * with a deadline (all of them: they are few), then those without one created at or after the
 * floor (`floorSql`, -infinity when the queue has none). Each part is a range of
 * queue_items_ready_idx in the index's own order, and Append reads the parts one after the
 * other under the one LIMIT, so the parts after the one that fills the take never run and only
 * the rows returned are locked (`lock`: the take; the consumer decisions only read). Every part repeats the whole ORDER BY: with the priority and the
 * deadline's nullness fixed it is the index order, which the planner sees only through the
 * columns it names.
 */
export function readyPastFloorSql(sql: Queryable, queueId: unknown, limit: unknown, floorSql: unknown, lock = true) {
  const parts = PRIORITIES_DESC.flatMap((p) => {
    const priority = sql.unsafe(String(p));
    // a locking clause is refused on a branch of a UNION itself, not in a subquery below it
    const part = (bound: unknown) => sql`(select * from (
      select id, status, priority, deadline, created_at from queue_items
       where queue_id = ${queueId} and status = ${statusSql(sql, T.take.from)} and priority = ${priority} and ${bound}
         and (postpone is null or postpone <= now())
       order by priority desc, deadline asc nulls last, created_at asc, id
       limit ${limit}
       ${lock ? sql`for update skip locked` : sql``}) part)`;
    return [part(sql`deadline is not null`), part(sql`deadline is null and created_at >= ${floorSql}`)];
  });
  return parts.reduce((all, part) => sql`${all} union all ${part}`);
}

/**
 * One round trip for a consumer's loop: settle the outcomes of the items it finished and take
 * the next `take` ready items, as one statement.
 *
 * Settle: `in_progress → completed | pending_review | failed` where `job_id = $job AND attempt =
 * $token` (a stale holder matches nothing); the same outcome sent again after a lost answer finds
 * the item already settled so and is accepted again (only `processed_at` moves). Take:
 * `new → in_progress` over the first `take` ready items in the take order, `FOR UPDATE SKIP
 * LOCKED` so concurrent consumers never take the same item and never wait on each other; `attempt + 1` is the new fencing token. Items are taken
 * only while the consumer job is still `running` under `jobAttempt`: a run the engine gave up on
 * (its machine was declared offline, it timed out) takes nothing more.
 *
 * The take runs before the settle inside the statement. The ready index still lists items that
 * other consumers took a moment ago; when such a take committed after this statement's snapshot,
 * `FOR UPDATE` follows the item to its new version and locks it before seeing it is no longer
 * `new`, and that lock lasts until this statement commits, so the item's own consumer waits for
 * it to settle the item. Taking right after the snapshot keeps that window short (fewer waits on
 * such locks in B3).
 *
 * `opts.floor` (CLAIM_FLOOR=on): the same order, read past the queue's claim floor
 * (readyPastFloorSql; an item the floor passed over waits for its next recomputation,
 * docs/decisions/claim-floor.md); without it the statement is the one above, word for word.
 */
export async function settleAndClaimItems(sql: Queryable, req: SettleAndClaim, opts: TakeOptions = {}): Promise<SettleAndClaimResult> {
  checkOutcomes(req.outcomes);
  const [row] = await sql<Array<{ settled: SettleAndClaimResult['settled']; claimed: ClaimedItem[]; completed_ages: number[] }>>`
    with outcome as (
      ${outcomeRowsSql(sql, req.outcomes.map((o) => ({ ...o, i: 0, jobId: req.jobId })))}
    ), settled as (
      ${settleFromOutcome(sql)}
      returning qi.id, qi.status, extract(epoch from now() - qi.created_at)::float8 as age_s
    ), ${opts.floor ? sql`ready_floor as (
      select ${floorOfSql(sql, req.queueId)} as f
    ), ` : sql``}picked as (${opts.floor ? sql`
      select id, status from (${readyPastFloorSql(sql, req.queueId, takeLimitSql(sql, req.take), sql`(select f from ready_floor)`)}) ready
       where exists (select 1 from jobs where id = ${req.jobId} and status = 'running' and attempt = ${req.jobAttempt})
         and not exists (select 1 from queues where id = ${req.queueId} and is_paused)
       limit ${takeLimitSql(sql, req.take)}` : sql`
      select id, status from queue_items
       where queue_id = ${req.queueId} and status = ${statusSql(sql, T.take.from)} and (postpone is null or postpone <= now())
         and exists (select 1 from jobs where id = ${req.jobId} and status = 'running' and attempt = ${req.jobAttempt})
         -- a paused queue hands out nothing: its consumers finish what they hold and end
         and not exists (select 1 from queues where id = ${req.queueId} and is_paused)
       order by priority desc, deadline asc nulls last, created_at asc, id
       limit ${takeLimitSql(sql, req.take)}
       for update skip locked`}
    ), claimed as (
      update queue_items qi
         set status = ${statusSql(sql, T.take.to)}, job_id = ${req.jobId}, attempt = qi.attempt + 1, processed_by = ${req.machineId},
             started_at = now(), updated_at = now()
        from picked
       -- the status the take locked the row in ('new'), not the literal: with the literal the
       -- planner may find the row through the ready index, every ready item of every queue
       -- filtered by id, and does whenever its statistics say few items are ready (a burst after
       -- the last analysis): each take then walks the whole backlog. With a column of the
       -- picked row, only the primary key finds it.
       where qi.id = picked.id and qi.status = picked.status
      returning qi.id, qi.queue_id, qi.attempt, qi.priority, qi.reference, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data, qi.retry_count,
                (extract(epoch from qi.deadline) * 1000000)::bigint as deadline_us,
                (extract(epoch from qi.created_at) * 1000000)::bigint as created_us
    )
    -- the take runs first, right after the statement's snapshot (see above)
    select (select coalesce(jsonb_agg(to_jsonb(claimed)), '[]'::jsonb) from claimed) as claimed,
           (select coalesce(jsonb_agg(jsonb_build_object('id', id, 'status', status)), '[]'::jsonb) from settled) as settled,
           (select coalesce(jsonb_agg(age_s), '[]'::jsonb) from settled where status = ${statusSql(sql, T.complete.to)}) as completed_ages`;
  const claimed = row!.claimed.map((c) => ({ ...c, deadline_us: c.deadline_us === null ? null : Number(c.deadline_us), created_us: Number(c.created_us) }));
  claimed.sort(compareTakeOrder);
  observeSettleAndClaim(row!.settled, row!.completed_ages, claimed.length);
  return { settled: row!.settled, claimed };
}

/**
 * Several consumers' round trips (settleAndClaimItems) as one statement: what the API holding
 * many robots' connections sends under load (queue-items/batched-settle.ts). Each request gets
 * exactly what it would have got alone — its own settled outcomes (fenced by its job and each
 * item's attempt) and up to `take` items of its queue, only while its job still runs under its
 * attempt — except that the items of one queue are picked once, in the take order, for all the
 * requests on it (a request earlier in the batch gets the earlier items), so two requests never
 * race for the same row inside the statement.
 */
export async function settleAndClaimItemsBatch(sql: Queryable, reqs: readonly SettleAndClaim[], opts: TakeOptions = {}): Promise<SettleAndClaimResult[]> {
  for (const r of reqs) {
    checkOutcomes(r.outcomes);
    if (!Number.isInteger(r.take) || r.take < 0 || r.take > MAX_TAKE) throw new Error(`Illegal take ${String(r.take)}`);
  }
  const requests = reqs.map((r, i) => ({ i, queue_id: r.queueId, job_id: r.jobId, job_attempt: r.jobAttempt, machine_id: r.machineId, take: r.take }));
  const outcomes = reqs.flatMap((r, i) => r.outcomes.map((o) => ({ ...o, i, jobId: r.jobId })));
  const [row] = await sql<Array<{ settled: Array<{ i: number; id: string; status: QueueItemStatus }>; claimed: Array<ClaimedItem & { i: number }>; completed: Array<{ i: number; age_s: number }> }>>`
    with req as (
      select * from jsonb_to_recordset(${sql.json(requests as never)}::jsonb)
        as r(i int, queue_id uuid, job_id uuid, job_attempt int, machine_id uuid, take int)
    ), outcome as (
      ${outcomeRowsSql(sql, outcomes)}
    ), settled as (
      ${settleFromOutcome(sql)}
      returning o.i, qi.id, qi.status, extract(epoch from now() - qi.created_at)::float8 as age_s
    ), live as (
      select r.* from req r
       where r.take > 0
         and exists (select 1 from jobs j where j.id = r.job_id and j.status = 'running' and j.attempt = r.job_attempt)
         and not exists (select 1 from queues q where q.id = r.queue_id and q.is_paused)
    ), slot as (
      select l.i, l.queue_id, l.job_id, l.machine_id, l.take,
             (sum(l.take) over (partition by l.queue_id order by l.i) - l.take)::int as lo
        from live l
    ), picked as (
      select d.queue_id, c.id, c.status,
             row_number() over (partition by d.queue_id order by c.priority desc, c.deadline asc nulls last, c.created_at asc, c.id) as rn
        from (select queue_id, sum(take)::int as n${opts.floor ? sql`,
                     ${floorOfSql(sql, sql`live.queue_id`)} as floor` : sql``} from live group by queue_id) d
        cross join lateral (${opts.floor ? sql`
          select id, status, priority, deadline, created_at from (${readyPastFloorSql(sql, sql`d.queue_id`, sql`d.n`, sql`d.floor`)}) ready
           limit d.n` : sql`
          select id, status, priority, deadline, created_at from queue_items
           where queue_id = d.queue_id and status = ${statusSql(sql, T.take.from)} and (postpone is null or postpone <= now())
           order by priority desc, deadline asc nulls last, created_at asc, id
           limit d.n
           for update skip locked`}) c
    ), assigned as (
      select p.id, p.status, s.i, s.job_id, s.machine_id from picked p join slot s on s.queue_id = p.queue_id and p.rn > s.lo and p.rn <= s.lo + s.take
    ), claimed as (
      update queue_items qi
         set status = ${statusSql(sql, T.take.to)}, job_id = a.job_id, attempt = qi.attempt + 1, processed_by = a.machine_id,
             started_at = now(), updated_at = now()
        from assigned a
       -- the status the take locked the row in, not the literal (see settleAndClaimItems)
       where qi.id = a.id and qi.status = a.status
      returning a.i, qi.id, qi.queue_id, qi.attempt, qi.priority, qi.reference, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data, qi.retry_count,
                (extract(epoch from qi.deadline) * 1000000)::bigint as deadline_us,
                (extract(epoch from qi.created_at) * 1000000)::bigint as created_us
    )
    -- the take runs first, right after the statement's snapshot (see settleAndClaimItems)
    select (select coalesce(jsonb_agg(to_jsonb(claimed)), '[]'::jsonb) from claimed) as claimed,
           (select coalesce(jsonb_agg(jsonb_build_object('i', i, 'id', id, 'status', status)), '[]'::jsonb) from settled) as settled,
           (select coalesce(jsonb_agg(jsonb_build_object('i', i, 'age_s', age_s)), '[]'::jsonb) from settled where status = ${statusSql(sql, T.complete.to)}) as completed`;
  const results: SettleAndClaimResult[] = reqs.map(() => ({ settled: [], claimed: [] }));
  const ages: number[][] = reqs.map(() => []);
  for (const { i, ...c } of row!.claimed) {
    results[i]!.claimed.push({ ...c, deadline_us: c.deadline_us === null ? null : Number(c.deadline_us), created_us: Number(c.created_us) });
  }
  for (const { i, id, status } of row!.settled) results[i]!.settled.push({ id, status });
  for (const { i, age_s } of row!.completed) ages[i]!.push(age_s);
  results.forEach((r, i) => {
    r.claimed.sort(compareTakeOrder);
    observeSettleAndClaim(r.settled, ages[i]!, r.claimed.length);
  });
  return results;
}

/**
 * The take's LIMIT written into the SQL text, not sent as a parameter: with a parameter, the
 * planner cannot know how many rows `picked` yields, so the statement's generic plan hashes the
 * whole table to join them (its cost grows with the queue) and Postgres must plan every round
 * trip afresh (a large share of the statement's cost). A
 * literal gives each take size a prepared statement whose generic plan is the index walk. A take is at most MAX_TAKE items, so there are few such statements.
 */
function takeLimitSql(sql: Queryable, take: number) {
  if (!Number.isInteger(take) || take < 0 || take > MAX_TAKE) throw new Error(`Illegal take ${String(take)}`);
  return sql.unsafe(String(take));
}

/**
 * The settle of both statements: each item of `outcome` takes its status and result from it when
 * it is still this run's and `in_progress`, or already settled so by this very outcome (a repeat
 * after a lost answer is accepted again). A success keeps the message of the last failure (why it
 * was retried).
 */
function settleFromOutcome(sql: Queryable) {
  const failed = statusSql(sql, T.fail.to);
  return sql`update queue_items qi
         set status = o.status,
             result = case when o.status = ${failed} then qi.result else o.result end,
             error_message = case when o.status = ${failed} then o.error_message else qi.error_message end,
             exception_type = case when o.status = ${failed} then o.exception_type else qi.exception_type end,
             processed_at = case when o.status = ${failed} then qi.processed_at else now() end,
             updated_at = now()
        from outcome o
       where qi.id = o.id and qi.job_id = o.job_id and qi.attempt = o.attempt
         and (qi.status = ${statusSql(sql, T.complete.from)} or qi.status = o.status)`;
}
