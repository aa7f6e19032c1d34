import {
  assertNoItemProcessedTwiceAtOnce, freePort, itemStatusCounts, readJournal, seedWorkspace, sleep, startPrivateRedis, tempFile, testSuite, waitFor,
  waitForHttp, type PrivateRedis, type TestContext,
} from '@svc/testing';

/**
 * Fault: Redis is killed mid-load and comes back empty 3 s later, under the API (holding the
 * robots' connections), the dispatcher and the robots (agent-sim on the machine protocol) as
 * separate processes. Postgres is the truth: the running consumers never needed Redis, jobs
 * triggered meanwhile are rebuilt from Postgres, nothing is lost or run twice at once. On a
 * PRIVATE redis-server, never the shared one.
 */
jest.setTimeout(180_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;
let redis: PrivateRedis;

beforeAll(async () => {
  ({ ctx } = suite);
  redis = await startPrivateRedis();
});
afterAll(async () => {
  await children.stopAll();
  redis?.destroy();
});

it('Redis SIGKILLed mid-load and back empty: every item and job ends once', async () => {
  const env = { REDIS_URL: redis.url };
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2 });
  const machines = [await ws.machine({ slots: 2 }), await ws.machine({ slots: 2 })];
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  children.api(ctx, port, env);
  children.dispatcher(ctx, env);
  await waitForHttp(`${base}/health`);
  const journal = tempFile('redis-kill.jsonl');
  await children.agent(ctx, [...machines.flatMap((m) => ['--machine-key', m.machineKey]), '--item-duration', '10-20ms', '--duration', '100ms', '--journal', journal], {}, { url: base });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  expect((await post(`/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 300 }, (_, i) => ({ n: i })) })).status).toBe(200);
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) >= 40, 60_000);

  await redis.kill();
  // triggered while Redis is away: recorded in Postgres, published once it is back
  const triggered: string[] = [];
  for (const m of machines) {
    const r = await post('/api/v1/jobs/trigger', { process_id: proc.id, machine_id: m.row.id });
    expect(r.status).toBe(201);
    triggered.push(r.body.data.id);
  }
  await sleep(3_000);
  await redis.restart();

  await waitFor('every item completed', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) === 300, 120_000);
  await waitFor('the jobs triggered meanwhile completed', async () => {
    const rows = await ctx.sql`select status from jobs where id = any(${triggered}::uuid[])`;
    return rows.every((r) => r.status === 'completed');
  }, 90_000);
  const entries = readJournal(journal);
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(300);
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  expect([...starts.values()].filter((n) => n > 1)).toEqual([]);
});
