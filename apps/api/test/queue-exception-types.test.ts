import { seedApiKey, seedJob, seedWorkspace } from '@svc/testing';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { QUEUE_ITEM_FIELDS, itemsPath } from './queue-items-support';

/**
 * Business and application exceptions through the API (docs/decisions/exception-types.md): the
 * kind on every item read, the list's filter and its exact total, the bulk retry that re-runs
 * business failures only when asked, the events, the job's kind. Robots failing items both ways
 * as processes: apps/agent-sim/test/exception-types.test.ts.
 */
const suite = apiSuite({ dispatcher: true });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

type Kind = 'business' | 'application' | null;

/** Items straight into a state (through the operator's view), each with its kind of last failure. */
async function items(queue: Record<string, unknown>, rows: Array<{ status: string; kind: Kind; retry_count?: number }>): Promise<string[]> {
  const ids: string[] = [];
  for (const r of rows) {
    const [row] = await ctx.sql<Array<{ id: string }>>`
      insert into queue_item_records (tenant_id, queue_id, status, data, retry_count, error_message, exception_type)
      values (${queue.tenant_id as string}, ${queue.id as string}, ${r.status}, ${ctx.sql.json({ k: r.kind })}, ${r.retry_count ?? 0},
              ${r.kind ? 'falló' : null}, ${r.kind})
      returning id`;
    ids.push(row!.id);
  }
  return ids;
}

const list = (queueName: string, query: Record<string, string | number>, apiKey = ws.key) =>
  ctx.http.get(itemsPath(queueName)).query(query).set('X-API-Key', apiKey);
const settingsList = (queueId: string, query: Record<string, string | number>) =>
  ctx.http.get(`/api/v1/settings/queues/${queueId}/items`).query(query).set({ Authorization: `Bearer ${ws.adminToken}` });
const act = (queueName: string, body: unknown) =>
  ctx.http.post(`/api/v1/queues/by-name/${encodeURIComponent(queueName)}/items/actions`).set('X-API-Key', ws.key).send(body as object);
const statusOf = async (id: string) => (await ctx.sql<Array<{ status: string; retry_count: number }>>`select status, retry_count from queue_items where id = ${id}`)[0]!;

describe('the kind of an item\'s last failure', () => {
  it('is on every item read, after the contract\'s sixteen fields', async () => {
    const q = await ws.queue();
    const [business, application, fresh] = await items(q, [
      { status: 'failed', kind: 'business' }, { status: 'dead_letter', kind: 'application' }, { status: 'new', kind: null },
    ]);
    const res = await list(q.name, { limit: 10 });
    expect(res.status).toBe(200);
    for (const item of res.body.data) expect(Object.keys(item)).toEqual(QUEUE_ITEM_FIELDS);
    const kinds = Object.fromEntries(res.body.data.map((i: { id: string; exception_type: Kind }) => [i.id, i.exception_type]));
    expect(kinds).toEqual({ [business!]: 'business', [application!]: 'application', [fresh!]: null });
    const one = await apiClient(ctx, { token: ws.adminToken }).call('listWorkspaceQueueItems', { path: { queue_id: q.id as string }, query: { status: 'failed' } });
    expect(one.map((i) => [i.id, i.exception_type])).toEqual([[business, 'business']]);
  });

  it('filters both lists, combined with the other filters, with exact totals', async () => {
    const q = await ws.queue();
    const rows = await items(q, [
      { status: 'failed', kind: 'business' }, { status: 'failed', kind: 'business' }, { status: 'completed', kind: 'business' },
      { status: 'dead_letter', kind: 'application' }, { status: 'completed', kind: 'application' }, { status: 'completed', kind: null },
    ]);
    const ids = (body: { data: Array<{ id: string }> }) => body.data.map((i) => i.id).sort();
    const business = await list(q.name, { exception_type: 'business' });
    expect(business.status).toBe(200);
    expect(ids(business.body)).toEqual([rows[0], rows[1], rows[2]].sort());
    expect(business.body.meta.total).toBe(3);
    const failedBusiness = await list(q.name, { exception_type: 'business', status: 'failed', limit: 1 });
    expect(failedBusiness.body.meta).toEqual({ page: 1, limit: 1, total: 2, pages: 2 });
    const application = await settingsList(q.id as string, { exception_type: 'application' });
    expect(ids(application.body)).toEqual([rows[3], rows[4]].sort());
    expect(application.body.meta.total).toBe(2);
    // with a filter the counters cannot answer (the payload), the total is counted over the matches
    const byData = await list(q.name, { exception_type: 'business', data: JSON.stringify({ k: 'business' }) });
    expect(byData.body.meta.total).toBe(3);
    // the counters follow the items as they move: one business failure re-run by hand
    await ctx.sql`update queue_items set status = 'new' where id = ${rows[0]!}`;
    const after = await list(q.name, { exception_type: 'business', status: 'failed' });
    expect(after.body.meta.total).toBe(1);
    expect((await list(q.name, { exception_type: 'business' })).body.meta.total).toBe(3);
  });

  it.each([
    ['an unknown kind', 'fatal'], ['upper case', 'BUSINESS'], ['empty', ''], ['a NUL byte', 'business\u0000'], ['a number', '1'],
  ])('refuses %s as exception_type with 422 in the contract\'s envelope', async (_label, value) => {
    const q = await ws.queue();
    for (const res of [await list(q.name, { exception_type: value }), await settingsList(q.id as string, { exception_type: value })]) {
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
      expect(JSON.stringify(res.body)).toContain('exception_type');
    }
  });

  it('refuses the filter given twice, and shows nothing of another workspace or through a revoked key', async () => {
    const q = await ws.queue();
    await items(q, [{ status: 'failed', kind: 'business' }]);
    const twice = await ctx.http.get(`${itemsPath(q.name)}?exception_type=business&exception_type=application`).set('X-API-Key', ws.key);
    expect(twice.status).toBe(422);
    const other = await seedWorkspace(ctx.sql);
    expect((await list(q.name, { exception_type: 'business' }, other.key)).status).toBe(404);
    const revoked = await seedApiKey(ctx.sql, ws.tenant.id, { is_active: false });
    expect((await list(q.name, { exception_type: 'business' }, revoked.key)).status).toBe(401);
  });
});

