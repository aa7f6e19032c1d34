import type { Queryable } from '../db/sql';
import { statusSqlFor } from '../db/status-sql';
import { itemRetryOutcomes } from '../metrics/domain';
import { observeSettleAndClaim } from '../metrics/items';
import { QUEUE_ITEM_STATUSES, type QueueItemStatus } from './schemas';
import { EXCEPTION_TYPES, type ExceptionType } from './exception-types';
import { QI_COLUMNS, type QueueItemRow } from './repo';
import { es } from '../messages/es';

/**
 * The queue item state machine (docs/architecture.md, invariants 2 and 3). This table is
 * the only place where legal item status changes are written down. Every function below builds
 * its guarded UPDATE from an entry of it (`status = from` in the WHERE, `status = to` in the
 * SET, both written into the SQL text by statusSql), and the statements that hand items to a
 * robot carry a fencing token: the item's `attempt` (bumped on every take) together with the
 * `job_id` that took it. A duplicate or late result matches no row and changes nothing.
 */
export const QUEUE_ITEM_TRANSITIONS = {
  /** A robot takes the item (claimed in the take order below). */
  take: { from: 'new', to: 'in_progress' },
  /** Processing ended well: `result` and `processed_at` are set. */
  complete: { from: 'in_progress', to: 'completed' },
  /** Processing ended asking for a human decision. */
  review: { from: 'in_progress', to: 'pending_review' },
  /**
   * Processing failed (or its robot died): `error_message` and `exception_type` are recorded, an
   * application failure unless the robot said business (docs/decisions/exception-types.md).
   */
  fail: { from: 'in_progress', to: 'failed' },
  /**
   * Engine-internal: an item handed to a consumer in its prefetch buffer but never started (the
   * consumer was asked to stop) goes back untouched; retry_count does not change.
   */
  release: { from: 'in_progress', to: 'new' },
  /** Human review: approved. */
  approve: { from: 'pending_review', to: 'new' },
  /** Human review: rejected, a business failure (final, like any business failure). */
  reject: { from: 'pending_review', to: 'failed' },
  /**
   * Retry policy, over application failures only (a business failure stays `failed`): retries
   * remain (retry_count < queue max_retries); retry_count + 1.
   */
  retry: { from: 'failed', to: 'new' },
  /** Retry policy, application failures: no retries left. Never retried automatically. */
  exhaust: { from: 'failed', to: 'dead_letter' },
  /**
   * Operator retry of a business failure (a bulk retry that asks for them): one more attempt,
   * retry_count kept. Never done by the engine.
   */
  retryBusiness: { from: 'failed', to: 'new' },
  /** Operator re-drive of a dead-letter item; it gets a fresh set of retries (retry_count 0). */
  redrive: { from: 'dead_letter', to: 'new' },
  /** Operator retry of a dead-letter item (a bulk action): one more attempt, retry_count kept. */
  retryDeadLetter: { from: 'dead_letter', to: 'new' },
} as const satisfies Record<string, { from: QueueItemStatus; to: QueueItemStatus }>;

export type QueueItemTransitionName = keyof typeof QUEUE_ITEM_TRANSITIONS;

export function canTransitionItem(from: QueueItemStatus, to: QueueItemStatus): boolean {
  return Object.values(QUEUE_ITEM_TRANSITIONS).some((t) => t.from === from && t.to === to);
}

const T = QUEUE_ITEM_TRANSITIONS;

/** The payload of the updated row `qi` (migration 0029), read only for the rows a statement returns. */
const PAYLOAD_OF_QI_SQL = '(select p.data from queue_item_payloads p where p.id = qi.id)';

/**
 * A status of the table written into the SQL text instead of bound as a parameter: the shared
 * helper of db/status-sql.ts over QUEUE_ITEM_STATUSES (why a literal, and why `unsafe` is safe,
 * are written there). With `status = $n` a generic plan could not use the partial indexes
 * (`queue_items_ready_idx`, `…_in_progress_idx`, `…_failed_idx`) and Postgres would re-plan these
 * statements on every call.
 */
const { statusSql } = statusSqlFor<QueueItemStatus>('queue item', QUEUE_ITEM_STATUSES);

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

export type ItemOutcomeStatus = 'completed' | 'pending_review' | 'failed';


/** How the retry policy's statements and index (migration 0031) tell the failures they may move. */
const RETRYABLE_FAILURE_SQL = "exception_type is distinct from 'business'";

