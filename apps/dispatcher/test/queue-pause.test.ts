import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { itemStatusCounts, seedWorkspace, waitFor } from '@svc/testing';

/**
 * Pausing a queue end to end (docs/decisions/queue-pause.md): the in-process API, a real
 * dispatcher and a real agent. Consumers finish what they hold and end, nothing stays in
 * progress, items keep arriving as `new`, no consumer starts while paused; resume starts them.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(240_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));

it('a paused queue keeps its items waiting with nothing in progress, and resume finishes them', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2 });
  const machine = await ws.machine({ slots: 2 });
  // 60 items of 300 ms on two consumers: ~9 s of work, so items are still waiting when the pause
  // arrives however late a loaded host sends it
  await children.agent(ctx, ['--machine-key', machine.machineKey, '--item-duration', '300ms', '--prefetch', '1']);
  // as an integrator and an admin call the API: through the typed client (@svc/client)
  const admin = apiClient(ctx, { token: ws.adminToken });
  const path = { queue_id: queue.id };
  const add = async (n: number, from: number) => {
    const body = { items: Array.from({ length: n }, (_, i) => ({ n: from + i })) };
    expect(await apiClient(ctx, { apiKey: ws.key }).call('addQueueItems', { path: { name: queue.name }, body })).toEqual({ added: n });
  };

  await add(60, 0);
  await waitFor('some items completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) >= 3, 60_000);
  expect((await admin.call('pauseQueue', { path })).is_paused).toBe(true);

  // the consumers finish what they hold and end: no running consumer, nothing in progress
  await waitFor('the consumers ended', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  const atPause = await itemStatusCounts(ctx.sql, queue.id);
  expect(atPause.in_progress ?? 0).toBe(0);
  expect(atPause.new ?? 0).toBeGreaterThan(0);
  const consumersAtPause = (await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id}`)[0]!.n as number;

  // items are still accepted, and nothing starts for them (nudges and sweeps alike)
  await add(5, 100);
  // the adds' nudges left the outbox, and a consumers pass and a sweep that began after them ended
  await waitFor('the outbox published', async () => (await ctx.sql`select count(*)::int as n from outbox`)[0]!.n === 0);
  await Promise.all([suite.dispatcher.passBegunAfter('consumers'), suite.dispatcher.passBegunAfter('sweep')]);
  const stillPaused = await itemStatusCounts(ctx.sql, queue.id);
  expect(stillPaused.new).toBe((atPause.new ?? 0) + 5);
  expect(stillPaused.completed).toBe(atPause.completed);
  expect((await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id}`)[0]!.n).toBe(consumersAtPause);
  expect(await admin.call('getQueueStats', { path })).toMatchObject({ is_paused: true, consumers_running: 0, ready: stillPaused.new });

  expect((await admin.call('resumeQueue', { path })).is_paused).toBe(false);
  await waitFor('a consumer running again', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
    return n > 0;
  }, 60_000);
  await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 65, 90_000);
  expect(await itemStatusCounts(ctx.sql, queue.id)).toEqual({ completed: 65 });
});
