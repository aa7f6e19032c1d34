import type { BodyOf } from '@svc/client';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { itemStatusCounts, seedWorkspace, waitFor } from '@svc/testing';

/**
 * Queue triggers and attended machines end to end (docs/decisions/triggers.md): the in-process
 * API, a real dispatcher and real agent-sim processes. A trigger's consumer jobs carry its id and
 * wait for `min_items_to_start`; nothing auto-selects an attended machine, while a trigger or a job
 * naming one runs there with `is_attended: true`.
 */
jest.setTimeout(90_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

/** The API as the current workspace's integrator and admin call it: through the typed client (@svc/client). */
const integrator = () => apiClient(ctx, { apiKey: ws.key });
const admin = () => apiClient(ctx, { token: ws.adminToken });

async function addItems(queueName: string, n: number, from = 0) {
  const body = { items: Array.from({ length: n }, (_, i) => ({ n: from + i })) };
  expect(await integrator().call('addQueueItems', { path: { name: queueName }, body })).toEqual({ added: n });
}

function createTrigger(body: Omit<BodyOf<'createQueueTrigger'>, 'type'>) {
  return admin().call('createQueueTrigger', { body: { type: 'queue', ...body } });
}

/** The job as GET /jobs/{id} shows it (rate limited: read once per job, never polled). */
const getJob = (id: string) => integrator().call('getJob', { path: { job_id: id } });

const jobsOfQueue = (queueId: string) =>
  ctx.sql<Array<{ id: string; trigger_id: string | null; machine_id: string; is_attended: boolean; status: string }>>`
    select id, trigger_id, machine_id, is_attended, status from jobs where queue_id = ${queueId} order by created_at`;

it("starts a queue trigger's consumers only from min_items_to_start ready items, and its jobs carry trigger_id", async () => {
  const proc = await ws.process();
  const queue = await ws.queue();
  const machine = await ws.machine({ slots: 3 });
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--item-duration', '20ms', '--prefetch', '1']);
  const trigger = await createTrigger({ queue_id: queue.id, process_id: proc.id, min_items_to_start: 5, max_concurrent_jobs: 2 });

  // online first: else nothing could start for want of a machine, whatever the minimum said
  await waitFor('the machine online', async () => (await ctx.sql`select status from machines where id = ${machine.row.id}`)[0]!.status === 'online');
  // four ready items are fewer than the minimum: nudges and sweeps start nothing
  await addItems(queue.name, 4);
  // their nudges left the outbox, and a consumers pass and a sweep that began after them ended
  await waitFor('the outbox published', async () => (await ctx.sql`select count(*)::int as n from outbox`)[0]!.n === 0);
  await Promise.all([suite.dispatcher.passBegunAfter('consumers'), suite.dispatcher.passBegunAfter('sweep')]);
  expect(await jobsOfQueue(queue.id)).toEqual([]);
  expect(await itemStatusCounts(ctx.sql, queue.id)).toEqual({ new: 4 });

  // the fifth makes it: consumers start and take every item
  await addItems(queue.name, 1, 4);
  await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 5, 30_000);
  const jobs = await jobsOfQueue(queue.id);
  expect(jobs.length).toBeGreaterThan(0);
  expect(jobs.length).toBeLessThanOrEqual(2);
  for (const j of jobs) expect(j).toMatchObject({ trigger_id: trigger.id, machine_id: machine.row.id, is_attended: false });
  const shown = await getJob(jobs[0]!.id);
  expect(shown).toMatchObject({ trigger_id: trigger.id, is_attended: false, schedule_id: null });
});

it("gives a queue's consumer settings' jobs the default trigger's id", async () => {
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 1 });
  const machine = await ws.machine({ slots: 1 });
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--item-duration', '20ms']);
  const [def] = await ctx.sql`select id from triggers where queue_id = ${queue.id} and is_queue_default`;
  await addItems(queue.name, 3);
  await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 3, 30_000);
  // the consumer finishes its last item before its job ends: wait for the job, then ask the stats
  await waitFor('the consumer job ended', async () =>
    (await jobsOfQueue(queue.id)).every((j) => !['pending', 'running', 'waiting_input'].includes(j.status)), 30_000);
  const jobs = await jobsOfQueue(queue.id);
  expect(jobs.length).toBeGreaterThan(0);
  for (const j of jobs) expect(j.trigger_id).toBe(def!.id);
  expect((await admin().call('getQueueStats', { path: { queue_id: queue.id } })).consumers_running).toBe(0);
});

