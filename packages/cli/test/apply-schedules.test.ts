import { ValidationError } from '@svc/core';
import { createCliEngine } from '../src/db';
import { databaseSuite, seedTenant } from '@svc/testing';
import { applyWorkspace } from '../src/workspace/apply';

/** The `schedules` section of a workspace file (docs/workspace-file.md), applied in process. */
describe('svc apply: schedules', () => {
  const s = databaseSuite();

  async function refusal(tenantId: string, doc: unknown): Promise<string[]> {
    try {
      await applyWorkspace(createCliEngine(s.sql, {}), tenantId, doc);
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      return (err as ValidationError).issues.map((i) => i.field);
    }
    throw new Error('the file was applied');
  }

  it('creates a schedule naming a process and a machine of the same file, and changes nothing the second time', async () => {
    const tenant = await seedTenant(s.sql);
    const doc = {
      processes: [{ name: 'reports' }],
      machines: [{ name: 'robot-a' }],
      schedules: [{ name: 'weekly', process: 'reports', machine: 'robot-a', cron: '0 8 * * 1', timezone: 'Europe/Madrid', priority: 4 }],
    };
    const first = await applyWorkspace(createCliEngine(s.sql, {}), tenant.id, doc);
    expect(first.resources.find((r) => r.kind === 'schedule')).toMatchObject({ name: 'weekly', action: 'created' });
    const [row] = await s.sql`
      select s.*, p.name as process_name, m.name as machine_name from schedules s
      join processes p on p.id = s.process_id join machines m on m.id = s.machine_id where s.tenant_id = ${tenant.id}`;
    expect(row).toMatchObject({ process_name: 'reports', machine_name: 'robot-a', cron: '0 8 * * 1', timezone: 'Europe/Madrid', priority: 4, is_active: true });
    const second = await applyWorkspace(createCliEngine(s.sql, {}), tenant.id, doc);
    expect(second.summary).toEqual({ created: 0, updated: 0, unchanged: 3 });
    const [again] = await s.sql`select updated_at, next_run_at from schedules where id = ${row!.id}`;
    expect(again).toEqual({ updated_at: row!.updated_at, next_run_at: row!.next_run_at });

    const third = await applyWorkspace(createCliEngine(s.sql, {}), tenant.id, { schedules: [{ name: 'weekly', machine: null, is_active: false }] });
    expect(third.resources[0]).toMatchObject({ action: 'updated', changed: ['is_active', 'machine'] });
    const [off] = await s.sql`select machine_id, next_run_at, is_active from schedules where id = ${row!.id}`;
    expect(off).toEqual({ machine_id: null, next_run_at: null, is_active: false });
  });

  it('refuses an entry it cannot apply, naming the entry and the field, and applies nothing', async () => {
    const tenant = await seedTenant(s.sql);
    const at = (field: string) => `body → schedules → 0 → ${field}`;
    expect(await refusal(tenant.id, { schedules: [{ name: 'x', process: 'ghost', cron: '* * * * *' }] })).toEqual([at('process')]);
    expect(await refusal(tenant.id, { processes: [{ name: 'p' }], schedules: [{ name: 'x', cron: '* * * * *' }] })).toEqual([at('process')]);
    expect(await refusal(tenant.id, { processes: [{ name: 'p' }], schedules: [{ name: 'x', process: 'p' }] })).toEqual([at('cron')]);
    expect(await refusal(tenant.id, { processes: [{ name: 'p' }], schedules: [{ name: 'x', process: 'p', cron: '99 * * * *' }] })).toEqual([at('cron')]);
    expect(await refusal(tenant.id, { processes: [{ name: 'p' }], schedules: [{ name: 'x', process: 'p', cron: '* * * * *', timezone: 'Moon/Base' }] }))
      .toEqual([at('timezone')]);
    expect(await refusal(tenant.id, { processes: [{ name: 'p' }], schedules: [{ name: 'x', process: 'p', cron: '* * * * *', machine: 'nobody' }] }))
      .toEqual([at('machine')]);
    expect(await refusal(tenant.id, { schedules: [{ name: 'x', process_id: 'p' }] })).toContain(at('process_id'));
    const [{ n }] = await s.sql`select count(*)::int as n from processes where tenant_id = ${tenant.id}`;
    expect(n).toBe(0);
  });
});
