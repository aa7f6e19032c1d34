import { randomUUID } from 'node:crypto';
import { seedUser, seedWorkspace, waitFor } from '@svc/testing';
import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';

/**
 * Review and re-drive through the management API (admin access token), with a real dispatcher
 * applying the retry policy after a rejection.
 */
const suite = apiSuite({ dispatcher: true });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
});

async function itemIn(queueId: string, status: string, extra: Record<string, unknown> = {}) {
  const [row] = await ctx.sql`
    insert into queue_item_records (tenant_id, queue_id, status, data, result, retry_count, processed_at)
    values (${ws.tenant.id}, ${queueId}, ${status}, ${ctx.sql.json({ n: 1 })}, ${status === 'pending_review' ? ctx.sql.json({ doubt: true }) : null},
            ${(extra.retry_count as number) ?? 0}, ${status === 'pending_review' ? new Date() : null})
    returning *`;
  return row!;
}

const admin = () => ({ Authorization: `Bearer ${ws.adminToken}` });
/** Well-formed calls as the console makes them, through the typed client (@svc/client). */
const api = () => apiClient(ctx, { token: ws.adminToken });

describe('POST /settings/queues/{queue_id}/items/{item_id}/approve', () => {
  it('moves pending_review → new and records reviewed_by, reviewed_at and an audit row', async () => {
    const q = await ws.queue();
    const item = await itemIn(q.id, 'pending_review');
    const approved = await api().call('approveQueueItem', { path: { queue_id: q.id, item_id: item.id }, body: { comment: 'ok' } });
    expect(approved).toMatchObject({ id: item.id, status: 'new', reviewed_by: ws.adminEmail, retry_count: 0 });
    expect(Date.parse(approved.reviewed_at!)).not.toBeNaN();
    const [audit] = await ctx.sql`select * from audit_log where resource_id = ${item.id} and action = 'approve_queue_item'`;
    expect(audit).toBeDefined();
  });

  it('answers 409 when the item is not pending review, and changes nothing', async () => {
    const q = await ws.queue();
    const item = await itemIn(q.id, 'completed');
    await expect(api().call('approveQueueItem', { path: { queue_id: q.id, item_id: item.id }, body: {} }))
      .rejects.toMatchObject({ status: 409, code: 'CONFLICT', message: expect.stringMatching(/completed/) });
    const [row] = await ctx.sql`select status, reviewed_by from queue_items where id = ${item.id}`;
    expect(row).toMatchObject({ status: 'completed', reviewed_by: null });
  });

  it('answers 404 for another tenant’s queue and for an item of another queue', async () => {
    const other = await seedWorkspace(ctx.sql);
    const theirs = await other.queue();
    const q = await ws.queue();
    await expect(api().call('approveQueueItem', { path: { queue_id: theirs.id, item_id: randomUUID() }, body: {} })).rejects.toMatchObject({ status: 404 });
    const elsewhere = await ws.queue();
    const item = await itemIn(elsewhere.id, 'pending_review');
    await expect(api().call('approveQueueItem', { path: { queue_id: q.id, item_id: item.id }, body: {} }))
      .rejects.toMatchObject({ status: 404, message: 'Elemento no encontrado' });
  });

  it('answers 422 for ids that are not UUIDs, 401 without a token and 403 for a member', async () => {
    const q = await ws.queue();
    expect((await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/nope/approve`).set(admin()).send({})).status).toBe(422);
    expect((await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/${randomUUID()}/approve`).send({})).status).toBe(401);
    const member = await seedUser(ctx.sql, ws.tenant.id, { role: 'member' });
    const res = await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/${randomUUID()}/approve`).set({ Authorization: `Bearer ${member.token}` }).send({});
    expect(res.status).toBe(403);
  });
});

describe('POST /settings/queues/{queue_id}/items/{item_id}/reject', () => {
  it('moves pending_review → failed with the reason as a business exception, which the retry policy leaves failed', async () => {
    const q = await ws.queue({ max_retries: 2 });
    const item = await itemIn(q.id, 'pending_review');
    // an application failure of the same queue: the policy's pass over the queue moves it, which proves the pass ran
    const other = await itemIn(q.id, 'failed');
    const rejected = await api().call('rejectQueueItem', { path: { queue_id: q.id, item_id: item.id }, body: { reason: 'Importe incorrecto' } });
    expect(rejected).toMatchObject({ status: 'failed', error_message: 'Importe incorrecto', reviewed_by: ws.adminEmail, exception_type: 'business' });
    await waitFor('the retry policy over the queue', async () => {
      const [row] = await ctx.sql`select status from queue_items where id = ${other.id}`;
      return row!.status === 'new';
    });
    const [after] = await ctx.sql`select status, retry_count, exception_type from queue_items where id = ${item.id}`;
    expect(after).toEqual({ status: 'failed', retry_count: 0, exception_type: 'business' });
  });

  it('never sends a rejected item to dead_letter, even without retries left', async () => {
    const q = await ws.queue({ max_retries: 1 });
    const item = await itemIn(q.id, 'pending_review', { retry_count: 1 });
    const other = await itemIn(q.id, 'failed', { retry_count: 1 });
    const rejected = await api().call('rejectQueueItem', { path: { queue_id: q.id, item_id: item.id }, body: {} });
    expect(rejected.error_message).toBe('Rechazado en la revisión humana');
    await waitFor('the application failure dead-lettered', async () => {
      const [row] = await ctx.sql`select status from queue_items where id = ${other.id}`;
      return row!.status === 'dead_letter';
    });
    const [after] = await ctx.sql`select status, retry_count from queue_items where id = ${item.id}`;
    expect(after).toEqual({ status: 'failed', retry_count: 1 });
  });

  it('refuses unknown body fields with 422', async () => {
    const q = await ws.queue();
    const item = await itemIn(q.id, 'pending_review');
    const res = await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/${item.id}/reject`).set(admin()).send({ motivo: 'x' });
    expect(res.status).toBe(422);
  });
});

