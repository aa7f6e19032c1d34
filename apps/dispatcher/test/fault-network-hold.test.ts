import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import {
  assertNoItemProcessedTwiceAtOnce, readJournal, seedWorkspace, sleep, startTcpProxy, tempFile, waitFor, type JournalEntry, type TcpProxy,
} from '@svc/testing';

/**
 * Fault: a robot's network goes silent without closing anything (a Wi-Fi, VPN or NAT dropping
 * its state) for 25 s while it works on a 20-s item and on a 20-s job, with another robot ready.
 * The relay between the robot and the platform holds every byte both ways, then heals. The
 * cut-off robot must stop each run before the platform may hand it to the other robot (its SDK
 * aborts a run whose ownership it could not confirm for `lease − heartbeat`), so the journals
 * show no moment with two robots on the same item or job; the item ends completed once, the job's
 * retry runs on the other machine only after the cut-off run stopped, and the cut-off robot is
 * back online by itself within 30 s of the network healing. docs/agent-protocol.md, "Ownership".
 */
// liveness bounds: the verdict on the silent machine takes MACHINE_OFFLINE_AFTER_SECONDS (10 s in
// tests) plus a sweep, and the other robot's run 20 s
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;
let relay: TcpProxy | null = null;

beforeAll(() => ({ ctx } = suite));
afterAll(async () => relay?.close());

const HOLD_MS = 25_000;
const RUN_MS = 20_000;

const machineStatus = async (id: string) => (await ctx.sql`select status from machines where id = ${id}`)[0]!.status as string;
const heartbeating = async (ids: string[]) => {
  const [{ n }] = await ctx.sql`select count(*)::int as n from machines where id = any(${ids}::uuid[]) and agent_version is not null and status <> 'offline'`;
  return n === ids.length;
};

it('a robot whose connection goes silent stops its item and its job before another robot takes them, and comes back by itself', async () => {
  const gateway = await children.gateway(ctx);
  relay = await startTcpProxy(Number(new URL(gateway).port));

  // the queue: one item of RUN_MS, retried once
  const a = await seedWorkspace(ctx.sql);
  const consumer = await a.process();
  const queue = await a.queue({ consumer_process_id: consumer.id, max_consumers: 2, max_retries: 1 });
  const cutItems = await a.machine({ name: 'cut-items', slots: 1, status: 'offline' });
  const readyItems = await a.machine({ name: 'ready-items', slots: 1, status: 'offline' });
  // the job: RUN_MS long, retried once automatically
  const b = await seedWorkspace(ctx.sql);
  const proc = await b.process({ max_retries: 1, auto_retry: true, retry_delay_seconds: 0 });
  const cutJobs = await b.machine({ name: 'cut-jobs', slots: 1, status: 'offline' });
  const readyJobs = await b.machine({ name: 'ready-jobs', slots: 1, status: 'offline' });

  const cutJournal = tempFile('cut.jsonl');
  const readyJournal = tempFile('ready.jsonl');
  await children.agent(ctx, ['--machine-key', cutItems.machineKey, '--machine-key', cutJobs.machineKey, '--journal', cutJournal], {}, { url: relay.url });
  await waitFor('the cut-off robot online', () => heartbeating([cutItems.row.id, cutJobs.row.id]), 60_000);

  const added = await ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items`).set('X-API-Key', a.key)
    .send({ data: { _sim: { duration_ms: RUN_MS } } });
  expect(added.status).toBe(200);
  const itemId = added.body.data.id as string;
  const triggered = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', b.key)
    .send({ process_id: proc.id, machine_id: cutJobs.row.id, input_data: { _sim: { duration_ms: RUN_MS } } });
  expect(triggered.status).toBe(201);
  const jobId = triggered.body.data.id as string;
  const started = (e: JournalEntry) => e.event === 'item-start' ? e.item_id === itemId : e.event === 'job-start' && e.job_id === jobId;
  await waitFor('the cut-off robot working on both', async () => readJournal(cutJournal).filter(started).length === 2, 60_000);

  // the other robot comes up only now, so that the platform's first choice was the cut-off one
  await children.agent(ctx, ['--machine-key', readyItems.machineKey, '--machine-key', readyJobs.machineKey, '--journal', readyJournal]);
  await waitFor('the ready robot online', () => heartbeating([readyItems.row.id, readyJobs.row.id]), 60_000);

  relay.hold();
  const heldAt = Date.now();
  // the platform gives both runs up and the other robot starts them, while the network is still silent
  const retried = await waitFor('the other robot working on the item and on the job\'s retry', async () => {
    const entries = readJournal(readyJournal);
    const item = entries.find((e) => e.event === 'item-start' && e.item_id === itemId);
    // the item's consumer is a job too (on the other machine): the retry is the job started on readyJobs
    const job = entries.find((e) => e.event === 'job-start' && e.job_id !== jobId && e.machine_id === readyJobs.row.id);
    return item && job ? { item, job } : null;
  }, 90_000);
  expect(await machineStatus(cutItems.row.id)).toBe('offline');
  expect(await machineStatus(cutJobs.row.id)).toBe('offline');

  // the cut-off robot stopped both runs, by itself, before the other robot started them
  const cut = readJournal(cutJournal);
  const itemAborted = cut.find((e) => e.event === 'item-end' && e.item_id === itemId);
  const jobAborted = cut.find((e) => e.event === 'job-end' && e.job_id === jobId);
  expect(itemAborted).toMatchObject({ outcome: 'aborted' });
  expect(jobAborted).toMatchObject({ outcome: 'aborted' });
  expect(itemAborted!.t).toBeLessThan(retried.item.t);
  expect(jobAborted!.t).toBeLessThan(retried.job.t);
  expect(itemAborted!.t).toBeGreaterThan(heldAt);

  // the fault lasts its whole length (longer on a host slow to give the runs up), then the network heals
  await sleep(Math.max(0, heldAt + HOLD_MS - Date.now()));
  relay.release();
  const healedAt = Date.now();
  await waitFor('the cut-off robot back online by itself', () => heartbeating([cutItems.row.id, cutJobs.row.id]), 30_000);
  const backAfterMs = Date.now() - healedAt;

  const itemDone = await waitFor('the item completed', async () => {
    const [row] = await ctx.sql`select status, retry_count, processed_by from queue_items where id = ${itemId}`;
    return row!.status === 'completed' ? row : null;
  }, 60_000);
  expect(itemDone).toEqual({ status: 'completed', retry_count: 1, processed_by: readyItems.row.id });
  const retryJob = await waitFor('the job\'s retry completed', async () => {
    const [row] = await ctx.sql`select id, status, machine_id from jobs where id = ${retried.job.job_id}`;
    return row!.status === 'completed' ? row : null;
  }, 60_000);
  expect(retryJob.machine_id).toBe(readyJobs.row.id);
  const [first] = await ctx.sql`select status from jobs where id = ${jobId}`;
  expect(first!.status).toBe('failed');

  const all = [...readJournal(cutJournal), ...readJournal(readyJournal)];
  expect(assertNoItemProcessedTwiceAtOnce(all)).toBe(1);
  // exactly one robot completed the item; the job's two runs never overlapped
  expect(all.filter((e) => e.event === 'item-end' && e.item_id === itemId && e.outcome === 'completed')).toHaveLength(1);
  console.log(`network held ${HOLD_MS} ms: item aborted ${itemAborted!.t - heldAt} ms and job aborted ${jobAborted!.t - heldAt} ms into it; ` +
    `the other robot started them ${retried.item.t - heldAt} / ${retried.job.t - heldAt} ms into it; back online ${backAfterMs} ms after healing`);
});
