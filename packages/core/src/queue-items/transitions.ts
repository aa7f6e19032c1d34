import type { Queryable } from '../db/sql';
import { statusSqlFor } from '../db/status-sql';
import { QUEUE_ITEM_STATUSES, type QueueItemStatus } from './schemas';
import { EXCEPTION_TYPES, type ExceptionType } from './exception-types';

/**
 * The queue item state machine (docs/architecture.md, invariants 2 and 3). This table is
 * the only place where legal item status changes are written down. Every statement that changes
 * an item's status (the release and fail writes below, the settle and take of take.ts, the retries
 * of retry.ts, the review decisions of review.ts) builds its guarded UPDATE from an entry of it
 * (`status = from` in the WHERE, `status = to` in the SET, both written into the SQL text by
 * queueItemStatusSql), and the statements that hand items to a robot carry a fencing token: the
 * item's `attempt` (bumped on every take) together with the `job_id` that took it. A duplicate or
 * late result matches no row and changes nothing.
 */
export const QUEUE_ITEM_TRANSITIONS = {
  /** A robot takes the item (claimed in the take order, take.ts). */
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
export const PAYLOAD_OF_QI_SQL = '(select p.data from queue_item_payloads p where p.id = qi.id)';

/**
 * A status of the table written into the SQL text instead of bound as a parameter: the shared
 * helper of db/status-sql.ts over QUEUE_ITEM_STATUSES (why a literal, and why `unsafe` is safe,
 * are written there). With `status = $n` a generic plan could not use the partial indexes
 * (`queue_items_ready_idx`, `…_in_progress_idx`, `…_failed_idx`) and Postgres would re-plan these
 * statements on every call.
 */
export const { statusSql: queueItemStatusSql } = statusSqlFor<QueueItemStatus>('queue item', QUEUE_ITEM_STATUSES);
const statusSql = queueItemStatusSql;

/** What a robot may report at the end of an item, and the transition each one is (the settle of take.ts). */
export type ItemOutcomeStatus = 'completed' | 'pending_review' | 'failed';

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

/** Refuses an outcome other than the three a robot may report, and an exception type that is unknown or not on a failure. */
export function checkOutcomes(outcomes: readonly ItemOutcome[]): void {
  for (const o of outcomes) {
    const t = OUTCOME_TRANSITION[o.status];
    if (!t) throw new Error(`Illegal item outcome ${String(o.status)}`);
    if (o.exception !== undefined && (o.status !== 'failed' || !EXCEPTION_TYPES.includes(o.exception))) {
      throw new Error(`Illegal exception ${String(o.exception)} for an item outcome ${o.status}`);
    }
  }
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
export function outcomeRowsSql(sql: Queryable, outcomes: ReadonlyArray<ItemOutcome & { i: number; jobId: string }>) {
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
