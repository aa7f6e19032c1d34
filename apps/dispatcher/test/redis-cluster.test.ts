import {
  createEngine, createLogger, createRedis, decodeAbort, machineQueueName, publishApiKeyInvalidation, redisKeys, DISPATCH_QUEUE,
} from '@svc/core';
import { epochKeys, keySlot, redisApiKeyPublisher } from '@svc/core/internals';
import {
  freePort, itemStatusCounts, seedApiKey, seedWorkspace, startPrivateRedisCluster, testSuite, waitFor, waitForHttp,
  type PrivateRedisCluster, type TestContext,
} from '@svc/testing';

/**
 * The platform on a Redis Cluster (docs/decisions/redis-cluster.md): a private three-primary
 * cluster, and the API, a dispatcher and agents as processes given only REDIS_CLUSTER_NODES.
 * The single-server versions of these behaviours are tested in fault-redis-flush.test.ts,
 * jobs-lifecycle.test.ts and apps/api/test (rate limits, API keys, idempotency).
 */
jest.setTimeout(90_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;
let cluster: PrivateRedisCluster;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let base: string;
let env: Record<string, string>;

beforeAll(async () => {
  ({ ctx } = suite);
  cluster = await startPrivateRedisCluster();
  // REDIS_URL names nothing that answers: a process that used it instead of the cluster would fail.
  // Machines are judged offline only after two minutes: a starved agent on a loaded CI host must
  // not see its running job ended under the stop test.
  env = { ...cluster.env, REDIS_URL: 'redis://127.0.0.1:9', MACHINE_OFFLINE_AFTER_SECONDS: '120' };
  ws = await seedWorkspace(ctx.sql);
  const apiPort = await freePort();
  children.api(ctx, apiPort, env);
  children.dispatcher(ctx, { ...env, DISPATCH_RECONCILE_MS: '600000' });
  base = `http://127.0.0.1:${apiPort}`;
  await waitForHttp(`${base}/health`);
});
afterAll(async () => {
  await children.stopAll();
  cluster?.destroy();
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, key = ws.key) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function jobStatus(id: string): Promise<string> {
  const [row] = await ctx.sql`select status from jobs where id = ${id}`;
  return row!.status as string;
}

it('completes every item added through the API', async () => {
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2 });
  const m1 = await ws.machine({ slots: 2 });
  const m2 = await ws.machine({ slots: 2 });
  await children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, '--item-duration', '0ms', '--duration', '50ms'], env, { url: base });
  for (let i = 0; i < 10; i++) {
    const r = await call('POST', `/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 100 }, (_, j) => ({ n: i * 100 + j })) });
    expect(r.status).toBe(200);
  }
  const counts = await waitFor('every item completed', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return c.completed === 1000 ? c : null;
  }, 60_000);
  expect(counts).toEqual({ completed: 1000 });
  const prefix = redisKeys(ctx.redisPrefix).bull;
  expect(await cluster.admin.exists(`${prefix}:${machineQueueName(m1.row.id)}:meta`)).toBe(1);
  // Bull Board reads the machine queues on the cluster (consumer jobs are kept there an hour)
  const board = await fetch(`${base}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${ws.adminToken}` } });
  expect(board.status).toBe(200);
  const queues = ((await board.json()) as { queues: Array<{ displayName?: string; counts: Record<string, number> }> }).queues;
  const shown = queues.find((q) => q.displayName === `Machine ${m1.row.name}`);
  expect(Object.values(shown!.counts).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  // the machine queues and the dispatcher's queue hash to slots of their own
  expect(new Set([DISPATCH_QUEUE, machineQueueName(m1.row.id), machineQueueName(m2.row.id)].map((q) => keySlot(`x:${q}`))).size).toBe(3);
});

it('counts a route\'s rate limit exactly across the cluster', async () => {
  const { key } = await seedApiKey(ctx.sql, ws.tenant.id);
  const answers = await Promise.all(Array.from({ length: 40 }, () => call('GET', '/api/v1/assets/by-name/no-such-asset', undefined, {}, key)));
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses.filter((s) => s === 404)).toHaveLength(30);
  expect(statuses.filter((s) => s === 429)).toHaveLength(10);
});

it('answers an idempotent retry with the first answer', async () => {
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id });
  const body = { items: [{ n: 1 }, { n: 2 }] };
  const path = `/api/v1/queues/by-name/${queue.name}/items/bulk`;
  const first = await call('POST', path, body, { 'Idempotency-Key': 'cluster-retry-1' });
  const again = await call('POST', path, body, { 'Idempotency-Key': 'cluster-retry-1' });
  expect(first.status).toBe(200);
  expect(again).toEqual(first);
  const [{ n }] = await ctx.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`;
  expect(n).toBe(2);
});

