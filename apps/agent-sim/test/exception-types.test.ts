import { apiSuite, type ApiTestContext } from '@svc/testing/api';
import { Children, itemStatusCounts, readJournal, seedWorkspace, tempFile, waitFor } from '@svc/testing';

/**
 * Business and application exceptions end to end (docs/decisions/exception-types.md): robots run
 * by real simulator processes fail items and jobs both ways, a real dispatcher applies the retry
 * policies, and the result is read through the public API, the queue's stats and the events.
 * A business failure is final (never retried, never dead-lettered); an application one follows
 * the queue's or the process's retry policy.
 */
// waits are liveness bounds for a loaded host
jest.setTimeout(180_000);
const suite = apiSuite({ dispatcher: true });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
const children = new Children();

beforeAll(() => ({ ctx } = suite));
beforeEach(async () => {
  ws = await seedWorkspace(ctx.sql);
});
afterEach(() => children.stopAll());

const BUSINESS_MESSAGE = 'Error de negocio simulado: los datos no son válidos';

describe('a consumer robot failing items both ways', () => {
  it('leaves business failures failed after one attempt, dead-letters application ones after max_retries, and says which is which', async () => {
    const MAX_RETRIES = 2;
    const m = await ws.machine({ slots: 1 });
    const proc = await ws.process();
    const queue = await ws.queue({ consumer_process_id: proc.id, max_retries: MAX_RETRIES });
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--item-duration', '2ms', '--journal', journal]);
    const kinds = [
      ...Array.from({ length: 3 }, (_, n) => ({ kind: 'business', data: { n, _sim: { outcome: 'fail', exception: 'business' } } })),
      ...Array.from({ length: 2 }, (_, n) => ({ kind: 'application', data: { n, _sim: { outcome: 'fail', error_message: 'El portal no responde' } } })),
      ...Array.from({ length: 4 }, (_, n) => ({ kind: 'completed', data: { n } })),
    ];
    const ids: Record<string, string[]> = { business: [], application: [], completed: [] };
    for (const [i, k] of kinds.entries()) {
      const res = await ctx.http.post(`/api/v1/queues/by-name/${queue.name}/items`).set('X-API-Key', ws.key)
        .send({ data: k.data, reference: `${k.kind}-${i}` });
      expect(res.status).toBe(200);
      ids[k.kind]!.push(res.body.data.id as string);
    }
    const expected = { completed: 4, dead_letter: 2, failed: 3 };
    const sorted = (counts: Record<string, number>) => JSON.stringify(Object.fromEntries(Object.entries(counts).sort()));
    // every item in its final state (a business failure left `new` again would break the equality)
    await waitFor('every item in a final state', async () => {
      const counts = await itemStatusCounts(ctx.sql, queue.id);
      if (sorted(counts) !== sorted(expected)) throw new Error(`counts ${JSON.stringify(counts)}`);
      return true;
    }, 90_000);
    // the consumers end and no sweep that begins now sends a business failure back to `new`
    await waitFor('consumer jobs to finish', async () =>
      (await ctx.sql`select 1 from jobs where queue_id = ${queue.id} and status in ('pending', 'running')`).length === 0);
    await suite.dispatcher.passBegunAfter('sweep');
    expect(await itemStatusCounts(ctx.sql, queue.id)).toEqual(expected);

    const rows = new Map((await ctx.sql`select id, status, retry_count, attempt, exception_type, error_message from queue_items where queue_id = ${queue.id}`)
      .map((r) => [r.id as string, r]));
    for (const id of ids.business!) {
      expect(rows.get(id)).toEqual({ id, status: 'failed', retry_count: 0, attempt: 1, exception_type: 'business', error_message: BUSINESS_MESSAGE });
    }
    for (const id of ids.application!) {
      expect(rows.get(id)).toEqual({ id, status: 'dead_letter', retry_count: MAX_RETRIES, attempt: MAX_RETRIES + 1, exception_type: 'application', error_message: 'El portal no responde' });
    }
    for (const id of ids.completed!) expect(rows.get(id)).toMatchObject({ status: 'completed', retry_count: 0, exception_type: null });

    // the robot's journal: one try of each business item, max_retries + 1 of each application one, each failure with its kind
    const entries = readJournal(journal);
    const tries = (id: string) => entries.filter((e) => e.event === 'item-end' && e.item_id === id).map((e) => [e.outcome, e.exception]);
    for (const id of ids.business!) {
      expect(entries.filter((e) => e.event === 'item-start' && e.item_id === id)).toHaveLength(1);
      expect(tries(id)).toEqual([['failed', 'business']]);
    }
    for (const id of ids.application!) expect(tries(id)).toEqual(Array(MAX_RETRIES + 1).fill(['failed', 'application']));
    for (const id of ids.completed!) expect(tries(id)).toEqual([['completed', undefined]]);

    // the public API lists each kind apart, with exact totals
    const list = async (kind: string) => {
      const res = await ctx.http.get(`/api/v1/queues/by-name/${queue.name}/items?exception_type=${kind}&limit=100`).set('X-API-Key', ws.key);
      expect(res.status).toBe(200);
      return res.body as { data: Array<Record<string, unknown>>; meta: { total: number } };
    };
    const business = await list('business');
    expect(business.meta.total).toBe(3);
    expect(business.data.map((i) => i.id).sort()).toEqual([...ids.business!].sort());
    for (const i of business.data) expect(i).toMatchObject({ status: 'failed', retry_count: 0, exception_type: 'business', error_message: BUSINESS_MESSAGE });
    const application = await list('application');
    expect(application.meta.total).toBe(2);
    expect(application.data.map((i) => i.id).sort()).toEqual([...ids.application!].sort());
    for (const i of application.data) expect(i).toMatchObject({ status: 'dead_letter', retry_count: MAX_RETRIES, exception_type: 'application' });
    const completed = await ctx.http.get(`/api/v1/queues/by-name/${queue.name}/items?status=completed&limit=100`).set('X-API-Key', ws.key);
    expect(completed.body.meta.total).toBe(4);
    for (const i of completed.body.data) expect(i.exception_type).toBeNull();

    // the queue's stats count the business failures apart; every failure of the last hour counts once
    const stats = await ctx.http.get(`/api/v1/settings/queues/${queue.id}/stats`).set('Authorization', `Bearer ${ws.adminToken}`);
    expect(stats.status).toBe(200);
    expect(stats.body.data.counts).toMatchObject({ new: 0, in_progress: 0, failed: 3, dead_letter: 2, completed: 4 });
    expect(stats.body.data.business_failed).toBe(3);
    expect(stats.body.data.business_failed_last_hour).toBe(3);
    expect(stats.body.data.failed_last_hour).toBe(3 + 2 * (MAX_RETRIES + 1));

    // item.failed and item.dead_letter events say which failure it was
    const events = await ctx.sql<Array<{ type: string; id: string; kind: string | null }>>`
      select type, data->>'id' as id, data->>'exception_type' as kind from events
      where tenant_id = ${ws.tenant.id} and data->>'queue_id' = ${queue.id as string} and type in ('item.failed', 'item.dead_letter')`;
    const seen = events.map((e) => `${e.type} ${e.id} ${e.kind}`).sort();
    expect(seen).toEqual([
      ...ids.business!.map((id) => `item.failed ${id} business`),
      ...ids.application!.flatMap((id) => [...Array(MAX_RETRIES + 1).fill(`item.failed ${id} application`), `item.dead_letter ${id} application`]),
    ].sort());
  });
});

