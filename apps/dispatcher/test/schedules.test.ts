import type { BodyOf } from '@svc/client';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { passBegunAfter, seedWorkspace, waitFor } from '@svc/testing';

/**
 * Schedules end to end (docs/decisions/schedules.md): the in-process API, real dispatcher
 * processes and a real agent. Two dispatchers fire a seconds cron with exactly one job per tick
 * and no tick lost; dispatchers stopped across a tick then restarted skip it (`skip`) or run it
 * once (`run_once`); a run refused by the quota is recorded.
 */
// the waits are liveness bounds sized for a loaded host (several processes starting on two cores)
jest.setTimeout(240_000);
const suite = apiSuite();
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));
// a failed test must not leave its dispatchers firing the next test's schedules
afterEach(() => children.stopAll());

interface ScheduledJob { id: string; status: string; scheduled_for: Date; source: string }

const jobsOf = (scheduleId: string) => ctx.sql<ScheduledJob[]>`
  select id, status, scheduled_for, source from jobs where schedule_id = ${scheduleId} order by scheduled_for`;

const dbNow = async () => ((await ctx.sql<Array<{ now: Date }>>`select clock_timestamp() as now`)[0]!.now);

/** The settings API as an admin calls it: through the typed client (@svc/client). */
const asAdmin = (adminToken: string) => apiClient(ctx, { token: adminToken });

async function createSchedule(adminToken: string, body: BodyOf<'createSchedule'>) {
  const made = await asAdmin(adminToken).call('createSchedule', { body });
  return { ...made, next_run_at: made.next_run_at! };
}

it('two dispatchers start exactly one job per tick of a seconds cron, none lost, each carrying schedule_id', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const machine = await ws.machine({ slots: 4 });
  const dispatchers = [await children.watchedDispatcher(ctx), await children.watchedDispatcher(ctx)];
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--duration', '50ms']);
  // the schedule names its machine: an auto-selected one could be between heartbeats (offline to
  // the engine) on a loaded host at some tick, which is a recorded refusal, not the point here
  const admin = asAdmin(ws.adminToken);
  const sched = await createSchedule(ws.adminToken, { name: 'every-second', process_id: proc.id, cron: '* * * * * *', machine_id: machine.row.id, input_data: { from: 'schedule' } });

  await waitFor('eight scheduled jobs', async () => (await jobsOf(sched.id)).length >= 8, 60_000);
  const off = await admin.call('deactivateSchedule', { path: { id: sched.id } });
  expect(off).toMatchObject({ is_active: false, next_run_at: null });

  const jobs = await jobsOf(sched.id);
  // nothing refused: every tick is a job (a refusal would name its reason here)
  const refusals = await ctx.sql`select details from audit_log where resource_id = ${sched.id} and action = 'refuse_scheduled_run'`;
  expect(refusals.map((r) => r.details)).toEqual([]);
  const ticks = jobs.map((j) => j.scheduled_for.getTime());
  // one job per tick, and every second between the first and the last has its job
  expect(new Set(ticks).size).toBe(ticks.length);
  expect((ticks[ticks.length - 1]! - ticks[0]!) / 1000 + 1).toBe(ticks.length);
  expect(ticks[0]).toBe(Date.parse(sched.next_run_at));
  expect(jobs.every((j) => j.source === 'schedule')).toBe(true);

  // the jobs run, and the JobResponse shows their schedule
  await waitFor('the first scheduled job completed', async () => (await jobsOf(sched.id))[0]!.status === 'completed', 60_000);
  const read = await admin.call('getWorkspaceJob', { path: { job_id: jobs[0]!.id } });
  expect(read).toMatchObject({ schedule_id: sched.id, process_id: proc.id, machine_id: machine.row.id, input_data: { from: 'schedule' } });
  const record = await admin.call('getSchedule', { path: { id: sched.id } });
  expect(record.last_run_at).toBe(new Date(ticks[ticks.length - 1]!).toISOString());
  expect(record.last_job_id).toBe(jobs[jobs.length - 1]!.id);

  // deactivated: once the next tick is due, a schedules pass that began after it starts no job
  const nextTick = ticks[ticks.length - 1]! + 1000;
  await waitFor('the next tick due', async () => (await dbNow()).getTime() > nextTick);
  await passBegunAfter(dispatchers.map((d) => d.metricsUrl), 'schedules');
  expect(await jobsOf(sched.id)).toHaveLength(jobs.length);
  await children.stopAll();
});

