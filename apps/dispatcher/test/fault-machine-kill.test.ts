import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import { assertNoItemProcessedTwiceAtOnce, itemStatusCounts, readJournal, seedWorkspace, tempFile, waitFor } from '@svc/testing';

/**
 * Fault: a machine's agent is killed with SIGKILL while it processes an item. The machine goes
 * offline (no heartbeat for MACHINE_OFFLINE_AFTER_SECONDS), its consumer job fails with a clear
 * message, the item fails with a clear message and follows the retry policy, and another
 * machine finishes the queue. No item is processed by two machines at the same time.
 */
// the waits are liveness bounds: the offline verdict takes MACHINE_OFFLINE_AFTER_SECONDS (10 s in
// tests) plus a sweep, more on a loaded host
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
const { children } = suite;
let ctx: ApiTestContext;

beforeAll(() => ({ ctx } = suite));

it('a machine killed mid-item: the item fails with a clear message, is retried elsewhere, and every item ends final', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, max_consumers: 2, max_retries: 1 });
  const victim = await ws.machine({ name: 'victim', slots: 1 });
  const survivor = await ws.machine({ name: 'survivor', slots: 1 });
  const jv = tempFile('victim.jsonl');
  const js = tempFile('survivor.jsonl');
  const agentV = await children.agent(ctx, ['--machine-key', victim.machineKey, '--item-duration', '150ms', '--journal', jv]);
  await children.agent(ctx, ['--machine-key', survivor.machineKey, '--item-duration', '150ms', '--journal', js]);

  const res = await ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items/bulk`).set('X-API-Key', ws.key)
    .send({ items: Array.from({ length: 16 }, (_, i) => ({ n: i })) });
  expect(res.status).toBe(200);

  const held = await waitFor('the victim holding an item', async () => {
    const [row] = await ctx.sql`select id from queue_items where queue_id = ${queue.id} and status = 'in_progress' and processed_by = ${victim.row.id}`;
    return row;
  });
  agentV.proc.kill('SIGKILL');
  await agentV.exited;
  const deathAt = Date.now();

  await waitFor('the victim offline', async () => (await ctx.sql`select status from machines where id = ${victim.row.id}`)[0]!.status === 'offline', 60_000);
  const counts = await waitFor('every item final', async () => {
    const c = await itemStatusCounts(ctx.sql, queue.id);
    return (c.completed ?? 0) + (c.dead_letter ?? 0) === 16 ? c : null;
  }, 60_000);
  expect(counts.completed).toBe(16);

  const [item] = await ctx.sql`select * from queue_items where id = ${held.id}`;
  expect(item!.retry_count).toBe(1);
  expect(item!.error_message).toMatch(/La máquina victim dejó de responder mientras procesaba el elemento/);
  expect(item!.processed_by).toBe(survivor.row.id);

  const victimJobs = await ctx.sql`select status, error_message from jobs where machine_id = ${victim.row.id} and queue_id = ${queue.id}`;
  const failed = victimJobs.filter((j) => j.status === 'failed');
  expect(failed.length).toBeGreaterThanOrEqual(1);
  expect(failed[0]!.error_message).toMatch(/victim dejó de enviar latidos/);
  expect(victimJobs.every((j) => ['failed', 'stopped', 'completed'].includes(j.status))).toBe(true);

  const entries = [...readJournal(jv), ...readJournal(js)];
  const victimPid = agentV.proc.pid!;
  expect(assertNoItemProcessedTwiceAtOnce(entries, { [victimPid]: deathAt })).toBe(16);
  const [{ n }] = await ctx.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id} and status = 'in_progress'`;
  expect(n).toBe(0);
});

it('a restarted agent gives up the jobs its previous process was running, and its machine comes back online', async () => {
  const ws = await seedWorkspace(ctx.sql);
  const proc = await ws.process();
  const m = await ws.machine({ name: 'phoenix', slots: 1 });
  const first = await children.agent(ctx, ['--machine-key', m.machineKey, '--duration', '20s']);
  const res = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: proc.id, machine_id: m.row.id });
  expect(res.status).toBe(201);
  const jobId = res.body.data.id as string;
  // the robot holds the run (a run it never acknowledged would be handed out again, not failed)
  await waitFor('the robot to acknowledge the run', async () => (await ctx.sql`select acknowledged_at from jobs where id = ${jobId}`)[0]!.acknowledged_at);
  first.proc.kill('SIGKILL');
  await first.exited;
  // restarted at once, before the machine is even declared offline
  await children.agent(ctx, ['--machine-key', m.machineKey, '--duration', '100ms']);
  const job = await waitFor('the lost job ended', async () => {
    const [row] = await ctx.sql`select * from jobs where id = ${jobId}`;
    return row!.status === 'failed' ? row : null;
  }, 60_000);
  expect(job.error_message).toMatch(/phoenix se reinició mientras ejecutaba el job|phoenix dejó de enviar latidos/);
  await waitFor('online', async () => (await ctx.sql`select status from machines where id = ${m.row.id}`)[0]!.status === 'online', 60_000);
});