describe('a robot failing jobs both ways', () => {
  it('does not auto-retry a job failed as business; the same process retries one failed as application', async () => {
    const m = await ws.machine({ slots: 2 });
    const proc = await ws.process({ auto_retry: true, max_retries: 2, retry_delay_seconds: 0 });
    const journal = tempFile('journal.jsonl');
    await children.agent(ctx, ['--machine-key', m.machineKey, '--duration', '5ms', '--journal', journal]);
    const trigger = async (sim: Record<string, unknown>) => {
      const res = await ctx.http.post('/api/v1/jobs/trigger').set('X-API-Key', ws.key)
        .send({ process_id: proc.id, machine_id: m.row.id, input_data: { _sim: sim } });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    const businessId = await trigger({ outcome: 'fail', exception: 'business' });
    const applicationId = await trigger({ outcome: 'fail', error_message: 'El portal no responde' });

    // the application failure is retried by its process: max_retries retries, each failing again
    const chain = await waitFor('the application job and its two retries failed', async () => {
      const rows = await ctx.sql`
        with recursive chain as (
          select * from jobs where id = ${applicationId}
          union all select j.* from jobs j join chain c on j.parent_job_id = c.id)
        select id, status, source, retry_count, exception_type from chain order by retry_count`;
      return rows.length === 3 && rows.every((r) => r.status === 'failed') ? rows : null;
    }, 90_000);
    expect(chain.map((r) => [r.source, r.retry_count, r.exception_type])).toEqual([['api', 0, 'application'], ['retry', 1, 'application'], ['retry', 2, 'application']]);
    const business = await waitFor('the business job failed', async () => {
      const [r] = await ctx.sql`select status, exception_type, error_message, retry_count from jobs where id = ${businessId}`;
      return r!.status === 'failed' ? r : null;
    });
    expect(business).toEqual({ status: 'failed', exception_type: 'business', error_message: BUSINESS_MESSAGE, retry_count: 0 });
    // follow-ups are made in the transaction that ends the job: none exists now, none ever will
    expect(await ctx.sql`select id from jobs where parent_job_id = ${businessId}`).toHaveLength(0);
    const all = await ctx.sql`select id from jobs where process_id = ${proc.id}`;
    expect(all).toHaveLength(4);

    // the public API says which failure it was
    const read = async (id: string) => (await ctx.http.get(`/api/v1/jobs/${id}`).set('X-API-Key', ws.key)).body.data;
    expect(await read(businessId)).toMatchObject({ status: 'failed', exception_type: 'business' });
    expect(await read(applicationId)).toMatchObject({ status: 'failed', exception_type: 'application' });

    // the robot's journal: one run of the business job, three of the application chain, each end with its kind
    const ends = await waitFor('every job-end in the journal', async () => {
      const e = readJournal(journal).filter((x) => x.event === 'job-end');
      return e.length === 4 ? e : null;
    });
    expect(ends.filter((e) => e.job_id === businessId).map((e) => [e.status, e.exception])).toEqual([['failed', 'business']]);
    const chainIds = new Set(chain.map((r) => r.id as string));
    expect(ends.filter((e) => chainIds.has(e.job_id)).map((e) => [e.status, e.exception])).toEqual(Array(3).fill(['failed', 'application']));
  });
});
