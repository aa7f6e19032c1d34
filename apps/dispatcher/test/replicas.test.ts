import { DISPATCH_SCHEDULERS } from '@svc/core';
import {
  assertNoItemProcessedTwiceAtOnce, FAST_ENGINE_ENV, freePort, itemStatusCounts, processSuite, readJournal, requestOnce, sampleValue, scrape, seedApiKey, seedWorkspace,
  tempFile, waitFor, waitForHttp, type Child, type JournalEntry, type TestContext,
} from '@svc/testing';

/**
 * Several replicas of every process: two API and two dispatcher processes on one
 * Postgres and one Redis, started once for the file, with real agents. Each `it` proves one
 * promise of docs/decisions/replicas.md. That a seconds-cron schedule fires exactly one job per
 * tick with two dispatchers is proven in apps/dispatcher/test/schedules.test.ts and not repeated.
 */
jest.setTimeout(90_000);
const suite = processSuite();
const { children } = suite;
let ctx: TestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let proc: Awaited<ReturnType<typeof ws.process>>;
let apis: [string, string];
let metricsUrls: [string, string];
let dispatchers: [Child, Child];
/** machines of the load agent (short jobs) and the machine whose jobs run until stopped */
let loadMachines: Array<Awaited<ReturnType<typeof ws.machine>>>;
let slowMachine: Awaited<ReturnType<typeof ws.machine>>;
const loadJournal = tempFile('load.jsonl');
const slowJournal = tempFile('slow.jsonl');

/**
 * No machine is meant to go silent here, and on a loaded 2-core machine FAST_ENGINE_ENV's 2 s
 * silence took a busy agent offline now and then, failing its runs: a slower verdict for every
 * process of the file (no test of it waits for an agent to be declared lost).
 */
const ENV = { MACHINE_OFFLINE_AFTER_SECONDS: '6' };

async function startDispatcher(): Promise<{ child: Child; metrics: string }> {
  const port = await freePort();
  const child = children.dispatcher(ctx, { ...ENV, METRICS_PORT: String(port) });
  const metrics = `http://127.0.0.1:${port}/metrics`;
  await waitForHttp(metrics);
  return { child, metrics };
}