describe('an attended machine', () => {
  let unattended: { row: Record<string, any>; machineKey: string };
  let attended: { row: Record<string, any>; machineKey: string };

  beforeAll(async () => {
    // a workspace of its own: the machines above (still online) must not be candidates
    ws = await seedWorkspace(ctx.sql);
    // room for every job below on either machine (a full machine is `busy`, never auto-selected);
    // the attended one has more free slots: load alone would pick it
    unattended = await ws.machine({ slots: 8 });
    attended = await ws.machine({ slots: 16 });
    expect((await admin().call('updateMachine', { path: { id: attended.row.id }, body: { kind: 'attended' } })).kind).toBe('attended');
    await children.agent(ctx, ['--machine-key', unattended.machineKey, '--machine-key', attended.machineKey, '--duration', '100ms', '--item-duration', '20ms']);
    await waitFor('both agents heartbeating', async () => {
      const rows = await ctx.sql`select 1 from machines where id in (${unattended.row.id}, ${attended.row.id}) and status = 'online' and agent_version is not null`;
      return rows.length === 2;
    }, 20_000);
  });

  it('is never auto-selected: jobs triggered without a machine all land on the unattended one', async () => {
    const proc = await ws.process();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const job = await integrator().call('triggerJob', { body: { process_id: proc.id } });
      expect(job).toMatchObject({ machine_id: unattended.row.id, is_attended: false });
      ids.push(job.id);
    }
    await waitFor('every job completed', async () => {
      const rows = await ctx.sql`select 1 from jobs where id = any(${ids}::uuid[]) and status = 'completed'`;
      return rows.length === ids.length;
    }, 30_000);
    const rows = await ctx.sql`select distinct machine_id, is_attended from jobs where id = any(${ids}::uuid[])`;
    expect(rows).toEqual([{ machine_id: unattended.row.id, is_attended: false }]);
  });

  it("is never chosen for a queue trigger's consumers without a machine", async () => {
    const proc = await ws.process();
    const queue = await ws.queue();
    const trigger = await createTrigger({ queue_id: queue.id, process_id: proc.id, max_concurrent_jobs: 4 });
    await addItems(queue.name, 20);
    await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 20, 30_000);
    const jobs = await jobsOfQueue(queue.id);
    expect(jobs.length).toBeGreaterThan(0);
    for (const j of jobs) expect(j).toMatchObject({ trigger_id: trigger.id, machine_id: unattended.row.id, is_attended: false });
  });

  it('runs what names it: a triggered job and a queue trigger on it, with is_attended true', async () => {
    const proc = await ws.process();
    const job = await integrator().call('triggerJob', { body: { process_id: proc.id, machine_id: attended.row.id } });
    expect(job).toMatchObject({ machine_id: attended.row.id, is_attended: true });
    await waitFor('the job completed', async () => {
      const [row] = await ctx.sql`select status from jobs where id = ${job.id}`;
      return row?.status === 'completed';
    }, 20_000);
    expect(await getJob(job.id)).toMatchObject({ status: 'completed', machine_id: attended.row.id, is_attended: true });

    const queue = await ws.queue();
    const trigger = await createTrigger({ queue_id: queue.id, process_id: proc.id, machine_id: attended.row.id, max_concurrent_jobs: 2 });
    await addItems(queue.name, 6);
    await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 6, 30_000);
    const jobs = await jobsOfQueue(queue.id);
    expect(jobs.length).toBeGreaterThan(0);
    for (const j of jobs) expect(j).toMatchObject({ trigger_id: trigger.id, machine_id: attended.row.id, is_attended: true });
  });
});