/** The end of one processing, reported by the robot holding the item. */
export interface ItemOutcome {
  id: string;
  /** fencing token from the claim */
  attempt: number;
  status: ItemOutcomeStatus;
  result?: Record<string, unknown> | null;
  error_message?: string | null;
  /** with `failed` only: the kind of the failure, `application` when not said */
  exception?: ExceptionType;
}

const OUTCOME_TRANSITION: Record<ItemOutcomeStatus, (typeof T)[QueueItemTransitionName]> = {
  completed: T.complete,
  pending_review: T.review,
  failed: T.fail,
};

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

function checkOutcomes(outcomes: readonly ItemOutcome[]): void {
  for (const o of outcomes) {
    const t = OUTCOME_TRANSITION[o.status];
    if (!t) throw new Error(`Illegal item outcome ${String(o.status)}`);
    if (o.exception !== undefined && (o.status !== 'failed' || !EXCEPTION_TYPES.includes(o.exception))) {
      throw new Error(`Illegal exception ${String(o.exception)} for an item outcome ${o.status}`);
    }
  }
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
 * such locks in B3: BENCHMARKS.md, "Issues 17 and 20, second session").
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
      update queue_items qi
         set status = o.status,
             result = case when o.status = ${statusSql(sql, T.fail.to)} then qi.result else o.result end,
             -- a success keeps the message of the last failure (why it was retried)
             error_message = case when o.status = ${statusSql(sql, T.fail.to)} then o.error_message else qi.error_message end,
             exception_type = case when o.status = ${statusSql(sql, T.fail.to)} then o.exception_type else qi.exception_type end,
             processed_at = case when o.status = ${statusSql(sql, T.fail.to)} then qi.processed_at else now() end,
             updated_at = now()
        from outcome o
       where qi.id = o.id and qi.job_id = o.job_id and qi.attempt = o.attempt
         -- or already settled so by this very outcome: a repeat after a lost answer is accepted again
         and (qi.status = ${statusSql(sql, T.complete.from)} or qi.status = o.status)
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
 * many robots' connections sends under load (queue-items/settle-batched.ts). Each request gets
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
      update queue_items qi
         set status = o.status,
             result = case when o.status = ${statusSql(sql, T.fail.to)} then qi.result else o.result end,
             error_message = case when o.status = ${statusSql(sql, T.fail.to)} then o.error_message else qi.error_message end,
             exception_type = case when o.status = ${statusSql(sql, T.fail.to)} then o.exception_type else qi.exception_type end,
             processed_at = case when o.status = ${statusSql(sql, T.fail.to)} then qi.processed_at else now() end,
             updated_at = now()
        from outcome o
       where qi.id = o.id and qi.job_id = o.job_id and qi.attempt = o.attempt
         and (qi.status = ${statusSql(sql, T.complete.from)} or qi.status = o.status)
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
 * The outcomes to settle as rows `o(i, id, attempt, status, result, error_message, exception_type, job_id)`: the
 * request each came in (`i`), the fencing pair and the job that must hold the item. They go as
 * arrays, one per column, unnested from a subquery the planner does not look into, so that it
 * counts them as a few rows in every plan:
 * - as one JSON document (jsonb_to_recordset), they count as a hundred rows whatever they hold,
 *   and a hundred lookups by primary key cost more, on paper, than reading a narrow queue_items of
 *   some thousands of rows whole, which the planner then did on every settle;
 * - as arrays it could see, a custom plan counts their exact length and costs less than the
 *   generic plan whenever a round trip settles fewer than a few items, so the prepared statement
 *   would never switch to its generic plan and every round trip would be planned afresh.
 */
function outcomeRowsSql(sql: Queryable, outcomes: ReadonlyArray<ItemOutcome & { i: number; jobId: string }>) {
  return sql`select o.* from (
      select ${outcomes.map((o) => o.i)}::int[] as i, ${outcomes.map((o) => o.id)}::uuid[] as id,
             ${outcomes.map((o) => o.attempt)}::int[] as attempt, ${outcomes.map((o) => OUTCOME_TRANSITION[o.status].to)}::text[] as status,
             ${outcomes.map((o) => (o.result == null ? null : JSON.stringify(o.result)))}::text[]::jsonb[] as result,
             ${outcomes.map((o) => o.error_message ?? null)}::text[] as error_message,
             ${outcomes.map((o) => (o.status === 'failed' ? o.exception ?? 'application' : null))}::text[] as exception_type,
             ${outcomes.map((o) => o.jobId)}::uuid[] as job_id
      offset 0
    ) a cross join lateral unnest(a.i, a.id, a.attempt, a.status, a.result, a.error_message, a.exception_type, a.job_id)
      as o(i, id, attempt, status, result, error_message, exception_type, job_id)`;
}

