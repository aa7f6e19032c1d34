import { type Sql } from '@svc/core';
import { recordHeartbeat } from '@svc/core/internals';
import { createTestContext, seedMachine, seedTenant, type TestContext } from '@svc/testing';

/**
 * A heartbeat says which status it found (`previous`): an agent that finds `offline` tells the
 * dispatcher its machine is back (the `machine-online` nudge starts queue consumers on it).
 */
let ctx: TestContext;
let sql: Sql;
let tenantId: string;

beforeAll(async () => {
  ctx = await createTestContext();
  sql = ctx.sql;
  tenantId = (await seedTenant(sql)).id;
});
afterAll(() => ctx.close());

describe('recordHeartbeat', () => {
  it('reports offline → online for a machine marked offline while the heartbeat waited for it', async () => {
    const { row } = await seedMachine(sql, tenantId, { slots: 2 });
    let beat: Promise<Awaited<ReturnType<typeof recordHeartbeat>>> | null = null;
    // the dispatcher's sweep holds the row, marking the machine offline, when the heartbeat comes
    await sql.begin(async (tx) => {
      await tx`update machines set status = 'offline', running_jobs = 0 where id = ${row.id}`;
      beat = recordHeartbeat(sql, row.id as string, { running: 0 });
      for (const until = Date.now() + 30_000; ; ) {
        if (Date.now() > until) throw new Error('the heartbeat never waited for the row');
        const [waiting] = await sql`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%update machines m%'`;
        if (waiting!.n > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    const hb = await beat!;
    expect(hb).toMatchObject({ previous: 'offline', status: 'online' });
  });

  it('reports the status it replaced in the ordinary case', async () => {
    const { row } = await seedMachine(sql, tenantId, { status: 'offline', slots: 1 });
    expect(await recordHeartbeat(sql, row.id as string, { running: 0 })).toMatchObject({ previous: 'offline', status: 'online' });
    expect(await recordHeartbeat(sql, row.id as string, { running: 1 })).toMatchObject({ previous: 'online', status: 'busy' });
  });
});
