import type { Sql } from '@svc/core';
import { findMachinesByKeys, recordHeartbeat, recordHeartbeats, recordLiveness } from '@svc/core/internals';
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

describe('recordHeartbeats (many robots of one API process in one statement)', () => {
  it('gives each report the effect of its own heartbeat, in order: unknown machines, repeats and comebacks', async () => {
    const back = (await seedMachine(sql, tenantId, { status: 'offline', slots: 1 })).row.id as string;
    const steady = (await seedMachine(sql, tenantId, { status: 'online', slots: 2 })).row.id as string;
    const missing = '00000000-0000-4000-8000-000000000000';
    const results = await recordHeartbeats(sql, [
      { machineId: back, running: 0, agentVersion: 'v1', hostInfo: { hostname: 'a' } },
      { machineId: steady, running: 2 },
      { machineId: missing, running: 0 },
      { machineId: back, running: 1, agentVersion: 'v2' },
    ]);
    expect(results).toEqual([
      { previous: 'offline', status: 'busy', slots: 1, is_active: true },
      { previous: 'online', status: 'busy', slots: 2, is_active: true },
      null,
      { previous: 'offline', status: 'busy', slots: 1, is_active: true },
    ]);
    // the later heartbeat of a machine is the one recorded; what it left out keeps its value
    const rows = await sql`select id, status, running_jobs, agent_version, host_info, last_heartbeat_at is not null as beat
      from machines where id in (${back}, ${steady}) order by id = ${back} desc`;
    expect(rows).toEqual([
      { id: back, status: 'busy', running_jobs: 1, agent_version: 'v2', host_info: null, beat: true },
      { id: steady, status: 'busy', running_jobs: 2, agent_version: null, host_info: null, beat: true },
    ]);
    // the comeback is told once, like a single heartbeat's
    const effects = await sql`select payload from outbox where kind = 'machine-online' and payload->>'machine_id' in (${back}, ${steady})`;
    expect(effects.map((e) => e.payload.machine_id)).toEqual([back]);
  });

  it('reads each machine\'s status under its lock, like a single heartbeat', async () => {
    const { row } = await seedMachine(sql, tenantId, { slots: 2 });
    const other = (await seedMachine(sql, tenantId, { slots: 2 })).row.id as string;
    let beat: Promise<Awaited<ReturnType<typeof recordHeartbeats>>> | null = null;
    await sql.begin(async (tx) => {
      await tx`update machines set status = 'offline', running_jobs = 0 where id = ${row.id}`;
      beat = recordHeartbeats(sql, [{ machineId: other, running: 0 }, { machineId: row.id as string, running: 0 }]);
      for (const until = Date.now() + 30_000; ; ) {
        if (Date.now() > until) throw new Error('the heartbeats never waited for the row');
        const [waiting] = await sql`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%update machines m%'`;
        if (waiting!.n > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
    });
    const [first, second] = (await beat!)!;
    expect(first).toMatchObject({ previous: 'online', status: 'online' });
    expect(second).toMatchObject({ previous: 'offline', status: 'online' });
  });
});

describe('recordLiveness (the API\'s flush of heartbeats that say nothing new)', () => {
  it('moves the last heartbeat and overwrites nothing else; a machine marked offline comes back by the load it has, told once', async () => {
    const busy = (await seedMachine(sql, tenantId, { slots: 1 })).row.id as string;
    const swept = (await seedMachine(sql, tenantId, { slots: 2 })).row.id as string;
    await sql`update machines set running_jobs = 1, status = 'busy', agent_version = 'v7', last_heartbeat_at = now() - interval '1 minute' where id = ${busy}`;
    await sql`update machines set running_jobs = 2, status = 'offline', last_heartbeat_at = now() - interval '1 minute' where id = ${swept}`;
    const results = await recordLiveness(sql, [busy, '00000000-0000-4000-8000-000000000000', swept]);
    expect(results).toEqual([
      { previous: 'busy', status: 'busy', slots: 1, is_active: true },
      null,
      { previous: 'offline', status: 'busy', slots: 2, is_active: true },
    ]);
    const rows = await sql`select id, running_jobs, agent_version, last_heartbeat_at > now() - interval '5 seconds' as fresh
      from machines where id in (${busy}, ${swept}) order by id = ${busy} desc`;
    expect(rows).toEqual([
      { id: busy, running_jobs: 1, agent_version: 'v7', fresh: true },
      { id: swept, running_jobs: 2, agent_version: null, fresh: true },
    ]);
    const effects = await sql`select payload from outbox where kind = 'machine-online' and payload->>'machine_id' in (${busy}, ${swept})`;
    expect(effects.map((e) => e.payload.machine_id)).toEqual([swept]);
  });
});

describe('findMachinesByKeys (robots reconnecting together)', () => {
  it('finds the active machine of each key in one statement, in order, and nothing for an unknown or deactivated one', async () => {
    const a = await seedMachine(sql, tenantId);
    const b = await seedMachine(sql, tenantId);
    const off = await seedMachine(sql, tenantId);
    await sql`update machines set is_active = false where id = ${off.row.id as string}`;
    const found = await findMachinesByKeys(sql, [b.machineKey, 'svc_mk_unknown', a.machineKey, off.machineKey, b.machineKey]);
    expect(found.map((m) => m?.id ?? null)).toEqual([b.row.id, null, a.row.id, null, b.row.id]);
    expect(found[2]).toEqual({ id: a.row.id, tenant_id: tenantId, name: a.row.name, slots: a.row.slots });
  });
});
