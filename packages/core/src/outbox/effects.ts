import type { Queryable } from '../db/sql';
import type { DispatchJobRef } from '../dispatch/port';
import { currentTraceCarrier } from '../tracing';

/**
 * What a command causes outside Postgres, written to the `outbox` table in the command's own
 * transaction (docs/decisions/outbox.md) and published by the relay after the commit.
 * Every effect is safe to publish twice: jobs go to BullMQ under their job id, nudges and
 * retry hand-offs re-read Postgres, an abort of a run that already ended is ignored.
 */
export type Effect =
  /** jobs were created `pending`: put them on their machines' queues */
  | { kind: 'jobs-created'; jobs: DispatchJobRef[] }
  /** items of the queue became ready (added, re-driven, approved) or it gained a consumer */
  | { kind: 'queue-ready'; queue_id: string; tenant_id: string }
  /** items of the queue became `failed` outside a robot's own retry: apply the retry policy */
  | { kind: 'items-failed'; queue_id: string }
  /** a person asked a running job to stop: its agent aborts the run */
  | { kind: 'job-stop'; job_id: string; machine_id: string }
  /** a person answered a job waiting for input: its agent reads the answer now (docs/decisions/human-input.md) */
  | { kind: 'job-input'; job_id: string; machine_id: string }
  /** the engine ended a running job (timed out, or given up): its agent stops working on it */
  | { kind: 'run-ended'; job_id: string; machine_id: string; reason: 'timeout' | 'lost' }
  /** a machine came back online: its tenant's queues may get consumers now */
  | { kind: 'machine-online'; tenant_id: string; machine_id: string };

export type EffectKind = Effect['kind'];

function payloadOf(effect: Effect): Record<string, unknown> {
  const { kind: _kind, ...payload } = effect;
  return payload;
}

/**
 * Effects recorded on a transaction opened by `inTransactionPublishingAtOnce` (outbox/at-once.ts),
 * by the transaction object itself: effects recorded under a savepoint of it are not listed, since
 * the savepoint may roll back while the transaction commits (the relay still publishes them).
 */
export const effectsOfTransaction = new WeakMap<object, Effect[]>();

/** Writes effects in the caller's transaction (one statement, whatever their number). */
export async function recordEffects(tx: Queryable, effects: readonly Effect[]): Promise<void> {
  if (effects.length === 0) return;
  effectsOfTransaction.get(tx)?.push(...effects);
  // tracing on: each effect carries the recording span's context to the relay that publishes it
  const trace = currentTraceCarrier();
  const rows = effects.map((e) => ({ kind: e.kind, payload: trace ? { ...payloadOf(e), trace } : payloadOf(e) }));
  await tx`
    insert into outbox (kind, payload)
    select e.value->>'kind', e.value->'payload'
    from jsonb_array_elements(${JSON.stringify(rows)}::text::jsonb) with ordinality as e(value, n)
    order by e.n`;
}

export function recordEffect(tx: Queryable, effect: Effect): Promise<void> {
  return recordEffects(tx, [effect]);
}

/** The effects of jobs created in a transaction (none for an empty list). */
export function jobsCreatedEffects(jobs: readonly DispatchJobRef[]): Effect[] {
  return jobs.length ? [{ kind: 'jobs-created', jobs: [...jobs] }] : [];
}

/**
 * The part of a single statement that records one `queue-ready` effect per queue of the rows
 * the data-modifying CTE `ins` returned (its `queue_id` and `tenant_id` columns). Item inserts
 * use it so that the effect commits with the rows without a transaction of their own (one
 * outbox row per queue per statement, however many items it inserts):
 * `with ins as (insert … returning …), ${queueReadyEffectOfInserted(sql)} select … from ins`.
 * Postgres runs a data-modifying CTE to completion even when the main query does not read it.
 */
export function queueReadyEffectOfInserted(sql: Queryable) {
  return sql`fx as (
    insert into outbox (kind, payload)
    select 'queue-ready', jsonb_build_object('queue_id', d.queue_id, 'tenant_id', d.tenant_id)
    from (select distinct queue_id, tenant_id from ins) d)`;
}
