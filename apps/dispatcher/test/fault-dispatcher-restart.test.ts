import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import { assertNoItemProcessedTwiceAtOnce, itemStatusCounts, readJournal, seedWorkspace, tempFile, waitFor } from '@svc/testing';

/**
 * Fault: the dispatcher is killed (SIGKILL) mid-load and started again. It keeps no state of
 * its own, so nothing is lost: work that arrived while it was down starts when it is back, and
 * every item and job reaches a final state exactly once.
 */
// the waits are liveness bounds for a loaded host: they return as soon as the work is done
jest.setTimeout(240_000);
const suite = apiSuite();
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));

it('kill and restart the dispatcher mid-load: every item and job ends final, none twice', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const failing = await ws.process({ auto_retry: true, max_retries: 1, retry_delay_seconds: 1 });
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 2 });
  const m1 = await ws.machine({ slots: 2 });
  const m2 = await ws.machine({ slots: 2 });
  const journal = tempFile('journal.jsonl');
  await children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, '--item-duration', '5-15ms', '--duration', '100-300ms', '--failure-rate', '0.1', '--seed', '7', '--journal', journal]);
  let dispatcher = children.dispatcher(ctx);

  const bulk = (n: number, from: number) => ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items/bulk`).set('X-API-Key', ws.key)
    .send({ items: Array.from({ length: n }, (_, i) => ({ n: from + i })) });
  const trigger = (processId: string) => ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: processId, machine_id: m1.row.id });

  expect((await bulk(150, 0)).status).toBe(200);
  for (let i = 0; i < 3; i++) expect((await trigger(proc.id)).status).toBe(201);
  await waitFor('processing under way', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) >= 20, 60_000);

  dispatcher.proc.kill('SIGKILL');
  await dispatcher.exited;
  // the running consumers drain what they can; then nothing starts new consumers
  await waitFor('the consumers finished', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  // work arrives while no dispatcher runs: jobs still reach their machine (the API enqueues them)
  expect((await bulk(100, 150)).status).toBe(200);
  const triggeredWhileDown: string[] = [];
  for (const p of [failing.id, proc.id, proc.id]) {
    const r = await trigger(p);
    expect(r.status).toBe(201);
    triggeredWhileDown.push(r.body.data.id as string);
  }
  // the jobs triggered after the items ran to their end on the robot: by then a consumer started
  // for those items without a dispatcher would have been under way as well
  await waitFor('the jobs triggered while the dispatcher is down ended', async () => {
    const rows = await ctx.sql`select status from jobs where id = any(${triggeredWhileDown}::uuid[])`;
    return rows.length === 3 && rows.every((r) => r.status === 'completed' || r.status === 'failed');
  }, 60_000);
  const whileDown = await itemStatusCounts(ctx.sql, queue.id);
  expect(whileDown.new ?? 0).toBeGreaterThanOrEqual(100);

  dispatcher = children.dispatcher(ctx);
  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 250 ? c : null;
  }, 90_000);
  expect((counts.completed ?? 0) + (counts.dead_letter ?? 0)).toBe(250);

  await waitFor('every job final', async () => {
    const [{ n }] = await ctx.sql`select count(*)::int as n from jobs where tenant_id = ${ws.tenant.id} and status in ('pending', 'running')`;
    return n === 0;
  }, 60_000);
  // the failing process was retried once by the restarted dispatcher's world
  const failingJobs = await ctx.sql`select status, retry_count from jobs where process_id = ${failing.id} order by retry_count`;
  expect(failingJobs.length).toBeGreaterThanOrEqual(1);
  expect(failingJobs.every((j) => ['completed', 'failed'].includes(j.status))).toBe(true);

  const entries = readJournal(journal);
  expect(assertNoItemProcessedTwiceAtOnce(entries)).toBe(250);
  // each job ran at most once
  const starts = new Map<string, number>();
  for (const e of entries.filter((x) => x.event === 'job-start')) starts.set(e.job_id, (starts.get(e.job_id) ?? 0) + 1);
  expect([...starts.values()].every((n) => n === 1)).toBe(true);
});