it('across a tick missed while every dispatcher was down, skip starts nothing and run_once starts one', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  // a named machine: the jobs wait for it, no agent needed to create them
  const machine = await ws.machine({ slots: 1 });
  // a short grace, so a tick counts as missed within seconds (the default is a minute)
  const env = { SCHEDULE_MISFIRE_GRACE_SECONDS: '2' };
  let dispatcher = children.dispatcher(ctx, env);
  const every2s = { process_id: proc.id, cron: '*/2 * * * * *', machine_id: machine.row.id };
  const skip = await createSchedule(ws.adminToken, { name: 'skips', ...every2s, missed_runs: 'skip' });
  const once = await createSchedule(ws.adminToken, { name: 'runs-once', ...every2s, missed_runs: 'run_once' });
  await waitFor('both schedules fired', async () => (await jobsOf(skip.id)).length > 0 && (await jobsOf(once.id)).length > 0, 60_000);

  await dispatcher.stop('SIGTERM');
  const [pending] = await ctx.sql<Array<{ skip: Date; once: Date }>>`
    select (select next_run_at from schedules where id = ${skip.id}) as skip, (select next_run_at from schedules where id = ${once.id}) as once`;
  const firstMissed = Math.max(pending!.skip.getTime(), pending!.once.getTime());
  const before = { skip: (await jobsOf(skip.id)).length, once: (await jobsOf(once.id)).length };
  // the due ticks pass and go beyond the grace with no dispatcher running
  await waitFor('the ticks missed', async () => (await dbNow()).getTime() > firstMissed + 4_000, 15_000, 200);
  expect((await jobsOf(skip.id)).length).toBe(before.skip);

  const restartedAt = await dbNow();
  dispatcher = children.dispatcher(ctx, env);
  await waitFor('both schedules advanced past the restart', async () => {
    const rows = await ctx.sql<Array<{ next_run_at: Date }>>`select next_run_at from schedules where id in (${skip.id}, ${once.id})`;
    return rows.every((r) => r.next_run_at.getTime() > restartedAt.getTime());
  }, 60_000);

  const missedWindow = (jobs: ScheduledJob[], from: Date) => jobs.filter((j) => j.scheduled_for >= from && j.scheduled_for < restartedAt);
  expect(missedWindow(await jobsOf(skip.id), pending!.skip)).toHaveLength(0);
  const caughtUp = missedWindow(await jobsOf(once.id), pending!.once);
  expect(caughtUp).toHaveLength(1);
  expect(caughtUp[0]!.scheduled_for.getTime()).toBe(pending!.once.getTime());
  // the skip is audited once for the ticks missed while down (with a 2 s grace, a dispatcher that a
  // loaded host holds up may skip a later tick too, with its own row: not counted here)
  const skipped = await ctx.sql<Array<{ details: { first_missed: string } }>>`
    select details from audit_log where resource_id = ${skip.id} and action = 'skip_scheduled_runs'`;
  const missedWhileDown = (a: { details: { first_missed: string } }) =>
    Date.parse(a.details.first_missed) >= pending!.skip.getTime() && Date.parse(a.details.first_missed) < restartedAt.getTime();
  expect(skipped.filter(missedWhileDown)).toHaveLength(1);

  // and both go on ticking after the restart
  await waitFor('a tick after the restart for both', async () => {
    const after = (jobs: ScheduledJob[]) => jobs.some((j) => j.scheduled_for > restartedAt);
    return after(await jobsOf(skip.id)) && after(await jobsOf(once.id));
  }, 60_000);
  await children.stopAll();
});

it('records a scheduled run refused by the monthly quota, starting nothing', async () => {
  const ws = await seedWorkspace(ctx.sql);
  await ctx.sql`update tenants set monthly_quota = 1 where id = ${ws.tenant.id}`;
  const proc = await ws.process();
  const machine = await ws.machine();
  children.dispatcher(ctx);
  const sched = await createSchedule(ws.adminToken, { name: 'over-quota', process_id: proc.id, cron: '* * * * * *', machine_id: machine.row.id });
  const admin = asAdmin(ws.adminToken);
  const refused = await waitFor('a refused run recorded', async () => {
    const r = await admin.call('getSchedule', { path: { id: sched.id } });
    return r.last_error ? r : null;
  }, 60_000);
  expect(refused.last_error).toBe('Cuota mensual de ejecuciones agotada');
  expect(refused.last_error_at).toEqual(expect.any(String));
  // the one execution the quota allowed ran, nothing after it
  expect(await jobsOf(sched.id)).toHaveLength(1);
  const audit = await ctx.sql`select details from audit_log where resource_id = ${sched.id} and action = 'refuse_scheduled_run'`;
  expect(audit.length).toBeGreaterThanOrEqual(1);
  expect(audit[0]!.details).toMatchObject({ reason: 'quota_exceeded' });
  const [{ quota_used }] = await ctx.sql`select quota_used from tenants where id = ${ws.tenant.id}`;
  expect(quota_used).toBe(1);
  await children.stopAll();
});
