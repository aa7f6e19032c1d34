import { createMachine, deactivateMachine, listMachineNames } from '@svc/core/internals';
import { databaseSuite, seedTenant } from '@svc/testing';

/** The queues board's list of a workspace's machines. */
const db = databaseSuite();

describe('listMachineNames', () => {
  it('lists every machine of the tenant by name, inactive ones included, and no other tenant\'s', async () => {
    const tenant = await seedTenant(db.sql);
    const other = await seedTenant(db.sql);
    const b = (await createMachine(db.sql, tenant.id, { name: 'robot-b' })).row;
    const a = (await createMachine(db.sql, tenant.id, { name: 'robot-a' })).row;
    await createMachine(db.sql, other.id, { name: 'robot-0' });
    await deactivateMachine(db.sql, tenant.id, b.id);
    expect(await listMachineNames(db.sql, tenant.id)).toEqual([
      { id: a.id, name: 'robot-a', is_active: true },
      { id: b.id, name: 'robot-b', is_active: false },
    ]);
  });
});