describe('a bulk retry', () => {
  it('re-runs dead letters and leaves business failures alone unless include_business says so', async () => {
    const q = await ws.queue();
    const [business, dead] = await items(q, [{ status: 'failed', kind: 'business', retry_count: 2 }, { status: 'dead_letter', kind: 'application', retry_count: 3 }]);
    const plain = await act(q.name, { action: 'retry', filter: {} });
    expect(plain.status).toBe(200);
    expect(plain.body.data).toMatchObject({ total: 1, changed: 1 });
    expect(await statusOf(business!)).toEqual({ status: 'failed', retry_count: 2 });
    expect(await statusOf(dead!)).toMatchObject({ status: 'new' });
    const dry = await act(q.name, { action: 'retry', filter: { exception_type: 'business' }, include_business: true, dry_run: true });
    expect(dry.body.data).toEqual({ dry_run: true, total: 1 });
    const asked = await act(q.name, { action: 'retry', filter: { exception_type: 'business' }, include_business: true });
    expect(asked.body.data).toMatchObject({ total: 1, changed: 1, params: { include_business: true } });
    // one more attempt: the kind and the retry_count are kept, like a retried dead letter
    const [row] = await ctx.sql`select status, retry_count, exception_type from queue_items where id = ${business!}`;
    expect(row).toEqual({ status: 'new', retry_count: 2, exception_type: 'business' });
  });

  it('by ids re-runs the business failures named only with include_business', async () => {
    const q = await ws.queue();
    const [business] = await items(q, [{ status: 'failed', kind: 'business' }]);
    expect((await act(q.name, { action: 'retry', ids: [business] })).body.data).toMatchObject({ total: 0, changed: 0 });
    expect((await act(q.name, { action: 'retry', ids: [business], include_business: true })).body.data).toMatchObject({ total: 1, changed: 1 });
    expect(await statusOf(business!)).toMatchObject({ status: 'new' });
  });

  it.each([
    ['a retry naming business failures without include_business', { action: 'retry', filter: { exception_type: 'business' } }, 'body → filter → exception_type'],
    ['include_business on another action', { action: 'delete', filter: {}, include_business: true }, 'body → include_business'],
    ['include_business that is not a boolean', { action: 'retry', filter: {}, include_business: 'yes' }, 'body → include_business'],
    ['an unknown kind in the filter', { action: 'retry', filter: { exception_type: 'fatal' }, include_business: true }, 'body → filter → exception_type'],
  ])('refuses %s with 422 naming the field, and changes nothing', async (_label, body, field) => {
    const q = await ws.queue();
    const [business] = await items(q, [{ status: 'failed', kind: 'business' }]);
    const res = await act(q.name, body);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await statusOf(business!)).toMatchObject({ status: 'failed' });
  });

  it('of jobs skips those failed with a business exception unless include_business says so', async () => {
    const process = await ws.process();
    const machine = (await ws.machine()).row;
    const business = await seedJob(ctx.sql, ws.tenant.id, { process_id: process.id, machine_id: machine.id, status: 'failed' });
    const application = await seedJob(ctx.sql, ws.tenant.id, { process_id: process.id, machine_id: machine.id, status: 'failed' });
    await ctx.sql`update jobs set exception_type = 'business' where id = ${business.id}`;
    const jobsAct = (body: unknown) => ctx.http.post('/api/v1/settings/jobs/actions').set({ Authorization: `Bearer ${ws.adminToken}` }).send(body as object);
    const ids = [business.id, application.id];
    const first = await jobsAct({ action: 'retry', ids });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ total: 1, changed: 1 });
    const retried = async (id: string) => (await ctx.sql`select 1 from jobs where parent_job_id = ${id} and source = 'retry'`).length;
    expect([await retried(business.id), await retried(application.id)]).toEqual([0, 1]);
    const read = await apiClient(ctx, { token: ws.adminToken }).call('getWorkspaceJob', { path: { job_id: business.id } });
    expect(read.exception_type).toBe('business');
    expect((await jobsAct({ action: 'retry', ids, include_business: true })).body.data).toMatchObject({ total: 1, changed: 1 });
    expect(await retried(business.id)).toBe(1);
  });
});

describe('the events', () => {
  it('item.failed and item.dead_letter say which failure it was', async () => {
    const q = await ws.queue({ max_retries: 0 });
    const [business, application] = await items(q, [{ status: 'in_progress', kind: null }, { status: 'in_progress', kind: null }]);
    await ctx.sql`update queue_items set status = 'failed', exception_type = 'business', error_message = 'pagada' where id = ${business!}`;
    await ctx.sql`update queue_items set status = 'failed', exception_type = 'application', error_message = 'timeout' where id = ${application!}`;
    const events = async () => ctx.sql<Array<{ type: string; id: string; kind: Kind }>>`
      select type, data->>'id' as id, data->>'exception_type' as kind from events
      where tenant_id = ${ws.tenant.id} and data->>'queue_id' = ${q.id as string} order by id`;
    expect((await events()).map((e) => [e.type, e.id, e.kind]).sort()).toEqual([
      ['item.failed', business, 'business'], ['item.failed', application, 'application'],
    ].sort());
  });
});
