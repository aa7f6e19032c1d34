import {
  assertNoItemProcessedTwiceAtOnce, flushEveryPrimary, freePort, itemStatusCounts, keysOnEveryPrimary, readJournal, seedWorkspace, sleep, startPrivateRedisLikeFile,
  tempFile, testSuite, waitFor, waitForHttp, type PrivateRedisLikeFile, type TestContext,
} from '@svc/testing';

/**
 * Fault: Redis loses everything (FLUSHALL) mid-load. Postgres is the truth: the dispatchers
 * notice the loss, re-create their schedulers and re-add every pending job from Postgres; the
 * running consumers never needed Redis. Runs on a PRIVATE redis-server (never the shared one),
 * with the API, the dispatcher and the agents as separate processes; its cluster variant
 * (fault-redis-flush.cluster.test.ts) on a private three-primary cluster, every primary flushed.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(240_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;
let redis: PrivateRedisLikeFile;

beforeAll(async () => {
  ({ ctx } = suite);
  redis = await startPrivateRedisLikeFile();
});
afterAll(async () => {
  await children.stopAll();
  redis?.destroy();
});

it('FLUSHALL mid-load loses no item and no job, and runs none twice', async () => {
  const { env, admin } = redis;
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 3 });
  const m1 = await ws.machine({ slots: 2 });
  const m2 = await ws.machine({ slots: 2 });
  const late = await ws.machine({ slots: 2, status: 'offline' });
  const apiPort = await freePort();
  children.api(ctx, apiPort, env);
  children.dispatcher(ctx, env);
  const journal = tempFile('journal.jsonl');
  const agentArgs = ['--item-duration', '8-12ms', '--duration', '100ms', '--failure-rate', '0.05', '--seed', '3', '--journal', journal];
  const base = `http://127.0.0.1:${apiPort}`;
  await children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, ...agentArgs], env, { url: base });
  await waitForHttp(`${base}/health`);

  const post = async (path: string, body: unknown) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const bulk = (n: number, from: number) => post(`/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: n }, (_, i) => ({ n: from + i })) });
  const trigger = (machineId: string) => post('/api/v1/jobs/trigger', { process_id: proc.id, machine_id: machineId });

  for (let i = 0; i < 3; i++) expect((await bulk(100, i * 100)).status).toBe(200);
  // jobs waiting for a machine whose agent is not running yet: they live only in Redis and Postgres
  const waiting: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await trigger(late.row.id);
    expect(r.status).toBe(201);
    waiting.push(r.body.data.id);
  }
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) >= 40, 60_000);

  // every primary (the one server, or each of the cluster's), checked by a sentinel on each
  expect(await flushEveryPrimary(admin)).toBe(ctx.redisTarget.mode === 'cluster' ? 3 : 1);

  expect((await bulk(100, 300)).status).toBe(200);
  expect((await trigger(m1.row.id)).status).toBe(201);
  await sleep(300);
  // the late machine comes up only now: its jobs must have been rebuilt from Postgres
  await children.agent(ctx, ['--machine-key', late.machineKey, ...agentArgs], env, { url: base });

  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 400 ? c : null;
  }, 90_000);
  expect((counts.completed ?? 0) + (counts.dead_letter ?? 0)).toBe(400);
  await waitFor('every job final', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where tenant_id = ${ws.tenant.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  const ran = await ctx.sql`select status from jobs where id = any(${waiting}::uuid[])`;
  expect(ran.every((j) => j.status === 'completed' || j.status === 'failed')).toBe(true);

  const entries = readJournal(journal);
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(400);
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  expect([...starts.values()].every((n) => n === 1)).toBe(true);
  // the dispatcher rebuilt its schedulers in the flushed Redis
  const schedulerKeys = await keysOnEveryPrimary(admin, `${ctx.redisPrefix}:bull:{dispatch}:repeat*`);
  expect(schedulerKeys.length).toBeGreaterThan(0);
});