/**
 * The take's LIMIT written into the SQL text, not sent as a parameter: with a parameter, the
 * planner cannot know how many rows `picked` yields, so the statement's generic plan hashes the
 * whole table to join them (its cost grows with the queue) and Postgres must plan every round
 * trip afresh (a large share of the statement's cost: BENCHMARKS.md, "Issues 17 and 20, second
 * session"). A literal gives each take size a prepared statement whose generic plan
 * is the index walk. A take is at most MAX_TAKE items, so there are few such statements.
 */
function takeLimitSql(sql: Queryable, take: number) {
  if (!Number.isInteger(take) || take < 0 || take > MAX_TAKE) throw new Error(`Illegal take ${String(take)}`);
  return sql.unsafe(String(take));
}

/**
 * After a take whose answer was lost (the connection dropped mid-statement, so the take may or may
 * not have happened): every item this consumer job holds that it does not know of (`held` are
 * the ones it does) was handed to it by that take and never started, so it goes back to `new`
 * untouched (`release`). The job id is the fence: only this consumer job holds items under it.
 */
export async function releaseUnknownClaims(sql: Queryable, jobId: string, held: readonly string[]): Promise<number> {
  const res = await sql`
    update queue_items set status = ${statusSql(sql, T.release.to)}, job_id = null, processed_by = null, started_at = null, updated_at = now()
    where job_id = ${jobId} and status = ${statusSql(sql, T.release.from)} and not (id = any(${held as string[]}::uuid[]))`;
  return res.count;
}

/** `in_progress → new` for items a consumer took but never started (see `release`). */
export async function releaseQueueItems(sql: Queryable, jobId: string, items: ReadonlyArray<{ id: string; attempt: number }>): Promise<number> {
  if (items.length === 0) return 0;
  const res = await sql`
    update queue_items qi set status = ${statusSql(sql, T.release.to)}, job_id = null, processed_by = null, started_at = null, updated_at = now()
    from unnest(${items.map((i) => i.id)}::uuid[], ${items.map((i) => i.attempt)}::int[]) as r(id, attempt)
    where qi.id = r.id and qi.status = ${statusSql(sql, T.release.from)} and qi.job_id = ${jobId} and qi.attempt = r.attempt`;
  return res.count;
}

/**
 * `in_progress → failed` for every item still held by these jobs (their robot died, timed out
 * or ended without settling them). Returns the queues touched, for the retry policy.
 */
export async function failItemsOfJobs(sql: Queryable, jobIds: readonly string[], message: string): Promise<string[]> {
  if (jobIds.length === 0) return [];
  const rows = await sql<{ queue_id: string }[]>`
    update queue_items set status = ${statusSql(sql, T.fail.to)}, error_message = ${message}, exception_type = 'application', updated_at = now()
    where job_id = any(${jobIds as string[]}::uuid[]) and status = ${statusSql(sql, T.fail.from)}
    returning queue_id`;
  return [...new Set(rows.map((r) => r.queue_id))];
}

/**
 * Safety net: items `in_progress` whose job is no longer active (or is gone) → failed. Walks
 * the small partial index of in-progress items.
 */
export async function failOrphanedItems(sql: Queryable, message: string): Promise<string[]> {
  const rows = await sql<{ queue_id: string }[]>`
    update queue_items qi set status = ${statusSql(sql, T.fail.to)}, error_message = ${message}, exception_type = 'application', updated_at = now()
    where qi.status = ${statusSql(sql, T.fail.from)}
      and not exists (select 1 from jobs j where j.id = qi.job_id and j.status in ('pending', 'running', 'waiting_input'))
    returning qi.queue_id`;
  return [...new Set(rows.map((r) => r.queue_id))];
}

/**
 * The retry policy (docs/decisions/dispatch.md): a failed item with retry_count < the queue's max_retries goes
 * back to `new` with retry_count + 1; otherwise `dead_letter`. One set statement over the
 * application failures of one queue (or of all queues), through queue_items_failed_idx: business
 * failures are final and never read here. Returns the queues where items became ready.
 */
