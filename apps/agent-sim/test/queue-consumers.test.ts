import { writeFileSync } from 'node:fs';
import { recordHeartbeat } from '@svc/core/internals';
import { AUTO_MAX } from '../src/prefetch';
import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import {
  Children, assertNoItemProcessedTwiceAtOnce, itemStatusCounts, readJournal, seedWorkspace, tempFile, waitFor,
} from '@svc/testing';

/**
 * Queue consumers end to end: items added through the API, consumer jobs started by a real
 * dispatcher on machines run by real agent-sim processes.
 */
// waits are liveness bounds for a loaded host; an offline verdict alone takes 10 s (FAST_ENGINE_ENV)
jest.setTimeout(180_000);
/** the suite's own children are the engine (its dispatcher); each test's agents are `children` */
const suite = apiSuite({ dispatcher: true });
let ctx: ApiTestContext;
/** each test gets its own workspace: machines of another test's agents never take its items */
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
const children = new Children();

beforeAll(() => ({ ctx } = suite));
beforeEach(async () => {
  ws = await seedWorkspace(ctx.sql);
});
afterEach(() => children.stopAll());

async function addItem(queueName: string, body: Record<string, unknown>) {
  const res = await ctx.http.post(`/api/v1/queues/by-name/${queueName}/items`).set('X-API-Key', ws.key).send(body);
  expect(res.status).toBe(200);
  return res.body.data as { id: string };
}

async function addBulk(queueName: string, items: Array<Record<string, unknown>>) {
  const res = await ctx.http.post(`/api/v1/queues/by-name/${queueName}/items/bulk`).set('X-API-Key', ws.key).send({ items });
  expect(res.status).toBe(200);
  return res.body.data.added as number;
}

function allFinal(queueId: string, total: number, finals = ['completed', 'dead_letter', 'pending_review']) {
  return waitFor(`${total} items of the queue in a final state`, async () => {
    const counts = await itemStatusCounts(ctx.sql, queueId);
    const done = finals.reduce((n, s) => n + (counts[s] ?? 0), 0);
    return done === total ? counts : null;
  }, 60_000);
}

async function consumerQueue(fields: Record<string, unknown> = {}) {
  const proc = await ws.process();
  const queue = await ws.queue({ consumer_process_id: proc.id, ...fields });
  return { proc, queue };
}

