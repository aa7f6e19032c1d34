import { recordCatalogChange, type AuditActor, type CatalogChange } from '../audit/catalog-changes';
import type { Queryable } from '../db/sql';
import type { DispatchPort } from '../dispatch/port';
import type { QueueRow } from './queues';
import { inTransaction } from './shared';

/**
 * The one way a catalogue record changes (docs/decisions/one-place-per-rule.md): the write and
 * its audit row in one transaction, for the settings API and `svc apply` alike, reporting what
 * the change means for the rest of the platform.
 */

/** What a committed catalogue write asks of the platform. */
export type CatalogEffect =
  /** an active queue with a consumer process (new, or changed): its waiting items may need consumers now */
  { kind: 'queue-ready'; queue_id: string; tenant_id: string };

export interface CatalogWrite<T> {
  row: T;
  effects: CatalogEffect[];
}

function effectsOf(change: CatalogChange, row: { id: string }): CatalogEffect[] {
  if (change.resource !== 'queue' || (change.change !== 'create' && change.change !== 'update')) return [];
  const queue = row as unknown as Pick<QueueRow, 'id' | 'tenant_id' | 'is_active' | 'consumer_process_id'>;
  return queue.is_active && queue.consumer_process_id ? [{ kind: 'queue-ready', queue_id: queue.id, tenant_id: queue.tenant_id }] : [];
}

/**
 * Runs `work` (the create, update, deactivation or key rotation of one record of `tenantId`) and
 * writes its audit row, in a new transaction, or under a savepoint of the caller's (so a failed
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
    const effects = effectsOf(change, row);
    // effects: recorded in the transaction once the outbox lands
    return { row, effects };
  });
}

/** After the commit: the dispatcher hears about each effect (until the outbox carries them). */
export async function publishCatalogEffects(dispatch: DispatchPort, effects: readonly CatalogEffect[]): Promise<void> {
  for (const e of effects) {
    if (e.kind === 'queue-ready') await dispatch.queueItemsReady({ id: e.queue_id, tenant_id: e.tenant_id });
  }
}