it('refuses a key revoked by another process at once (invalidation over cluster pub/sub)', async () => {
  const { key, row } = await seedApiKey(ctx.sql, ws.tenant.id);
  expect((await call('GET', '/api/v1/processes/list', undefined, {}, key)).status).toBe(200);
  // the CLI's way: revoke in Postgres, publish the invalidation on the cluster, wait for the acks
  const publisher = redisApiKeyPublisher(cluster.admin, redisKeys(ctx.redisPrefix).apiKeyInvalidations);
  const engine = createEngine({ sql: ctx.sql, logger: createLogger({ service: 'test', level: 'error' }), apiKeyChanges: publisher });
  await engine.keys.revoke({ tenantId: ws.tenant.id, userId: null, source: 'cli' }, row.id as string);
  const after = await call('GET', '/api/v1/processes/list', undefined, {}, key);
  expect(after.status).toBe(401);
  // PUBLISH answers one node's count on a cluster: the receivers are the API process, wherever it subscribed
  const channel = redisKeys(ctx.redisPrefix).apiKeyInvalidations;
  expect(await publishApiKeyInvalidation(cluster.admin, channel, { id: row.id as string, hashes: [] }, 10_000)).toEqual({ receivers: 1, acked: 1 });
});

it('brings a stop to the robot running the job', async () => {
  const proc = await ws.process();
  const m = await ws.machine({ slots: 1 });
  await children.agent(ctx, ['--machine-key', m.machineKey], env, { url: base });
  // a subscriber of our own, on whichever node the cluster client picks, hears the abort too
  const sub = createRedis(cluster.target, { blocking: true });
  const heard: string[] = [];
  sub.on('message', (_channel: string, raw: string) => {
    const msg = decodeAbort(raw);
    if (msg) heard.push(msg.job_id);
  });
  try {
    await sub.subscribe(redisKeys(ctx.redisPrefix).jobStops);
    const job = await call('POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: m.row.id, input_data: { _sim: { duration_ms: 30_000 } } });
    expect(job.status).toBe(201);
    await waitFor('the job running', async () => (await jobStatus(job.body.data.id)) === 'running', 30_000);
    const stop = await call('POST', `/api/v1/jobs/${job.body.data.id}/stop`);
    expect(stop.status).toBe(200);
    await waitFor('the job stopped', async () => (await jobStatus(job.body.data.id)) === 'stopped', 20_000);
    await waitFor('the abort heard over cluster pub/sub', async () => heard.includes(job.body.data.id), 20_000);
  } finally {
    sub.disconnect();
  }
});

it('notices a primary that lost its data and rebuilds from Postgres what it held', async () => {
  const keys = redisKeys(ctx.redisPrefix);
  // a machine whose queue lives on the same primary as the dispatcher's queue (and its schedulers)
  const dispatchNode = await cluster.primaryOf(`${keys.bull}:${DISPATCH_QUEUE}:meta`);
  let late = await ws.machine({ slots: 2, status: 'offline' });
  while ((await cluster.primaryOf(`${keys.bull}:${machineQueueName(late.row.id)}:meta`)) !== dispatchNode) {
    late = await ws.machine({ slots: 2, status: 'offline' });
  }
  const proc = await ws.process();
  const waiting: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await call('POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: late.row.id });
    expect(r.status).toBe(201);
    waiting.push(r.body.data.id);
  }
  const jobKey = `${keys.bull}:${machineQueueName(late.row.id)}:job:${waiting[0]}:0`;
  await waitFor('the jobs in their machine queue', async () => (await cluster.admin.exists(jobKey)) === 1, 20_000);
  const markers = await epochKeys(cluster.admin, keys.dispatchEpoch);
  expect(markers).toHaveLength(3);
  await waitFor('every epoch marker written', async () => (await Promise.all(markers.map((k) => cluster.admin.exists(k)))).every((n) => n === 1), 20_000);
  // the markers spread over the primaries: one of them is on the primary about to be flushed
  const onFlushed: string[] = [];
  for (const k of markers) if ((await cluster.primaryOf(k)) === dispatchNode) onFlushed.push(k);
  expect(onFlushed).toHaveLength(1);

  expect(await dispatchNode.flushall()).toBe('OK');
  expect(await cluster.admin.exists(jobKey)).toBe(0);

  // the periodic reconcile is off (DISPATCH_RECONCILE_MS): only the lost marker brings them back
  await waitFor('the lost marker written again', async () => (await cluster.admin.exists(onFlushed[0]!)) === 1, 20_000);
  await waitFor('the lost jobs re-added', async () => (await cluster.admin.exists(jobKey)) === 1, 20_000);
  await waitFor('the schedulers rebuilt', async () => (await cluster.admin.exists(`${keys.bull}:${DISPATCH_QUEUE}:repeat`)) === 1, 20_000);
  await children.agent(ctx, ['--machine-key', late.machineKey, '--duration', '50ms'], env, { url: base });
  // delivered to the agent (started) and ended: not one left pending for want of its BullMQ job
  await waitFor('every job of the late machine run', async () => {
    const rows = await ctx.sql`select status, started_at from jobs where id = any(${waiting}::uuid[])`;
    return rows.every((r) => r.started_at !== null && !['pending', 'running'].includes(r.status as string));
  }, 30_000);
});