describe('a queue with a consumer process', () => {
  it('starts consumer jobs on online machines and takes every added item to completed', async () => {
    const m1 = await ws.machine({ slots: 2 });
    const m2 = await ws.machine({ slots: 2 });
    const { proc, queue } = await consumerQueue({ max_consumers: 2 });
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, '--item-duration', '5ms', '--journal', journal]);
    expect(await addBulk(queue.name, Array.from({ length: 60 }, (_, i) => ({ n: i })))).toBe(60);
    await addItem(queue.name, { data: { single: true }, reference: 'R-1' });
    await allFinal(queue.id, 61, ['completed']);

    const items = await ctx.sql`select * from queue_item_records where queue_id = ${queue.id}`;
    for (const it of items) {
      expect(it.result).toMatchObject({ machine: expect.any(String) });
      expect(it.processed_at).toBeInstanceOf(Date);
      expect([m1.row.id, m2.row.id]).toContain(it.processed_by);
      expect(it.retry_count).toBe(0);
    }
    const jobs = await ctx.sql`select * from jobs where queue_id = ${queue.id}`;
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    for (const j of jobs) {
      expect(j.process_id).toBe(proc.id);
      expect(j.source).toBe('queue');
    }
    await waitFor('consumer jobs to finish', async () => {
      const rows = await ctx.sql`select status from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
      return rows.length === 0;
    });
    const done = await ctx.sql`select output_data from jobs where queue_id = ${queue.id} and status = 'completed'`;
    const processed = done.reduce((n, j) => n + (j.output_data?.items_completed ?? 0), 0);
    expect(processed).toBe(61);
    // the API shows them too
    const list = await ctx.http.get(`/api/v1/queues/by-name/${queue.name}/items?status=completed&limit=100`).set('X-API-Key', ws.key);
    expect(list.body.meta.total).toBe(61);
    expect(assertNoItemProcessedTwiceAtOnce(readJournal(journal))).toBe(61);
  });

  it('never runs more consumer jobs at once than max_consumers', async () => {
    const m1 = await ws.machine({ slots: 3 });
    const m2 = await ws.machine({ slots: 3 });
    const { queue } = await consumerQueue({ max_consumers: 2 });
    await children.agent(ctx, ['--machine-key', m1.machineKey, '--machine-key', m2.machineKey, '--item-duration', '20ms']);
    for (let i = 0; i < 4; i++) await addBulk(queue.name, Array.from({ length: 15 }, (_, k) => ({ batch: i, k })));
    await allFinal(queue.id, 60, ['completed']);
    // the last consumer may still be finding the queue empty: let every consumer end first
    await waitFor('consumer jobs to finish', async () => {
      const rows = await ctx.sql`select 1 from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
      return rows.length === 0;
    });
    // Postgres' own record of when each consumer ran
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
    expect(peak).toBeLessThanOrEqual(2);
  });

  it('processes a mixed batch in exactly the take order (priority, nearest deadline, FIFO)', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue({ max_consumers: 1 });
    const soon = new Date(Date.now() + 600_000).toISOString();
    const later = new Date(Date.now() + 7_200_000).toISOString();
    const specs: Array<[string, Record<string, unknown>]> = [
      ['p3-a', {}], ['p1-soon', { priority: 1, deadline: soon }], ['p3-later', { deadline: later }], ['p5-a', { priority: 5 }],
      ['p3-soon', { deadline: soon }], ['p3-b', {}], ['p5-later', { priority: 5, deadline: later }], ['p4', { priority: 4 }],
      ['p3-c', {}], ['p5-soon', { priority: 5, deadline: soon }],
    ];
    // no agent yet: the whole batch waits, then one consumer takes it
    const ids = new Map<string, string>();
    for (const [ref, extra] of specs) ids.set((await addItem(queue.name, { data: { ref }, reference: ref, ...extra })).id, ref);
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '2ms', '--prefetch', '1', '--journal', journal]);
    await allFinal(queue.id, specs.length, ['completed']);
    const order = readJournal(journal).filter((e) => e.event === 'item-start' && ids.has(e.item_id!)).map((e) => ids.get(e.item_id!));
    expect(order).toEqual(['p5-soon', 'p5-later', 'p5-a', 'p4', 'p3-soon', 'p3-later', 'p3-a', 'p3-b', 'p3-c', 'p1-soon']);
  });

  it('by default (prefetch auto) takes instant items up to four at a time, and items of 10 ms or more one at a time', async () => {
    const m = await ws.machine({ slots: 1 });
    const fast = await consumerQueue({ max_consumers: 1 });
    const slow = await consumerQueue({ max_consumers: 1 });
    const config = tempFile('agent.json');
    writeFileSync(config, JSON.stringify({ processes: { [fast.proc.id]: { item_duration: 0 }, [slow.proc.id]: { item_duration: '12ms' } } }));
    await children.agent(ctx, ['--machine-key', m.machineKey, '--config', config]);
    await addBulk(fast.queue.name, Array.from({ length: 40 }, (_, i) => ({ n: i })));
    await allFinal(fast.queue.id, 40, ['completed']);
    await addBulk(slow.queue.name, Array.from({ length: 12 }, (_, i) => ({ n: i })));
    await allFinal(slow.queue.id, 12, ['completed']);
    // the items of one take share their claim's started_at
    const takes = async (queueId: string) => (await ctx.sql<Array<{ n: number }>>`
      select count(*)::int as n from queue_items where queue_id = ${queueId} group by job_id, started_at order by min(created_at)`).map((r) => r.n);
    const fastTakes = await takes(fast.queue.id);
    expect(fastTakes[0]).toBe(1);
    expect(Math.max(...fastTakes)).toBe(AUTO_MAX);
    expect(await takes(slow.queue.id)).toEqual(Array(12).fill(1));
  });

  it('with a prefetch of K, an urgent item added mid-run waits behind at most K handed-out items', async () => {
    const K = 3;
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue({ max_consumers: 1 });
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '60ms', '--prefetch', String(K), '--journal', journal]);
    // a backlog of at least 6 s of work: still there when the urgent item arrives, however slow the host
    await addBulk(queue.name, Array.from({ length: 100 }, (_, i) => ({ n: i })));
    await waitFor('a few items processed', async () => (await itemStatusCounts(ctx.sql, queue.id)).completed! >= 4);
    const urgent = await addItem(queue.name, { data: { urgent: true }, priority: 5 });
    // from the moment the add is acknowledged the item is visible to every take
    const addedAt = Date.now();
    await allFinal(queue.id, 101, ['completed']);
    const starts = readJournal(journal).filter((e) => e.event === 'item-start');
    const urgentAt = starts.findIndex((e) => e.item_id === urgent.id);
    const startedAfterAdd = starts.slice(0, urgentAt).filter((e) => e.t >= addedAt).length;
    expect(urgentAt).toBeGreaterThan(0);
    expect(startedAfterAdd).toBeLessThanOrEqual(K);
    // and it did jump the low-priority backlog
    expect(starts.length - urgentAt - 1).toBeGreaterThan(0);
  });

  it('honours postpone: a postponed item is taken only after its postpone time', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue();
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '2ms']);
    // far enough ahead that it is still postponed when the ready item is done, however slow the host
    const postpone = new Date(Date.now() + 3_600_000);
    const later = await addItem(queue.name, { data: { later: true }, priority: 5, postpone: postpone.toISOString() });
    const now = await addItem(queue.name, { data: { now: true } });
    await waitFor('the ready item', async () => {
      const [r] = await ctx.sql`select status from queue_items where id = ${now.id}`;
      return r!.status === 'completed';
    });
    await waitFor('its consumer to end', async () => {
      const rows = await ctx.sql`select 1 from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`;
      return rows.length === 0;
    });
    const [waiting] = await ctx.sql`select status, started_at from queue_items where id = ${later.id}`;
    expect(waiting).toEqual({ status: 'new', started_at: null });
    // its postpone time comes (database clock): nothing nudges the engine, it notices on its own
    const [{ due }] = await ctx.sql`update queue_items set postpone = now() + interval '1 second' where id = ${later.id} returning postpone as due`;
    const row = await waitFor('the postponed item', async () => {
      const [r] = await ctx.sql`select * from queue_item_records where id = ${later.id}`;
      return r!.status === 'completed' ? r : null;
    });
    expect(row.started_at.getTime()).toBeGreaterThanOrEqual(due.getTime());
  });

  it('retries a failing item while retry_count < max_retries, then dead-letters it', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue({ max_retries: 2 });
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '2ms', '--journal', journal]);
    const bad = await addItem(queue.name, { data: { _sim: { outcome: 'fail', error_message: 'PDF corrupto' } } });
    const good = await addItem(queue.name, { data: { fine: true } });
    const dead = await waitFor('dead_letter', async () => {
      const [r] = await ctx.sql`select * from queue_item_records where id = ${bad.id}`;
      return r!.status === 'dead_letter' ? r : null;
    });
    expect(dead.retry_count).toBe(2);
    expect(dead.error_message).toBe('PDF corrupto');
    const attempts = readJournal(journal).filter((e) => e.event === 'item-end' && e.item_id === bad.id);
    expect(attempts.map((e) => e.outcome)).toEqual(['failed', 'failed', 'failed']);
    const [g] = await ctx.sql`select status from queue_items where id = ${good.id}`;
    expect(g!.status).toBe('completed');
    // a sweep that began after the dead-lettering retries what its policy still allows: not this one
    await suite.dispatcher.passBegunAfter('sweep');
    const [still] = await ctx.sql`select status from queue_items where id = ${bad.id}`;
    expect(still!.status).toBe('dead_letter');
  });

  it('leaves items that ask for review in pending_review; an approved one is processed again', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue();
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '2ms']);
    const item = await addItem(queue.name, { data: { _sim: { outcome: 'review' } } });
    const reviewed = await waitFor('pending_review', async () => {
      const [r] = await ctx.sql`select * from queue_item_records where id = ${item.id}`;
      return r!.status === 'pending_review' ? r : null;
    });
    expect(reviewed.result).toMatchObject({ review_reason: expect.any(String) });
    // the human approves: back to new, and the robot processes it again (it asks for review again)
    await ctx.sql`update queue_item_payloads set data = ${ctx.sql.json({ approved: true })} where id = ${item.id}`;
    const res = await ctx.http.post(`/api/v1/settings/queues/${queue.id}/items/${item.id}/approve`)
      .set('Authorization', `Bearer ${ws.adminToken}`).send({});
    expect(res.status).toBe(200);
    const done = await waitFor('completed after approval', async () => {
      const [r] = await ctx.sql`select * from queue_item_records where id = ${item.id}`;
      return r!.status === 'completed' ? r : null;
    });
    expect(done.reviewed_by).toBe(ws.adminEmail);
  });

  it('stopping a consumer job lets its current item finish and leaves none of its items in_progress', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue();
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '400ms', '--prefetch', '3', '--journal', journal]);
    // 30 items of 400 ms: 12 s of work, so the stop lands mid-queue however slow the host
    await addBulk(queue.name, Array.from({ length: 30 }, (_, i) => ({ n: i })));
    const job = await waitFor('the consumer running an item', async () => {
      const [r] = await ctx.sql`select j.id from jobs j join queue_items i on i.job_id = j.id and i.status = 'in_progress'
                                where j.queue_id = ${queue.id} and j.status = 'running' limit 1`;
      return r;
    });
    // stop only this consumer: with no consumer process the queue gets no new one afterwards
    await ctx.sql`update queues set consumer_process_id = null where id = ${queue.id}`;
    const res = await ctx.http.post(`/api/v1/jobs/${job.id}/stop`).set('X-API-Key', ws.key);
    expect(res.status).toBe(200);
    const stopped = await waitFor('the consumer stopped', async () => {
      const [r] = await ctx.sql`select * from jobs where id = ${job.id}`;
      return r!.status === 'stopped' ? r : null;
    });
    const held = await ctx.sql`select id from queue_items where job_id = ${job.id} and status = 'in_progress'`;
    expect(held).toHaveLength(0);
    const entries = readJournal(journal).filter((e) => e.job_id === job.id);
    const started = entries.filter((e) => e.event === 'item-start').map((e) => e.item_id);
    const ended = entries.filter((e) => e.event === 'item-end').map((e) => e.item_id);
    expect(ended).toEqual(started);
    const counts = await itemStatusCounts(ctx.sql, queue.id);
    expect(counts.completed).toBe(started.length);
    expect(counts.new).toBe(30 - started.length);
    expect(stopped.output_data).toMatchObject({ items_completed: started.length });
  });

  it('a consumer gives its slot up to a job waiting for its machine, and the queue is resumed after', async () => {
    const m = await ws.machine({ slots: 1 });
    const { proc, queue } = await consumerQueue();
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '30ms', '--duration', '100ms']);
    // 400 items of 30 ms: a backlog of 12 s, still there after the yield however slow the host
    await addBulk(queue.name, Array.from({ length: 400 }, (_, i) => ({ n: i })));
    await waitFor('the consumer running', async () => ((await itemStatusCounts(ctx.sql, queue.id)).completed ?? 0) > 0);
    const other = await ws.process();
    const res = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key).send({ process_id: other.id, machine_id: m.row.id });
    expect(res.status).toBe(201);
    const job = await waitFor('the waiting job completed', async () => {
      const [r] = await ctx.sql`select * from jobs where id = ${res.body.data.id}`;
      return r!.status === 'completed' ? r : null;
    }, 60_000);
    const before = await itemStatusCounts(ctx.sql, queue.id);
    expect(before.new ?? 0).toBeGreaterThan(0);
    const [yielded] = await ctx.sql`select output_data from jobs where queue_id = ${queue.id} and process_id = ${proc.id} and status = 'completed' order by finished_at limit 1`;
    expect(yielded!.output_data).toMatchObject({ yielded: true });
    expect(job.finished_at).toBeInstanceOf(Date);
    await allFinal(queue.id, 400, ['completed']);
  });

  it('stops a consumer job still pending on a machine that went offline, and another machine takes the queue', async () => {
    const silent = await ws.machine({ name: 'silent', slots: 1 });
    const { queue } = await consumerQueue();
    await addBulk(queue.name, [{ a: 1 }, { a: 2 }]);
    // the machine beats (as its agent would) until the engine gives it a consumer, then falls silent
    const pending = await waitFor('a consumer on the silent machine', async () => {
      const [r] = await ctx.sql`select id from jobs where queue_id = ${queue.id} and machine_id = ${silent.row.id}`;
      if (!r) await recordHeartbeat(ctx.sql, silent.row.id, { running: 0 });
      return r;
    });
    const ended = await waitFor('it ended when the machine went offline', async () => {
      const [r] = await ctx.sql`select * from jobs where id = ${pending.id}`;
      return r!.status === 'stopped' ? r : null;
    }, 60_000);
    expect(ended.error_message).toMatch(/silent quedó fuera de línea antes de iniciar/);
    expect(ended.started_at).toBeNull();
    const live = await ws.machine({ slots: 1 });
    await children.agent(ctx, ['--machine-key', live.machineKey, '--item-duration', '2ms']);
    await allFinal(queue.id, 2, ['completed']);
  });

  it('shows a machine as busy while all its slots run jobs, and online again after', async () => {
    const m = await ws.machine({ slots: 1 });
    const { queue } = await consumerQueue();
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '300ms']);
    await waitFor('the machine online', async () => (await ctx.sql`select status from machines where id = ${m.row.id}`)[0]!.status === 'online');
    await addBulk(queue.name, [{ a: 1 }, { a: 2 }, { a: 3 }]);
    await waitFor('busy', async () => (await ctx.sql`select status from machines where id = ${m.row.id}`)[0]!.status === 'busy');
    const res = await ctx.http.get('/api/v1/machines/list?status=busy').set('X-API-Key', ws.key);
    expect(res.status).toBe(200);
    expect(res.body.data.map((r: { id: string }) => r.id)).toContain(m.row.id);
    await allFinal(queue.id, 3, ['completed']);
    await waitFor('online again', async () => (await ctx.sql`select status from machines where id = ${m.row.id}`)[0]!.status === 'online');
  });
});