describe('POST /settings/queues/{queue_id}/items/redrive', () => {
  it('moves the listed dead-letter items back to new with retry_count 0, leaving others alone', async () => {
    const q = await ws.queue();
    const a = await itemIn(q.id, 'dead_letter', { retry_count: 3 });
    const b = await itemIn(q.id, 'dead_letter', { retry_count: 3 });
    const done = await itemIn(q.id, 'completed');
    expect(await api().call('redriveQueueItems', { path: { queue_id: q.id }, body: { item_ids: [a.id, done.id] } })).toEqual({ redriven: 1 });
    const rows = await ctx.sql`select id, status, retry_count from queue_items where queue_id = ${q.id} order by created_at`;
    expect(rows.map((r) => [r.id, r.status])).toEqual([[a.id, 'new'], [b.id, 'dead_letter'], [done.id, 'completed']]);
    expect(rows[0]!.retry_count).toBe(0);
    const [audit] = await ctx.sql`select details from audit_log where resource_id = ${q.id} and action = 'redrive_queue_items'`;
    expect(audit!.details).toMatchObject({ redriven: 1 });
  });

  it('re-drives every dead-letter item of the queue when no ids are given', async () => {
    const q = await ws.queue();
    for (let i = 0; i < 3; i++) await itemIn(q.id, 'dead_letter');
    expect(await api().call('redriveQueueItems', { path: { queue_id: q.id }, body: {} })).toEqual({ redriven: 3 });
    const [{ n }] = await ctx.sql`select count(*)::int as n from queue_items where queue_id = ${q.id} and status = 'new'`;
    expect(n).toBe(3);
  });

  it('answers 404 for another tenant’s queue and 422 for bad ids', async () => {
    const other = await seedWorkspace(ctx.sql);
    const theirs = await other.queue();
    expect((await ctx.http.post(`/api/v1/settings/queues/${theirs.id}/items/redrive`).set(admin()).send({})).status).toBe(404);
    const q = await ws.queue();
    expect((await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/redrive`).set(admin()).send({ item_ids: ['x'] })).status).toBe(422);
    expect((await ctx.http.post(`/api/v1/settings/queues/${q.id}/items/redrive`).set(admin()).send({ item_ids: [] })).status).toBe(422);
  });
});
