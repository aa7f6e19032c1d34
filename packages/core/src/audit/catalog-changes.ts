import type { Queryable } from '../db/sql';
import { recordAudit, type AuditEntry } from './audit';

/**
 * The audit row of a catalogue write (folders, processes, machines, queues, assets), one shape
 * for every way a catalogue changes: the settings API (an admin, source `api`) and `svc apply`
 * (the operator's CLI, actor `system`, source `cli`). Both write it through core's
 * writeCatalogEntity (catalog/audited-write.ts), in the transaction of the change, so the log
 * never claims a change that did not commit.
 *
 * Action `<change>_<resource>` (`create_folder`, `update_queue`, `deactivate_asset`…), and
 * `rotate_machine_key` for a machine's new key. Details name what changed and never carry a
 * value: `{name}` on create, `{fields}` (field names) on update, nothing on deactivate or key
 * rotation. Asset values may be secrets, so the shape leaves no room for one.
 */
export type CatalogResource = 'folder' | 'process' | 'machine' | 'queue' | 'asset' | 'schedule' | 'trigger';

export type CatalogChange =
  | { change: 'create'; resource: CatalogResource; name: string }
  | { change: 'update'; resource: CatalogResource; fields: readonly string[] }
  | { change: 'deactivate'; resource: CatalogResource }
  /** A machine's new key (action `rotate_machine_key`); the key itself is never in the row. */
  | { change: 'rotate-key'; resource: 'machine' }
  /** A queue paused or resumed (actions `pause_queue`, `resume_queue`). */
  | { change: 'pause' | 'resume'; resource: 'queue' };

/** Who changed it, and through what. */
export type AuditActor = Pick<AuditEntry, 'actorType' | 'actorId' | 'source' | 'requestId' | 'ip'>;

/** The CLI acts as the platform's operator: no user or key of the workspace. */
export const CLI_ACTOR: AuditActor = { actorType: 'system', source: 'cli' };

export async function recordCatalogChange(
  tx: Queryable,
  actor: AuditActor,
  target: { tenantId: string; resourceId: string },
  c: CatalogChange,
): Promise<void> {
  const details = c.change === 'create' ? { name: c.name } : c.change === 'update' ? { fields: [...c.fields] } : {};
  await recordAudit(tx, {
    ...actor,
    tenantId: target.tenantId,
    action: c.change === 'rotate-key' ? 'rotate_machine_key' : `${c.change}_${c.resource}`,
    resourceType: c.resource,
    resourceId: target.resourceId,
    details,
  });
}
