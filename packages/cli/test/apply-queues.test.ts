import { ConflictError, ValidationError } from '@svc/core';
import { createCliEngine } from '../src/db';
import { databaseSuite, seedTenant } from '@svc/testing';
import { applyWorkspace } from '../src/workspace/apply';

/** A queue's `unique_references` in a workspace file (docs/workspace-file.md), applied in process. */
describe('svc apply: unique_references of a queue', () => {
  const s = databaseSuite();
  const apply = (tenantId: string, doc: unknown) => applyWorkspace(createCliEngine(s.sql, {}), tenantId, doc);
  const setting = async (tenantId: string, name: string) =>
    (await s.sql<Array<{ unique_references: boolean }>>`select unique_references from queues where tenant_id = ${tenantId} and name = ${name}`)[0]?.unique_references;

  it('creates a queue with it, changes nothing the second time, and turns it off and on again', async () => {
    const tenant = await seedTenant(s.sql);
    const doc = { queues: [{ name: 'invoices', unique_references: true }] };
    expect((await apply(tenant.id, doc)).resources[0]).toMatchObject({ name: 'invoices', action: 'created' });
    expect(await setting(tenant.id, 'invoices')).toBe(true);
    expect((await apply(tenant.id, doc)).summary).toEqual({ created: 0, updated: 0, unchanged: 1 });
    const off = await apply(tenant.id, { queues: [{ name: 'invoices', unique_references: false }] });
    expect(off.resources[0]).toMatchObject({ action: 'updated', changed: ['unique_references'] });
    expect(await setting(tenant.id, 'invoices')).toBe(false);
    // left out of the file, the setting stays as it is
    expect((await apply(tenant.id, { queues: [{ name: 'invoices' }] })).summary).toEqual({ created: 0, updated: 0, unchanged: 1 });
    expect((await apply(tenant.id, doc)).resources[0]).toMatchObject({ action: 'updated', changed: ['unique_references'] });
  });

  it('refuses to turn it on over items that share a reference, applying nothing of the file', async () => {
    const tenant = await seedTenant(s.sql);
    await apply(tenant.id, { queues: [{ name: 'orders' }] });
    const [q] = await s.sql<Array<{ id: string; name: string }>>`select id, name from queues where tenant_id = ${tenant.id}`;
    const engine = createCliEngine(s.sql, {});
    await engine.items.addMany({ id: q!.id, tenant_id: tenant.id, name: q!.name }, [{ data: {}, reference: 'O-1' }, { data: {}, reference: 'O-1' }]);
    const refused = apply(tenant.id, { folders: [{ name: 'Never' }], queues: [{ name: 'orders', unique_references: true }] });
    await expect(refused).rejects.toBeInstanceOf(ConflictError);
    await expect(refused).rejects.toMatchObject({ details: { duplicate_references: 1, duplicate_items: 2 } });
    expect(await setting(tenant.id, 'orders')).toBe(false);
    expect(await s.sql`select 1 from folders where tenant_id = ${tenant.id}`).toHaveLength(0);
  });

  it('refuses a value that is not a boolean, naming the entry and field', async () => {
    const tenant = await seedTenant(s.sql);
    for (const value of ['yes', null, 1]) {
      const err = await apply(tenant.id, { queues: [{ name: 'q', unique_references: value }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues.map((i) => i.field)).toContain('body → queues → 0 → unique_references');
    }
  });
});
