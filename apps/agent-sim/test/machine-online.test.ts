import type { BullDispatch } from '@svc/core';
import { seedJob, type TestContext, itemStatusCounts, processSuite, seedWorkspace, waitFor } from '@svc/testing';

/**
 * A machine the dispatcher marked offline comes back with whichever write its agent makes first,
 * a heartbeat or the load report of a job that ends; either way the agent tells the dispatcher
 * (machine-online), which starts queue consumers on it at once rather than at its next sweep.
 */
jest.setTimeout(60_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;
let bull: BullDispatch;
/** sweeps once a minute, machines never go offline by themselves: only the nudge can act in time */
const SLOW_ENGINE = { DISPATCH_SWEEP_MS: '60000', MACHINE_OFFLINE_AFTER_SECONDS: '600', LOG_LEVEL: 'info' };

beforeAll(() => ({ ctx, bull } = suite));

it('a job end that finds its machine offline brings it back and its queue gets a consumer at once', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const consumerProcess = await ws.process();
  const other = await ws.process();
  const queue = await ws.queue({ consumer_process_id: consumerProcess.id, max_consumers: 1 });
  const m = await ws.machine({ slots: 2 });
  const d = children.dispatcher(ctx, SLOW_ENGINE);
  await waitFor('the dispatcher', async () => d.output().includes('dispatcher started'));
  // heartbeats once a minute: the job's end is the agent's only write in the test's time
  const a = await children.agent(ctx, ['--machine-key', m.machineKey, '--heartbeat-ms', '60000', '--duration', '1500ms', '--item-duration', '5ms'], SLOW_ENGINE);
  await waitFor('the agent', async () => a.output().includes('agent-sim running'));

  const job = await seedJob(ctx.sql, ws.tenant.id, { process_id: other.id, machine_id: m.row.id });
  await bull.jobsCreated([{ id: job.id, tenant_id: ws.tenant.id, machine_id: m.row.id, priority: 3 }]);
  await waitFor('the job running and its slot reported', async () => {
    const [r] = await ctx.sql`select j.status, m.running_jobs from jobs j join machines m on m.id = j.machine_id where j.id = ${job.id}`;
    return r!.status === 'running' && r!.running_jobs === 1;
  });
  // the dispatcher's offline sweep, as it would act on a machine whose heartbeats came late
  await ctx.sql`update machines set status = 'offline', running_jobs = 0 where id = ${m.row.id}`;
  // work arrives while it is offline, with no nudge of its own
  await ctx.sql`insert into queue_item_records (tenant_id, queue_id, data) select ${ws.tenant.id}, ${queue.id}, '{}'::jsonb from generate_series(1, 3)`;

  await waitFor('the job completed', async () => (await ctx.sql`select status from jobs where id = ${job.id}`)[0]!.status === 'completed');
  const counts = await waitFor('the items processed on the machine back online', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return c.completed === 3 ? c : null;
  }, 20_000);
  expect(counts).toEqual({ completed: 3 });
  const [machine] = await ctx.sql`select status from machines where id = ${m.row.id}`;
  expect(machine!.status).not.toBe('offline');
});
