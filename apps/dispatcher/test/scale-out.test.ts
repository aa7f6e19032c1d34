import {
  assertNoItemProcessedTwiceAtOnce, freePort, itemStatusCounts, readJournal, seedWorkspace, tempFile, testSuite, waitFor, waitForHttp, type TestContext,
} from '@svc/testing';

/**
 * Two dispatchers and two API processes at once (plus two agent processes): every item and job
 * reaches a final state, no item is processed by two machines at once, no job runs twice, and
 * the queue's max_consumers holds although both dispatchers decide.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(240_000);
const suite = testSuite();
const { children } = suite;
let ctx: TestContext;

beforeAll(() => ({ ctx } = suite));

it('two dispatchers and two APIs share the work without losing or doubling any of it', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 3, max_retries: 2 });
  const machines = await Promise.all([1, 2, 3, 4].map(() => ws.machine({ slots: 2 })));
  const [p1, p2] = [await freePort(), await freePort()];
  children.api(ctx, p1);
  children.api(ctx, p2);
  children.dispatcher(ctx);
  children.dispatcher(ctx);
  const j1 = tempFile('a.jsonl');
  const j2 = tempFile('b.jsonl');
  const args = ['--item-duration', '3-8ms', '--duration', '50-150ms', '--failure-rate', '0.05', '--seed', '11'];
  await children.agent(ctx, ['--machine-key', machines[0]!.machineKey, '--machine-key', machines[1]!.machineKey, ...args, '--journal', j1], {}, { url: `http://127.0.0.1:${p1},http://127.0.0.1:${p2}` });
  await children.agent(ctx, ['--machine-key', machines[2]!.machineKey, '--machine-key', machines[3]!.machineKey, ...args, '--journal', j2], {}, { url: `http://127.0.0.1:${p2},http://127.0.0.1:${p1}` });
  await Promise.all([waitForHttp(`http://127.0.0.1:${p1}/health`), waitForHttp(`http://127.0.0.1:${p2}/health`)]);

  const post = async (port: number, path: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ws.key }, body: JSON.stringify(body),
    });
    return res.status;
  };
  const statuses = await Promise.all([
    ...[0, 1, 2].map((i) => post(p1, `/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 50 }, (_, k) => ({ api: 1, i, k })) })),
    ...[0, 1, 2].map((i) => post(p2, `/api/v1/queues/by-name/${queue.name}/items/bulk`, { items: Array.from({ length: 50 }, (_, k) => ({ api: 2, i, k })) })),
    ...Array.from({ length: 20 }, (_, i) => post(i % 2 ? p1 : p2, `/api/v1/queues/by-name/${queue.name}/items`, { data: { single: i }, priority: 1 + (i % 5) })),
    ...Array.from({ length: 6 }, (_, i) => post(i % 2 ? p1 : p2, '/api/v1/jobs/trigger', { process_id: proc.id, machine_id: machines[i % 4]!.row.id })),
  ]);
  expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);

  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 320 ? c : null;
  }, 90_000);
  expect((counts.completed ?? 0) + (counts.dead_letter ?? 0)).toBe(320);
  await waitFor('every job final', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where tenant_id = ${ws.tenant.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);

  const entries = [...readJournal(j1), ...readJournal(j2)];
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(320);
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  expect([...starts.values()].every((n) => n === 1)).toBe(true);
  // at no moment more consumer jobs of the queue running than max_consumers (Postgres' own record)
  const spans = await ctx.sql`select started_at, finished_at from jobs where queue_id = ${queue.id} and started_at is not null`;
  const edges = spans.flatMap((j) => [[j.started_at.getTime(), 1], [j.finished_at.getTime(), -1]] as Array<[number, number]>)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let peak = 0;
  for (const [, d] of edges) {
    running += d;
    peak = Math.max(peak, running);
  }
  expect(peak).toBeGreaterThanOrEqual(1);
  expect(peak).toBeLessThanOrEqual(3);
  const triggered = await ctx.sql`select status from jobs where tenant_id = ${ws.tenant.id} and queue_id is null and source = 'api'`;
  expect(triggered).toHaveLength(6);
});
