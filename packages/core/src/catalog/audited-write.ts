import { recordCatalogChange, type AuditActor, type CatalogChange } from '../audit/catalog-changes';
import { inTransaction, type Queryable } from '../db/sql';
import { recordEffects, type Effect } from '../outbox/effects';
import type { QueueRow } from './queues';
import type { TriggerRow } from './triggers';

/**
 * The one way a catalogue record changes (docs/decisions/one-place-per-rule.md): the write, its
 * audit row and its effects (outbox/effects.ts) in one transaction, for the settings API and
 * `svc apply` alike.
 */

/**
 * What a catalogue write causes: an active, unpaused queue with an active trigger (its consumer
 * settings, or a queue trigger; new, changed or resumed) may start consumers for its waiting
 * items now; so may the queue of a created or changed active trigger.
 */
export type CatalogEffect = Extract<Effect, { kind: 'queue-ready' }>;

export interface CatalogWrite<T> {
  row: T;
  effects: CatalogEffect[];
}

async function effectsOf(tx: Queryable, change: CatalogChange, row: { id: string }): Promise<CatalogEffect[]> {
  if (!['create', 'update', 'resume'].includes(change.change)) return [];
  if (change.resource === 'trigger') {
    const trigger = row as unknown as Pick<TriggerRow, 'queue_id' | 'tenant_id' | 'is_active'>;
    return trigger.is_active ? [{ kind: 'queue-ready', queue_id: trigger.queue_id, tenant_id: trigger.tenant_id }] : [];
  }
  if (change.resource !== 'queue') return [];
  const queue = row as unknown as Pick<QueueRow, 'id' | 'tenant_id' | 'is_active' | 'is_paused'>;
  if (!queue.is_active || queue.is_paused) return [];
  const [fed] = await tx`select 1 from triggers where queue_id = ${queue.id} and is_active limit 1`;
  return fed ? [{ kind: 'queue-ready', queue_id: queue.id, tenant_id: queue.tenant_id }] : [];
}

/**
 * Runs `work` (the create, update, deactivation or key rotation of one record of `tenantId`) and
 * writes its audit row and effects, in a new transaction, or under a savepoint of the caller's (so a failed
 * write leaves neither the change nor its row). `work` must use the `tx` it is given.
 */
export async function writeCatalogEntity<T extends { id: string }>(
  db: Queryable,
  actor: AuditActor,
  tenantId: string,
  change: CatalogChange,
  work: (tx: Queryable) => Promise<T>,
): Promise<CatalogWrite<T>> {
  return inTransaction(db, async (tx) => {
    const row = await work(tx);
    await recordCatalogChange(tx, actor, { tenantId, resourceId: row.id }, change);
    const effects = await effectsOf(tx, change, row);
    await recordEffects(tx, effects);
    return { row, effects };
  });
}
