import { createSchedule, fireDueSchedules, getSchedule } from '@svc/core/internals';
import { databaseSuite, seedMachine, seedProcess, seedTenant } from '@svc/testing';

/**
 * The fire loop against a real Postgres. Ticks are put in the past by moving `next_run_at` (the
 * clock itself is not ours to move); the dispatcher processes are exercised in
 * apps/dispatcher/test/schedules.test.ts.
 */
describe('firing due schedules', () => {
  const s = databaseSuite();
  const GRACE = { graceSeconds: 60 };

  async function workspace(fields: { monthly_quota?: number } = {}) {
    const tenant = await seedTenant(s.sql, fields);
    const process = await seedProcess(s.sql, tenant.id);
    const { row: machine } = await seedMachine(s.sql, tenant.id);
    return { tenant, process, machine };
  }

  async function dueSchedule(tenantId: string, processId: string, secondsAgo: number, extra: Record<string, unknown> = {}) {
    const row = await createSchedule(s.sql, tenantId, { name: `s-${Math.random().toString(16).slice(2)}`, process_id: processId, cron: '0 0 1 1 *', ...extra });
    await s.sql`update schedules set next_run_at = date_trunc('second', now()) - make_interval(secs => ${secondsAgo}) where id = ${row.id}`;
    const [{ next_run_at }] = await s.sql<Array<{ next_run_at: Date }>>`select next_run_at from schedules where id = ${row.id}`;
    return { ...row, due: next_run_at };
  }

  const jobsOf = (scheduleId: string) => s.sql<Array<{ id: string; source: string; schedule_id: string; scheduled_for: Date; machine_id: string; input_data: unknown; priority: number }>>`
    select id, source, schedule_id, scheduled_for, machine_id, input_data, priority from jobs where schedule_id = ${scheduleId} order by scheduled_for`;

  it('starts one job for a due tick, with schedule_id, its input and priority, consuming the quota and recording its effect', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 1, { input_data: { report: 'daily' }, priority: 4 });
    const r = await fireDueSchedules(s.sql, GRACE);
    expect(r.fired.filter((f) => f.schedule_id === sched.id)).toHaveLength(1);
    const jobs = await jobsOf(sched.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ source: 'schedule', schedule_id: sched.id, machine_id: w.machine.id, input_data: { report: 'daily' }, priority: 4 });
    expect(jobs[0]!.scheduled_for.toISOString()).toBe(sched.due.toISOString());
    const after = await getSchedule(s.sql, w.tenant.id, sched.id);
    expect(after.last_run_at!.toISOString()).toBe(sched.due.toISOString());
    expect(after.last_job_id).toBe(jobs[0]!.id);
    expect(after.next_run_at!.getTime()).toBeGreaterThan(Date.now());
    const [{ quota_used }] = await s.sql`select quota_used from tenants where id = ${w.tenant.id}`;
    expect(quota_used).toBe(1);
    const effects = await s.sql`select payload from outbox where kind = 'jobs-created' and payload->'jobs'->0->>'id' = ${jobs[0]!.id}`;
    expect(effects).toHaveLength(1);
    const audit = await s.sql`select actor_type, source, details from audit_log where resource_id = ${jobs[0]!.id} and action = 'trigger_job'`;
    expect(audit).toEqual([expect.objectContaining({ actor_type: 'system', source: 'schedule' })]);
    // a second pass finds nothing due for it
    const again = await fireDueSchedules(s.sql, GRACE);
    expect(again.fired.filter((f) => f.schedule_id === sched.id)).toHaveLength(0);
  });

  it('creates exactly one job per tick when eight passes race over the same due schedules', async () => {
    const w = await workspace();
    const scheds = await Promise.all([1, 2, 3].map(() => dueSchedule(w.tenant.id, w.process.id, 2)));
    const results = await Promise.all(Array.from({ length: 8 }, () => fireDueSchedules(s.sql, GRACE)));
    for (const sched of scheds) {
      expect(await jobsOf(sched.id)).toHaveLength(1);
      expect(results.flatMap((r) => r.fired).filter((f) => f.schedule_id === sched.id)).toHaveLength(1);
    }
  });

  it('fires each late tick of a seconds cron within the grace, one job each', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 4, { cron: '* * * * * *' });
    await fireDueSchedules(s.sql, GRACE);
    const jobs = await jobsOf(sched.id);
    // the due tick and every second after it up to now: at least 5, consecutive, none twice
    expect(jobs.length).toBeGreaterThanOrEqual(5);
    const ticks = jobs.map((j) => j.scheduled_for.getTime());
    ticks.forEach((t, i) => i > 0 && expect(t - ticks[i - 1]!).toBe(1000));
  });

  it('skips the missed ticks (skip): no job, next tick in the future, the skip audited', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 600, { cron: '*/5 * * * *' });
    // the next tick may be a second after the fire: compare with the clock before it, not after
    const firedAfter = Date.now();
    const r = await fireDueSchedules(s.sql, GRACE);
    expect(r.skipped.map((x) => x.schedule_id)).toContain(sched.id);
    expect(await jobsOf(sched.id)).toHaveLength(0);
    const after = await getSchedule(s.sql, w.tenant.id, sched.id);
    expect(after.next_run_at!.getTime()).toBeGreaterThan(firedAfter);
    expect(after.last_run_at).toBeNull();
    expect(await s.sql`select 1 from audit_log where resource_id = ${sched.id} and action = 'skip_scheduled_runs'`).toHaveLength(1);
  });

  it('starts exactly one job for all the missed ticks (run_once)', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 600, { cron: '* * * * *', missed_runs: 'run_once' });
    // the next tick may be a second after the fire: compare with the clock before it, not after
    const firedAfter = Date.now();
    await fireDueSchedules(s.sql, GRACE);
    const jobs = await jobsOf(sched.id);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.scheduled_for.toISOString()).toBe(sched.due.toISOString());
    expect((await getSchedule(s.sql, w.tenant.id, sched.id)).next_run_at!.getTime()).toBeGreaterThan(firedAfter);
  });

  it('records a run refused by the quota (no job, nothing consumed) and clears it once a run starts', async () => {
    const w = await workspace({ monthly_quota: 0 });
    const sched = await dueSchedule(w.tenant.id, w.process.id, 1);
    const r = await fireDueSchedules(s.sql, GRACE);
    expect(r.refused).toContainEqual(expect.objectContaining({ schedule_id: sched.id, reason: 'quota_exceeded' }));
    expect(await jobsOf(sched.id)).toHaveLength(0);
    const refused = await getSchedule(s.sql, w.tenant.id, sched.id);
    expect(refused.last_error).toBe('Cuota mensual de ejecuciones agotada');
    expect(refused.last_error_at!.toISOString()).toBe(sched.due.toISOString());
    expect(refused.next_run_at!.getTime()).toBeGreaterThan(Date.now());
    const audit = await s.sql`select details from audit_log where resource_id = ${sched.id} and action = 'refuse_scheduled_run'`;
    expect(audit).toEqual([expect.objectContaining({ details: expect.objectContaining({ reason: 'quota_exceeded' }) })]);
    const [{ quota_used }] = await s.sql`select quota_used from tenants where id = ${w.tenant.id}`;
    expect(quota_used).toBe(0);

    await s.sql`update tenants set monthly_quota = 10 where id = ${w.tenant.id}`;
    await s.sql`update schedules set next_run_at = date_trunc('second', now()) - interval '1 second' where id = ${sched.id}`;
    await fireDueSchedules(s.sql, GRACE);
    expect(await jobsOf(sched.id)).toHaveLength(1);
    expect((await getSchedule(s.sql, w.tenant.id, sched.id)).last_error).toBeNull();
  });

  it('records a run refused for want of a machine or an active process', async () => {
    const tenant = await seedTenant(s.sql);
    const process = await seedProcess(s.sql, tenant.id);
    await seedMachine(s.sql, tenant.id, { status: 'offline' });
    const noMachine = await dueSchedule(tenant.id, process.id, 1);
    const inactive = await seedProcess(s.sql, tenant.id, { is_active: false });
    const noProcess = await dueSchedule(tenant.id, inactive.id, 1);
    const r = await fireDueSchedules(s.sql, GRACE);
    expect(r.refused).toContainEqual(expect.objectContaining({ schedule_id: noMachine.id, reason: 'no_machine' }));
    expect(r.refused).toContainEqual(expect.objectContaining({ schedule_id: noProcess.id, reason: 'process_inactive' }));
    expect((await getSchedule(s.sql, tenant.id, noMachine.id)).last_error).toBe('No hay ninguna máquina disponible');
    expect((await getSchedule(s.sql, tenant.id, noProcess.id)).last_error).toBe('El proceso no existe o no está activo');
  });

  it('goes with its workspace when the workspace is deleted, jobs and all', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 1);
    await fireDueSchedules(s.sql, GRACE);
    expect(await jobsOf(sched.id)).toHaveLength(1);
    await s.sql`delete from tenants where id = ${w.tenant.id}`;
    expect(await s.sql`select 1 from schedules where id = ${sched.id}`).toHaveLength(0);
    expect(await jobsOf(sched.id)).toHaveLength(0);
  });

  it('never fires an inactive schedule', async () => {
    const w = await workspace();
    const sched = await dueSchedule(w.tenant.id, w.process.id, 1);
    await s.sql`update schedules set is_active = false where id = ${sched.id}`;
    await fireDueSchedules(s.sql, GRACE);
    expect(await jobsOf(sched.id)).toHaveLength(0);
  });
});