beforeAll(async () => {
  ctx = suite.ctx;
  ws = await seedWorkspace(ctx.sql);
  proc = await ws.process();
  loadMachines = await Promise.all([1, 2].map(() => ws.machine({ slots: 3 })));
  slowMachine = await ws.machine({ slots: 1 });
  const [p1, p2] = [await freePort(), await freePort()];
  children.api(ctx, p1, ENV);
  children.api(ctx, p2, ENV);
  apis = [`http://127.0.0.1:${p1}`, `http://127.0.0.1:${p2}`];
  const [d1, d2] = await Promise.all([startDispatcher(), startDispatcher()]);
  dispatchers = [d1.child, d2.child];
  metricsUrls = [d1.metrics, d2.metrics];
  await children.agent(ctx, [
    ...loadMachines.flatMap((m) => ['--machine-key', m.machineKey]),
    '--item-duration', '3-8ms', '--duration', '30-80ms', '--seed', '20', '--journal', loadJournal,
  ], ENV, { url: apis.join(',') });
  // a job on this machine runs until it is stopped (or far beyond any wait of this file); its
  // robot is connected to the other replica
  await children.agent(ctx, ['--machine-key', slowMachine.machineKey, '--duration', '120s', '--journal', slowJournal], ENV, { url: [...apis].reverse().join(',') });
  await Promise.all(apis.map((a) => waitForHttp(`${a}/health`)));
  // every agent heartbeated (the seeded machines had never)
  await waitFor('the agents are up', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from machines where tenant_id = ${ws.tenant.id} and host_info is not null and status <> 'offline'`;
    return n === 3;
  }, 45_000);
});

const request = (api: string, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-api-key': ws.key }) =>
  fetch(`${api}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const jsonOf = async <T>(res: Response) => ((await res.json()) as { data: T }).data;

/** A counter or histogram count summed over both dispatchers' /metrics. */
async function summed(name: string, labels: Record<string, string>, urls: readonly string[] = metricsUrls): Promise<number> {
  const texts = await Promise.all(urls.map((u) => scrape(u)));
  return texts.reduce((sum, t) => sum + (sampleValue(t, name, labels) ?? 0), 0);
}

function jobStarts(entries: JournalEntry[]): Map<string, number> {
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  return starts;
}

it('runs each periodic pass once per tick although two dispatchers schedule it', async () => {
  // one BullMQ job scheduler per pass, shared by both dispatchers (each upserts the same ids)
  expect(await suite.bull.dispatchQueue.getJobSchedulersCount()).toBe(DISPATCH_SCHEDULERS.length);
  const sweepEvery = Number(FAST_ENGINE_ENV.DISPATCH_SWEEP_MS);
  const reconcileEvery = Number(FAST_ENGINE_ENV.DISPATCH_RECONCILE_MS);
  const t0 = Date.now();
  const [sweeps0, reconciles0] = await Promise.all([
    summed('svc_dispatcher_pass_seconds_count', { pass: 'sweep' }),
    summed('svc_dispatcher_pass_seconds_count', { pass: 'reconcile' }),
  ]);
  // wait for a number of passes, not for a time: a loaded machine only makes the window longer
  const [sweeps1, reconciles1] = await waitFor('enough passes', async () => {
    const s = await summed('svc_dispatcher_pass_seconds_count', { pass: 'sweep' });
    const r = await summed('svc_dispatcher_pass_seconds_count', { pass: 'reconcile' });
    return s - sweeps0 >= 30 && r - reconciles0 >= 12 ? [s, r] : null;
  }, 45_000, 100);
  const elapsed = Date.now() - t0;
  // A pass run by both dispatchers would come to about two per tick. One per tick leaves room
  // only for the passes already under way when the window opened (slow ones on a loaded
  // machine): BullMQ makes a tick's job when the previous one starts and never catches missed
  // ticks up in a burst. Hence at most 1.5 per tick, plus the window's two ends.
  const ticks = (every: number) => Math.floor(elapsed / every);
  expect(sweeps1 - sweeps0).toBeLessThanOrEqual(1.5 * ticks(sweepEvery) + 2);
  expect(reconciles1 - reconciles0).toBeLessThanOrEqual(1.5 * ticks(reconcileEvery) + 2);
});

it('publishes every outbox effect once: each triggered job reaches its robot once, the outbox drains', async () => {
  const published0 = await summed('svc_outbox_published_total', { kind: 'jobs-created' });
  const n = 20;
  const created = await Promise.all(Array.from({ length: n }, async (_, i) => {
    const res = await request(apis[i % 2]!, 'POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: loadMachines[i % 2]!.row.id });
    expect(res.status).toBe(201);
    return (await jsonOf<{ id: string }>(res)).id;
  }));
  await waitFor('every triggered job final and the outbox drained', async () => {
    const [{ open }] = await ctx.sql`select count(*)::int as open from jobs where id = any(${created}) and status not in ('completed', 'failed', 'stopped', 'timed_out')`;
    const [{ rows }] = await ctx.sql`select count(*)::int as rows from outbox`;
    return open === 0 && rows === 0;
  }, 30_000);
  // one trigger writes one jobs-created effect: both relays together published each exactly once
  expect((await summed('svc_outbox_published_total', { kind: 'jobs-created' })) - published0).toBe(n);
  // every job reached its robot, and only once (whether the robot then completed it is not the point)
  const starts = jobStarts(readJournal(loadJournal));
  expect(created.map((id) => starts.get(id))).toEqual(Array(n).fill(1));
  const [{ rows }] = await ctx.sql`select count(*)::int as rows from outbox`;
  expect(rows).toBe(0);
});

it('keeps a rate limit exact across both APIs: exactly the limit passes, the rest is 429', async () => {
  const { key } = await seedApiKey(ctx.sql, ws.tenant.id, { scopes: ['processes:read'] });
  const limit = 60; // GET /processes/list (packages/core/src/rate-limits.ts)
  // one request per connection, so that the limiter counts exactly the requests sent (requestOnce)
  const statuses = await Promise.all(Array.from({ length: 90 }, (_, i) =>
    requestOnce(`${apis[i % 2]!}/api/v1/processes/list`, { headers: { 'x-api-key': key } }).then((r) => r.status)));
  const byStatus: Record<number, number> = {};
  for (const s of statuses) byStatus[s] = (byStatus[s] ?? 0) + 1;
  expect(byStatus).toEqual({ 200: limit, 429: 90 - limit });
  for (const api of apis) expect((await request(api, 'GET', '/api/v1/processes/list', undefined, { 'x-api-key': key })).status).toBe(429);
});

it('refuses a key revoked through API A on API B with the very next request', async () => {
  const admin = { authorization: `Bearer ${ws.adminToken}` };
  const createdRes = await request(apis[0], 'POST', '/api/v1/settings/api-keys', { name: 'replicated', scopes: ['processes:read'] }, admin);
  expect(createdRes.status).toBe(201);
  const { id, key } = await jsonOf<{ id: string; key: string }>(createdRes);
  const use = (api: string) => request(api, 'GET', '/api/v1/processes/list', undefined, { 'x-api-key': key }).then((r) => r.status);
  // both APIs hold the key in their caches
  for (const api of [...apis, ...apis]) expect(await use(api)).toBe(200);
  expect((await request(apis[0], 'DELETE', `/api/v1/settings/api-keys/${id}`, undefined, admin)).status).toBe(200);
  expect(await use(apis[1])).toBe(401);
  expect(await use(apis[0])).toBe(401);
});

it('a stop reaches the robot whichever API took it: triggered through A, stopped through B', async () => {
  const triggered = await request(apis[0], 'POST', '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: slowMachine.row.id });
  expect(triggered.status).toBe(201);
  const { id } = await jsonOf<{ id: string }>(triggered);
  await waitFor('the robot runs the job', async () => readJournal(slowJournal).some((e) => e.event === 'job-start' && e.job_id === id), 20_000);
  const stop = await request(apis[1], 'POST', `/api/v1/jobs/${id}/stop`);
  expect(stop.status).toBe(200);
  // the robot's own end of the run says stopped (the job runs 120 s otherwise)
  const end = await waitFor('the robot ended the run', async () => readJournal(slowJournal).find((e) => e.event === 'job-end' && e.job_id === id), 20_000);
  expect(end.status).toBe('stopped');
  const [job] = await ctx.sql`select status, stop_requested from jobs where id = ${id}`;
  expect(job).toEqual({ status: 'stopped', stop_requested: true });
});

it('loses nothing when either dispatcher is SIGKILLed mid-load: every item completed, none twice at once', async () => {
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 3, max_retries: 5 });
  let seq = 0;
  const addItems = async (count: number) => {
    const statuses = await Promise.all([
      ...[0, 1].map((a) => request(apis[a]!, 'POST', `/api/v1/queues/by-name/${queue.name}/items/bulk`, {
        items: Array.from({ length: count }, () => ({ n: seq++ })),
      }).then((r) => r.status)),
      ...Array.from({ length: 6 }, (_, i) => request(apis[i % 2]!, 'POST', `/api/v1/queues/by-name/${queue.name}/items`, { data: { n: seq++ } })
        .then((r) => r.status)),
    ]);
    expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);
    return 2 * count + 6;
  };
  const completed = async () => (await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0;
  let total = await addItems(150);
  for (const victim of [0, 1] as const) {
    // mid-load: some items done, more to come
    const before = await completed();
    await waitFor('processing under way', async () => (await completed()) > before, 20_000);
    dispatchers[victim].proc.kill('SIGKILL');
    await dispatchers[victim].exited;
    total += await addItems(100);
    // the survivor alone carries the load for a while, then the victim comes back
    const reached = await completed();
    await waitFor('the survivor keeps the work going', async () => (await completed()) >= reached + 20, 20_000);
    const restarted = await startDispatcher();
    dispatchers[victim] = restarted.child;
    metricsUrls[victim] = restarted.metrics;
    total += await addItems(50);
  }
  const counts = await waitFor('every item completed', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) === total ? c : null;
  }, 45_000);
  expect(counts).toEqual({ completed: total });
  await waitFor('every consumer job final', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 20_000);
  const entries = readJournal(loadJournal);
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(total);
  expect([...jobStarts(entries).values()].every((n) => n === 1)).toBe(true);
});
