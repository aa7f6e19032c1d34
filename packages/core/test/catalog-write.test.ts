import { CLI_ACTOR, ConflictError, type AuditActor } from '@svc/core';
import {
  createFolder, createMachine, createProcess, createQueue, createTrigger, deactivateTrigger, drainOutbox,
  rotateMachineKey, setQueuePaused, updateQueue, updateTrigger, writeCatalogEntity, noopDispatch, type CatalogEffect,
  type DispatchPort, type Tx,
} from '@svc/core/internals';
import { databaseSuite, seedTenant } from '@svc/testing';

/** The one catalogue write: the change and its audit row together, for the settings API and `svc apply`. */
const db = databaseSuite();
const API_ACTOR: AuditActor = { actorType: 'user', actorId: '00000000-0000-4000-8000-0000000000aa', source: 'api', requestId: 'req-7', ip: '10.1.2.3' };

const audits = (tenantId: string) => db.sql`
  select action, actor_type, actor_id, source, resource_type, resource_id, details, request_id, ip from audit_log
  where tenant_id = ${tenantId} order by id`;

describe('writeCatalogEntity', () => {
  it('writes the same audit row for the settings API (own transaction) and svc apply (inside its transaction), differing only in the actor', async () => {
    const tenant = await seedTenant(db.sql);
    const api = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'create', resource: 'folder', name: 'by-api' },
      (tx) => createFolder(tx, tenant.id, { name: 'by-api' }));
    const cli = await db.sql.begin((outer: Tx) =>
      writeCatalogEntity(outer, CLI_ACTOR, tenant.id, { change: 'create', resource: 'folder', name: 'by-cli' },
        (tx) => createFolder(tx, tenant.id, { name: 'by-cli' })));
    expect(await audits(tenant.id)).toEqual([
      { action: 'create_folder', actor_type: 'user', actor_id: API_ACTOR.actorId, source: 'api', resource_type: 'folder',
        resource_id: api.row.id, details: { name: 'by-api' }, request_id: 'req-7', ip: '10.1.2.3' },
      { action: 'create_folder', actor_type: 'system', actor_id: null, source: 'cli', resource_type: 'folder',
        resource_id: cli.row.id, details: { name: 'by-cli' }, request_id: null, ip: null },
    ]);
    expect(api.effects).toEqual([]);
  });

  it('keeps neither the change nor its row when the write fails, and the caller\'s transaction goes on', async () => {
    const tenant = await seedTenant(db.sql);
    await createFolder(db.sql, tenant.id, { name: 'taken' });
    const failed = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'create', resource: 'folder', name: 'taken' },
      (tx) => createFolder(tx, tenant.id, { name: 'taken' })).catch((e) => e);
    expect(failed).toBeInstanceOf(ConflictError);
    const kept = await db.sql.begin(async (outer: Tx) => {
      const broken = await writeCatalogEntity(outer, CLI_ACTOR, tenant.id, { change: 'create', resource: 'folder', name: 'half' }, async (tx) => {
        await createFolder(tx, tenant.id, { name: 'half' });
        throw new Error('broke after the insert');
      }).catch((e: Error) => e.message);
      expect(broken).toBe('broke after the insert');
      return (await writeCatalogEntity(outer, CLI_ACTOR, tenant.id, { change: 'create', resource: 'folder', name: 'whole' },
        (tx) => createFolder(tx, tenant.id, { name: 'whole' }))).row;
    });
    const folders = await db.sql`select name from folders where tenant_id = ${tenant.id} order by name`;
    expect(folders.map((f) => f.name)).toEqual(['taken', 'whole']);
    expect((await audits(tenant.id)).map((r) => [r.action, r.resource_id])).toEqual([['create_folder', kept.id]]);
  });

  it('names updated fields, audits deactivation and key rotation, and never stores a machine key', async () => {
    const tenant = await seedTenant(db.sql);
    const made = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'create', resource: 'machine', name: 'robot-1' }, async (tx) => {
      const m = await createMachine(tx, tenant.id, { name: 'robot-1' });
      return { id: m.row.id, ...m };
    });
    const rotated = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'rotate-key', resource: 'machine' }, async (tx) => {
      const m = await rotateMachineKey(tx, tenant.id, made.row.id);
      return { id: m.row.id, ...m };
    });
    const rows = await audits(tenant.id);
    expect(rows.map((r) => [r.action, r.resource_type, r.resource_id, r.details])).toEqual([
      ['create_machine', 'machine', made.row.id, { name: 'robot-1' }],
      ['rotate_machine_key', 'machine', made.row.id, {}],
    ]);
    for (const key of [made.row.machineKey, rotated.row.machineKey]) expect(JSON.stringify(rows)).not.toContain(key);
  });

  it('reports a queue that may need consumers (active, with a consumer process), and records it for the dispatcher in the same transaction', async () => {
    const tenant = await seedTenant(db.sql);
    const consumer = await createProcess(db.sql, tenant.id, { name: 'consumer' });
    const bare = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'create', resource: 'queue', name: 'bare' },
      (tx) => createQueue(tx, tenant.id, { name: 'bare' }));
    expect(bare.effects).toEqual([]);
    const fed = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'update', resource: 'queue', fields: ['consumer_process_id'] },
      (tx) => updateQueue(tx, tenant.id, bare.row.id, { consumer_process_id: consumer.id }));
    const ready: CatalogEffect[] = [{ kind: 'queue-ready', queue_id: bare.row.id, tenant_id: tenant.id }];
    expect(fed.effects).toEqual(ready);
    const off = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'update', resource: 'queue', fields: ['is_active'] },
      (tx) => updateQueue(tx, tenant.id, bare.row.id, { is_active: false }));
    expect(off.effects).toEqual([]);

    const heard: Array<{ id: string; tenant_id: string }> = [];
    const port: DispatchPort = { ...noopDispatch, queueItemsReady: async (q) => void heard.push(q) };
    await drainOutbox(db.sql, port);
    expect(heard.filter((q) => q.id === bare.row.id)).toEqual([{ id: bare.row.id, tenant_id: tenant.id }]);
    expect((await audits(tenant.id)).map((r) => [r.action, r.details])).toEqual([
      ['create_queue', { name: 'bare' }],
      ['update_queue', { fields: ['consumer_process_id'] }],
      ['update_queue', { fields: ['is_active'] }],
    ]);
  });

  it('nudges the queue of a created or changed active trigger, and a queue fed only by such a trigger when it resumes', async () => {
    const tenant = await seedTenant(db.sql);
    const proc = await createProcess(db.sql, tenant.id, { name: 'worker' });
    const queue = await createQueue(db.sql, tenant.id, { name: 'fed-by-trigger' });
    const ready: CatalogEffect[] = [{ kind: 'queue-ready', queue_id: queue.id, tenant_id: tenant.id }];
    const made = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'create', resource: 'trigger', name: `queue:${queue.id}` },
      (tx) => createTrigger(tx, tenant.id, { type: 'queue', queue_id: queue.id, process_id: proc.id }));
    expect(made.effects).toEqual(ready);
    const changed = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'update', resource: 'trigger', fields: ['min_items_to_start'] },
      (tx) => updateTrigger(tx, tenant.id, made.row.id, { min_items_to_start: 3 }));
    expect(changed.effects).toEqual(ready);
    const resumed = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'resume', resource: 'queue' },
      (tx) => setQueuePaused(tx, tenant.id, queue.id, false));
    expect(resumed.effects).toEqual(ready);
    const off = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'deactivate', resource: 'trigger' },
      (tx) => deactivateTrigger(tx, tenant.id, made.row.id));
    expect(off.effects).toEqual([]);
    const idle = await writeCatalogEntity(db.sql, API_ACTOR, tenant.id, { change: 'resume', resource: 'queue' },
      (tx) => setQueuePaused(tx, tenant.id, queue.id, false));
    expect(idle.effects).toEqual([]);
  });
});
