import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import { assertNoItemProcessedTwiceAtOnce, itemStatusCounts, readJournal, seedWorkspace, tempFile, waitFor } from '@svc/testing';

/**
 * Fault: a run stops making progress inside an agent that stays alive (its robot is stuck, or a
 * database call never answers) while its machine keeps heartbeating, so the machine-offline
 * sweep never rescues it. The run's lease is no longer renewed; the dispatcher ends the job once
 * it lapses, under the retry policy (the process's for a job, the queue's for its items), and
 * the work goes on elsewhere. Machines go offline after 10 s here (FAST_ENGINE_ENV), which is also
 * the lease: the waits below are liveness bounds well beyond it.
 */
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));

it('a consumer stuck on an item is ended when its lease lapses, its items are handed back and the queue completes', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 1 });
  const stuck = await ws.machine({ name: 'stuck', slots: 1 });
  const journal = tempFile('journal.jsonl');

  const add = ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items`).set('X-API-Key', ws.key).send({ data: { _sim: { stall: true } }, priority: 5 });
  const stalled = await add;
  expect(stalled.status).toBe(200);
  const stalledId = stalled.body.data.id as string;
  const bulk = await ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items/bulk`).set('X-API-Key', ws.key)
    .send({ items: Array.from({ length: 20 }, (_, i) => ({ n: i })) });
  expect(bulk.status).toBe(200);
  // prefetch 3: the consumer takes the urgent stuck item and two more it will not have started
  await children.agent(ctx, ['--machine-key', stuck.machineKey, '--item-duration', '20ms', '--prefetch', '3', '--journal', journal]);

  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 21 ? c : null;
  }, 90_000);
  // the robot got stuck on the item's first try only: the retry completed it, and a success keeps
  // the message of the failure that made it retry
  expect(counts).toEqual({ completed: 21 });
  const [item] = await ctx.sql`select status, retry_count, error_message from queue_items where id = ${stalledId}`;
  expect(item).toEqual({ status: 'completed', retry_count: 1, error_message: 'El job que procesaba el elemento dejó de avanzar en la máquina stuck' });

  // the consumer job it got stuck in failed with a clear message, while the machine stayed online
  const ended = await ctx.sql`select error_message from jobs where queue_id = ${queue.id} and status = 'failed'`;
  expect(ended).toEqual([{ error_message: 'El job dejó de avanzar en la máquina stuck: su agente no renovó la concesión a tiempo' }]);
  const [machine] = await ctx.sql`select status from machines where id = ${stuck.row.id}`;
  expect(machine!.status).not.toBe('offline');
  // the two items it held unstarted were handed back too (the queue's retry policy) and completed
  const retried = await ctx.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id} and retry_count = 1`;
  expect(retried[0]!.n).toBe(3);
  expect(assertNoItemProcessedTwiceAtOnce(readJournal(journal))).toBe(21);
});

it('a job whose robot gets stuck is ended when its lease lapses and retried under the process policy', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process({ auto_retry: true, max_retries: 1, retry_delay_seconds: 0 });
  const m = await ws.machine({ name: 'frozen', slots: 1 });
  await children.agent(ctx, ['--machine-key', m.machineKey, '--duration', '100ms']);
  const res = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key)
    .send({ process_id: proc.id, machine_id: m.row.id, input_data: { _sim: { stall: true } } });
  expect(res.status).toBe(201);
  const jobId = res.body.data.id as string;

  const first = await waitFor('the stuck job ended', async () => {
    const [j] = await ctx.sql`select status, error_message from jobs where id = ${jobId}`;
    return j!.status === 'running' || j!.status === 'pending' ? null : j;
  }, 60_000);
  expect(first).toEqual({ status: 'failed', error_message: 'El job dejó de avanzar en la máquina frozen: su agente no renovó la concesión a tiempo' });
  // the retry policy applies as to any failure: a retry job, which runs normally
  const retry = await waitFor('its retry ended', async () => {
    const [j] = await ctx.sql`select status, retry_count from jobs where parent_job_id = ${jobId}`;
    return j && j.status !== 'running' && j.status !== 'pending' ? j : null;
  }, 60_000);
  expect(retry).toEqual({ status: 'completed', retry_count: 1 });
  const [machine] = await ctx.sql`select status from machines where id = ${m.row.id}`;
  expect(machine!.status).not.toBe('offline');
});