export async function applyItemRetryPolicy(sql: Queryable, queueId: string | null = null): Promise<{ retried: number; deadLettered: number; readyQueues: string[] }> {
  const rows = await sql<{ queue_id: string; status: QueueItemStatus }[]>`
    update queue_items qi
       set status = case when qi.retry_count < q.max_retries then ${statusSql(sql, T.retry.to)} else ${statusSql(sql, T.exhaust.to)} end,
           retry_count = case when qi.retry_count < q.max_retries then qi.retry_count + 1 else qi.retry_count end,
           job_id = null, updated_at = now()
      from queues q
     where qi.status = ${statusSql(sql, T.retry.from)} and qi.${sql.unsafe(RETRYABLE_FAILURE_SQL)} and q.id = qi.queue_id
       ${queueId ? sql`and qi.queue_id = ${queueId}` : sql``}
    returning qi.queue_id, qi.status`;
  const retried = rows.filter((r) => r.status === T.retry.to);
  if (retried.length) itemRetryOutcomes.inc({ outcome: 'retried' }, retried.length);
  if (rows.length > retried.length) itemRetryOutcomes.inc({ outcome: 'dead_letter' }, rows.length - retried.length);
  return {
    retried: retried.length,
    deadLettered: rows.length - retried.length,
    readyQueues: [...new Set(retried.map((r) => r.queue_id))],
  };
}

export interface ReviewDecision {
  tenantId: string;
  queueId: string;
  itemId: string;
  /** who decided (recorded as reviewed_by) */
  reviewer: string;
  /** for a rejection: recorded as error_message */
  reason?: string | null;
}

/** Human review, approved: `pending_review → new`. Null when the item is not pending review. */
export async function approveQueueItem(sql: Queryable, d: ReviewDecision): Promise<QueueItemRow | null> {
  const [row] = await sql<QueueItemRow[]>`
    update queue_items qi set status = ${statusSql(sql, T.approve.to)}, reviewed_by = ${d.reviewer}, reviewed_at = now(), job_id = null, updated_at = now()
    where id = ${d.itemId} and queue_id = ${d.queueId} and tenant_id = ${d.tenantId} and status = ${statusSql(sql, T.approve.from)}
    returning ${sql(QI_COLUMNS)}, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data`;
  return row ?? null;
}

/** Human review, rejected: `pending_review → failed`, a business failure (final, never retried by the policy). */
export async function rejectQueueItem(sql: Queryable, d: ReviewDecision): Promise<QueueItemRow | null> {
  const [row] = await sql<QueueItemRow[]>`
    update queue_items qi set status = ${statusSql(sql, T.reject.to)}, reviewed_by = ${d.reviewer}, reviewed_at = now(),
           error_message = ${d.reason ?? es.queues.rejectedInReview}, exception_type = 'business', updated_at = now()
    where id = ${d.itemId} and queue_id = ${d.queueId} and tenant_id = ${d.tenantId} and status = ${statusSql(sql, T.reject.from)}
    returning ${sql(QI_COLUMNS)}, ${sql.unsafe(PAYLOAD_OF_QI_SQL)} as data`;
  return row ?? null;
}

/**
 * Operator re-drive: `dead_letter → new` for the given items (or every dead-letter item of the
 * queue when `itemIds` is null), with retry_count reset so the retry policy starts afresh.
 */
export async function redriveDeadLetterItems(
  sql: Queryable,
  q: { tenantId: string; queueId: string; itemIds: readonly string[] | null },
): Promise<number> {
  const res = await sql`
    update queue_items set status = ${statusSql(sql, T.redrive.to)}, retry_count = 0, job_id = null, updated_at = now()
    where queue_id = ${q.queueId} and tenant_id = ${q.tenantId} and status = ${statusSql(sql, T.redrive.from)}
      ${q.itemIds ? sql`and id = any(${q.itemIds as string[]}::uuid[])` : sql``}`;
  return res.count;
}

/**
 * dead_letter → new for one more attempt (retry_count kept): the bulk action `retry`; with
 * `business`, business failures too (failed → new, retry_count kept), only when asked for.
 */
export async function retryEndedItems(
  sql: Queryable,
  q: { tenantId: string; queueId: string; itemIds: readonly string[]; business: boolean },
): Promise<number> {
  const res = await sql`
    update queue_items set status = ${statusSql(sql, T.retryDeadLetter.to)}, job_id = null, updated_at = now()
    where queue_id = ${q.queueId} and tenant_id = ${q.tenantId} and id = any(${q.itemIds as string[]}::uuid[])
      and (status = ${statusSql(sql, T.retryDeadLetter.from)}
           ${q.business ? sql`or (status = ${statusSql(sql, T.retryBusiness.from)} and exception_type = 'business')` : sql``})`;
  return res.count;
}
