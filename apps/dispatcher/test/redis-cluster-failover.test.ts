import { machineQueueName, redisKeys } from '@svc/core';
import {
  assertNoItemProcessedTwiceAtOnce, freePort, itemStatusCounts, readJournal, seedWorkspace, startPrivateRedisCluster, tempFile, testSuite, waitFor, waitForHttp,
  type PrivateRedisCluster, type TestContext,
} from '@svc/testing';

/**
 * Fault: a Redis Cluster primary is SIGKILLed mid-load and its replica takes over
 * (docs/decisions/redis-cluster.md). The processes follow the new slot map by themselves; what the
 * dead primary had not replicated yet is rebuilt from Postgres. Private three-primary cluster with
 * one replica each; the API, two dispatchers and two agents (one machine each) as processes.
 */
const ITEMS = 5_000;
/** From the replica's promotion to the last item completed (the requirement's deadline). */
const DRAIN_DEADLINE_MS = 30_000;
jest.setTimeout(180_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;
let cluster: PrivateRedisCluster;

beforeAll(async () => {
  ({ ctx } = suite);
  cluster = await startPrivateRedisCluster({ primaries: 3, replicas: 1 });
});
afterAll(async () => {
  await children.stopAll();
  cluster?.destroy();
});

it('a primary killed a third of the way through 5,000 items loses none, runs none twice at once, and the queue drains within 30 s of the promotion', async () => {
  const env = { ...cluster.env, REDIS_URL: 'redis://127.0.0.1:9', DISPATCH_RECONCILE_MS: '1000', MACHINE_OFFLINE_AFTER_SECONDS: '120' };
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 4, max_retries: 3 });
  const m1 = await ws.machine({ slots: 2 });
  const m2 = await ws.machine({ slots: 2 });
  const apiPort = await freePort();
  children.api(ctx, apiPort, env);
  children.dispatcher(ctx, env);
  children.dispatcher(ctx, env);
  const journals = [tempFile('m1.jsonl'), tempFile('m2.jsonl')];
  const agentArgs = ['--item-duration', '1-2ms', '--duration', '50ms'];
  const base = `http://127.0.0.1:${apiPort}`;
  await children.agent(ctx, ['--machine-key', m1.machineKey, ...agentArgs, '--journal', journals[0]!], env, { url: base });
  await children.agent(ctx, ['--machine-key', m2.machineKey, ...agentArgs, '--journal', journals[1]!], env, { url: base });
  await waitForHttp(`${base}/health`);
  const bulk = async (from: number) => {
    const res = await fetch(`${base}/api/v1/queues/by-name/${queue.name}/items/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': ws.key },
      body: JSON.stringify({ items: Array.from({ length: 1000 }, (_, i) => ({ n: from + i })) }),
    });
    return res.status;
  };
  for (let i = 0; i < ITEMS / 1000 - 1; i++) expect(await bulk(i * 1000)).toBe(200);
  const completed = async () => (await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0;
  await waitFor('a third of the items completed', async () => (await completed()) >= ITEMS / 3, 60_000, 20);

  const queueMeta = `${redisKeys(ctx.redisPrefix).bull}:${machineQueueName(m1.row.id)}:meta`;
  const victim = await cluster.primaryOf(queueMeta);
  cluster.kill(victim);
  const doneAtKill = await completed();
  await cluster.waitUntilOk();
  const promotedAt = Date.now();
  expect(await cluster.primaryOf(queueMeta)).not.toBe(victim);
  // the API writes Postgres only; its answer does not depend on the failover being over
  expect(await bulk(ITEMS - 1000)).toBe(200);

  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    if ((c.completed ?? 0) + (c.dead_letter ?? 0) === ITEMS) return c;
    throw new Error(`items ${JSON.stringify(c)}`); // the last one is in waitFor's timeout
  }, 2 * DRAIN_DEADLINE_MS, 100).catch(async (err: Error) => {
    // read once the drain has timed out, not at every poll: where the robots' jobs stand
    const jobs = await ctx.sql`select status, count(*)::int as n from jobs where process_id = ${proc.id} group by status`;
    throw new Error(`${err.message}; jobs ${JSON.stringify(Object.fromEntries(jobs.map((j) => [j.status, j.n])))}`);
  });
  const drainedMs = Date.now() - promotedAt;
  expect(counts).toEqual({ completed: ITEMS });
  expect(doneAtKill).toBeLessThan(ITEMS / 2);
  expect(drainedMs).toBeLessThanOrEqual(DRAIN_DEADLINE_MS);
  const entries = journals.flatMap((j) => readJournal(j));
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(ITEMS);
  // both machines took part
  expect(new Set(entries.filter((e) => e.event === 'item-end').map((e) => e.machine_id))).toEqual(new Set([m1.row.id, m2.row.id]));
});
