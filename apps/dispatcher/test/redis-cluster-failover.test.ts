import { machineQueueName, redisKeys } from '@svc/core';
import {
  assertNoItemProcessedTwiceAtOnce, freePort, itemStatusCounts, readJournal, seedWorkspace, startPrivateRedisCluster, tempFile, testSuite, waitFor, waitForHttp,
  type PrivateRedisCluster, type TestContext,
} from '@svc/testing';

/**
 * Fault: a Redis Cluster primary is SIGKILLed mid-load and its replica takes over
 * (docs/decisions/redis-cluster.md). The processes follow the new slot map by themselves; what the
 * dead primary had not replicated yet is rebuilt from Postgres. Private three-primary cluster with
 * one replica each; the API, a dispatcher and agents as processes.
 */
jest.setTimeout(150_000);
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

it('a primary killed mid-load loses no item and runs none twice at once', async () => {
  const env = { ...cluster.env, REDIS_URL: 'redis://127.0.0.1:9', DISPATCH_RECONCILE_MS: '1000', MACHINE_OFFLINE_AFTER_SECONDS: '120' };
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 3 });
  const m1 = await ws.machine({ slots: 2 });
  const m2 = await ws.machine({ slots: 2 });
  const apiPort = await freePort();
  children.api(ctx, apiPort, env);
  children.dispatcher(ctx, env);
  const journal = tempFile('journal.jsonl');
  children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, '--item-duration', '4-6ms', '--duration', '50ms', '--journal', journal], env);
  const base = `http://127.0.0.1:${apiPort}`;
  await waitForHttp(`${base}/health`);
  const bulk = async (from: number) => {
    const res = await fetch(`${base}/api/v1/queues/by-name/${queue.name}/items/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': ws.key },
      body: JSON.stringify({ items: Array.from({ length: 100 }, (_, i) => ({ n: from + i })) }),
    });
    return res.status;
  };
  for (let i = 0; i < 3; i++) expect(await bulk(i * 100)).toBe(200);
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) >= 30, 30_000);

  const victim = await cluster.primaryOf(`${redisKeys(ctx.redisPrefix).bull}:${machineQueueName(m1.row.id)}:meta`);
  cluster.kill(victim);
  await cluster.waitUntilOk();
  expect(await cluster.primaryOf(`${redisKeys(ctx.redisPrefix).bull}:${machineQueueName(m1.row.id)}:meta`)).not.toBe(victim);
  // the API writes Postgres only; its answer does not depend on the failover being over
  expect(await bulk(300)).toBe(200);

  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 400 ? c : null;
  }, 60_000);
  expect((counts.completed ?? 0) + (counts.dead_letter ?? 0)).toBe(400);
  expect(assertNoItemProcessedTwiceAtOnce(readJournal(journal))).toBe(400);
});
