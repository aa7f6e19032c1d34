import { apiClient, apiSuite, type ApiTestContext } from '@svc/testing/api';
import { MAX_WEBHOOKS_PER_WORKSPACE } from '@svc/core/schemas';
import { seedUser, seedWorkspace, waitFor } from '@svc/testing';

/**
 * /settings/webhooks and /settings/events from the outside (docs/decisions/events.md): admins
 * only; the URL is checked when saved (https, no credentials, no private or local address when
 * the server does not allow them); hostile bodies answer 4xx; another workspace's subscriptions,
 * deliveries and events are invisible (404); a workspace has at most MAX_WEBHOOKS_PER_WORKSPACE
 * subscriptions (409 past it). Delivery itself: apps/dispatcher/test/webhooks.test.ts.
 */
const suite = apiSuite({ config: { webhookAllowInsecure: false, webhookAllowPrivateNetworks: false } });
let ctx: ApiTestContext;
let ws: Awaited<ReturnType<typeof seedWorkspace>>;
let other: Awaited<ReturnType<typeof seedWorkspace>>;

beforeAll(async () => {
  ({ ctx } = suite);
  ws = await seedWorkspace(ctx.sql);
  other = await seedWorkspace(ctx.sql);
});

const as = (token: string) => ({ Authorization: `Bearer ${token}` });
const admin = () => as(ws.adminToken);
const create = (body: unknown, token = ws.adminToken) => ctx.http.post('/api/v1/settings/webhooks').set(as(token)).send(body as object);
/** Well-formed calls whose answers a test reads: through the typed client, as the console makes them. */
const api = (token = ws.adminToken) => apiClient(ctx, { token });

describe('subscriptions', () => {
  it('are for admins: the secret is shown at creation and rotation only, and every change is audited', async () => {
    const member = (await seedUser(ctx.sql, ws.tenant.id, { role: 'member' })).token;
    expect((await create({ url: 'https://example.com/a', event_types: ['*'] }, member)).status).toBe(403);
    expect((await ctx.http.get('/api/v1/settings/webhooks')).status).toBe(401);

    const made = await api().call('createWebhook', { body: { url: 'https://example.com/hooks', event_types: ['job.failed', 'item.dead_letter'], description: 'alertas' } });
    const { id, secret } = made;
    expect(made).toMatchObject({ url: 'https://example.com/hooks', event_types: ['job.failed', 'item.dead_letter'], is_active: true, failing_since: null });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{40,}$/);

    const list = await api().request('listWorkspaceWebhooks');
    expect(list.data.map((w) => w.id)).toContain(id);
    expect(JSON.stringify(list)).not.toContain(secret);
    const got = await api().request('getWebhook', { path: { id } });
    expect(got.data.id).toBe(id);
    expect(JSON.stringify(got)).not.toContain(secret);

    const patched = await api().call('updateWebhook', { path: { id }, body: { event_types: ['*', 'job.failed'], is_active: false } });
    expect(patched).toMatchObject({ event_types: ['*'], is_active: false });
    const rotated = await api().call('rotateWebhookSecret', { path: { id } });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(secret);
    await api().call('deleteWebhook', { path: { id } });
    await expect(api().call('getWebhook', { path: { id } })).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });

    const audit = await ctx.sql<Array<{ action: string; details: Record<string, unknown> }>>`
      select action, details from audit_log where resource_id = ${id} order by id`;
    expect(audit.map((a) => a.action)).toEqual(['create_webhook', 'update_webhook', 'rotate_webhook_secret', 'delete_webhook']);
    expect(JSON.stringify(audit)).not.toContain('whsec_');
  });

  it('take their deliveries with them when deleted, or when their workspace is', async () => {
    const ids: string[] = [];
    for (const w of [ws, other]) {
      const res = await create({ url: 'https://example.com/gone', event_types: ['*'] }, w.adminToken);
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
      expect((await ctx.http.post(`/api/v1/settings/webhooks/${res.body.data.id}/test`).set(as(w.adminToken))).status).toBe(202);
    }
    const deliveries = async (id: string) => (await ctx.sql<Array<{ n: number }>>`
      select count(*)::int as n from webhook_deliveries where subscription_id = ${id}`)[0]!.n;
    expect([await deliveries(ids[0]!), await deliveries(ids[1]!)]).toEqual([1, 1]);
    expect((await ctx.http.delete(`/api/v1/settings/webhooks/${ids[0]}`).set(admin())).status).toBe(200);
    expect([await deliveries(ids[0]!), await deliveries(ids[1]!)]).toEqual([0, 1]);
    // a throwaway workspace, so that the others' rows stay for the tests after this one
    const doomed = await seedWorkspace(ctx.sql);
    const res = await create({ url: 'https://example.com/doomed', event_types: ['*'] }, doomed.adminToken);
    await ctx.http.post(`/api/v1/settings/webhooks/${res.body.data.id}/test`).set(as(doomed.adminToken));
    expect(await deliveries(res.body.data.id)).toBe(1);
    await ctx.sql`delete from tenants where id = ${doomed.tenant.id}`;
    expect(await deliveries(res.body.data.id)).toBe(0);
    expect(await deliveries(ids[1]!)).toBe(1);
  });

  it('refuses URLs that are not https, carry credentials, or point inside (422 naming url)', async () => {
    const bad = [
      'http://example.com/hook', 'file:///etc/passwd', 'ftp://example.com/x', 'javascript:alert(1)', 'not a url at all',
      'https://user:pw@example.com/x', 'https://127.0.0.1/x', 'https://10.1.2.3/x', 'https://192.168.0.10/x', 'https://169.254.169.254/latest',
      'https://[::1]/x', 'https://[::ffff:127.0.0.1]/x', 'https://localhost/x', 'https://0.0.0.0/x', `https://example.com/${'a'.repeat(2100)}`,
      'https://example.com/\u0000',
    ];
    for (const url of bad) {
      const res = await create({ url, event_types: ['*'] });
      expect([url, res.status, res.body.error?.code]).toEqual([url, 422, 'VALIDATION_ERROR']);
      expect(JSON.stringify(res.body.error.details)).toContain('url');
    }
    expect((await ctx.sql`select 1 from webhook_subscriptions where tenant_id = ${ws.tenant.id} and url not like 'https://example.com/%'`).length).toBe(0);
  });

  it('refuses hostile bodies with a 4xx', async () => {
    const cases: Array<[unknown, number]> = [
      [{ url: 'https://example.com/x', event_types: [] }, 422],
      [{ url: 'https://example.com/x', event_types: ['job.nope'] }, 422],
      [{ url: 'https://example.com/x', event_types: ['job.failed', 'job.failed'] }, 422],
      [{ url: 'https://example.com/x', event_types: '*' }, 422],
      [{ url: 42, event_types: ['*'] }, 422],
      [{ url: 'https://example.com/x', event_types: ['*'], description: 'a\u0000b' }, 422],
      [{ url: 'https://example.com/x', event_types: ['*'], extra: true }, 422],
      [{ url: 'https://example.com/x', event_types: ['*'], description: 'x'.repeat(3_000_000) }, 413],
      [[], 422],
    ];
    for (const [body, status] of cases) {
      const res = await create(body);
      expect([JSON.stringify(body).slice(0, 60), res.status]).toEqual([JSON.stringify(body).slice(0, 60), status]);
    }
    const deep = await ctx.http.post('/api/v1/settings/webhooks').set({ ...admin(), 'Content-Type': 'application/json' })
      .send(`${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`);
    expect(deep.status).toBe(422);
  });

  it('another workspace\'s subscription and deliveries answer 404, like missing ones', async () => {
    const theirs = (await create({ url: 'https://example.com/theirs', event_types: ['*'] }, other.adminToken)).body.data.id as string;
    const theirDelivery = (await ctx.http.post(`/api/v1/settings/webhooks/${theirs}/test`).set(as(other.adminToken))).body.data.id as string;
    const mine = (await create({ url: 'https://example.com/mine', event_types: ['*'] })).body.data.id as string;
    const base = `/api/v1/settings/webhooks/${theirs}`;
    const answers = await Promise.all([
      ctx.http.get(base).set(admin()),
      ctx.http.patch(base).set(admin()).send({ is_active: false }),
      ctx.http.delete(base).set(admin()),
      ctx.http.post(`${base}/rotate-secret`).set(admin()),
      ctx.http.post(`${base}/test`).set(admin()),
      ctx.http.get(`${base}/deliveries`).set(admin()),
      ctx.http.post(`${base}/deliveries/${theirDelivery}/redeliver`).set(admin()),
      ctx.http.post(`/api/v1/settings/webhooks/${mine}/deliveries/${theirDelivery}/redeliver`).set(admin()),
    ]);
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404, 404, 404, 404, 404]);
    expect((await ctx.http.get('/api/v1/settings/webhooks/not-a-uuid').set(admin())).status).toBe(422);
    // theirs is untouched
    const still = await api(other.adminToken).call('getWebhook', { path: { id: theirs } });
    expect(still.is_active).toBe(true);
  });

  it(`are capped at ${MAX_WEBHOOKS_PER_WORKSPACE} per workspace: one more answers 409, even when asked for at once, and deleting one makes room`, async () => {
    const capped = await seedWorkspace(ctx.sql);
    const make = (i: number) => create({ url: `https://example.com/cap/${i}`, event_types: ['*'] }, capped.adminToken);
    const first = await make(0);
    expect(first.status).toBe(201);
    // the rest at once, and more than fit: exactly the limit is created
    const rest = await Promise.all(Array.from({ length: MAX_WEBHOOKS_PER_WORKSPACE + 4 }, (_, i) => make(i + 1)));
    expect(rest.filter((r) => r.status === 201)).toHaveLength(MAX_WEBHOOKS_PER_WORKSPACE - 1);
    const refused = rest.filter((r) => r.status !== 201);
    expect(refused.map((r) => r.status)).toEqual([409, 409, 409, 409, 409]);
    expect(refused[0]!.body.error).toMatchObject({
      code: 'CONFLICT',
      message: `El espacio de trabajo ya tiene ${MAX_WEBHOOKS_PER_WORKSPACE} webhooks, el máximo; elimina alguno antes de crear otro`,
      details: { limit: MAX_WEBHOOKS_PER_WORKSPACE },
    });
    const count = async (tenantId: string) => (await ctx.sql<Array<{ n: number }>>`
      select count(*)::int as n from webhook_subscriptions where tenant_id = ${tenantId}`)[0]!.n;
    expect(await count(capped.tenant.id)).toBe(MAX_WEBHOOKS_PER_WORKSPACE);
    // nothing audited for the refused ones
    const [{ n: audited }] = await ctx.sql<Array<{ n: number }>>`
      select count(*)::int as n from audit_log where tenant_id = ${capped.tenant.id} and action = 'create_webhook'`;
    expect(audited).toBe(MAX_WEBHOOKS_PER_WORKSPACE);
    // another workspace is not affected
    expect((await create({ url: 'https://example.com/not-capped', event_types: ['*'] }, other.adminToken)).status).toBe(201);
    // deleting one makes room for one
    expect((await ctx.http.delete(`/api/v1/settings/webhooks/${first.body.data.id}`).set(as(capped.adminToken))).status).toBe(200);
    expect((await make(100)).status).toBe(201);
    expect((await make(101)).status).toBe(409);
  });
});

describe('the event feed', () => {
  it('shows only the workspace\'s own events, its newest page on request, and refuses bad cursors, types, limits and flags', async () => {
    await api(other.adminToken).call('createApiKey', { body: { name: 'their-key', scopes: ['jobs:read'] } });
    const mineKey = await api().call('createApiKey', { body: { name: 'my-key', scopes: ['jobs:read'] } });
    const keyOf = (e: { data: unknown }) => (e.data as { id?: string }).id;
    // visible once no older transaction of the server is still running (docs/decisions/events.md);
    // read at a person's pace: the feed's reads are rate-limited like any other
    const feed = await waitFor('the new key in the feed', async () => {
      const body = await api().request('readEvents', { query: { types: 'api_key.created', limit: 500 } });
      return body.data.some((e) => keyOf(e) === mineKey.id) ? body : null;
    }, 30_000, 500);
    expect(feed.data.every((e) => e.tenant_id === ws.tenant.id)).toBe(true);
    expect(feed.data.map(keyOf)).toContain(mineKey.id);
    expect(feed.meta.next_cursor).toBe(feed.data[feed.data.length - 1]!.id);

    for (const query of [{ after: 'zz' }, { after: 'A'.repeat(32) }, { types: 'job.nope' }, { types: 'job.created,,' }, { limit: 0 }, { limit: 501 }, { limit: 'x' }, { after: 'a\u0000' }, { what: 1 }, { newest: 'x' }, { newest: 'true\u0000' }, { newest: 'x'.repeat(4000) }]) {
      const res = await ctx.http.get('/api/v1/settings/events').query(query).set(admin());
      expect([query, res.status]).toEqual([query, 422]);
    }
    // `newest` gives the end of the same feed, still in feed order, and its cursor
    const all = await ctx.http.get('/api/v1/settings/events').query({ limit: 500 }).set(admin());
    const newest = await ctx.http.get('/api/v1/settings/events').query({ newest: true, limit: 2 }).set(admin());
    expect(newest.status).toBe(200);
    expect(all.body.data.length).toBeGreaterThanOrEqual(2);
    expect(newest.body.data).toEqual(all.body.data.slice(-2));
    expect(newest.body.meta.next_cursor).toBe(all.body.data[all.body.data.length - 1].id);
    // with a type and a cursor: the newest of those after it; nothing after the last one
    const typed = await ctx.http.get('/api/v1/settings/events').query({ newest: true, limit: 1, types: 'api_key.created' }).set(admin());
    expect(typed.body.data.map((e: { data: { id: string } }) => e.data.id)).toEqual([keyOf(feed.data[feed.data.length - 1]!)]);
    const none = await ctx.http.get('/api/v1/settings/events').query({ newest: true, after: newest.body.meta.next_cursor }).set(admin());
    expect(none.body).toMatchObject({ data: [], meta: { next_cursor: newest.body.meta.next_cursor } });
    const theirs = await ctx.http.get('/api/v1/settings/events').query({ newest: true, limit: 500 }).set(as(other.adminToken));
    expect(theirs.body.data.every((e: { tenant_id: string }) => e.tenant_id === other.tenant.id)).toBe(true);

    const stream = await ctx.http.get('/api/v1/settings/events/stream').set({ ...admin(), 'Last-Event-ID': 'nope' });
    expect(stream.status).toBe(422);
    const member = (await seedUser(ctx.sql, ws.tenant.id, { role: 'member' })).token;
    expect((await ctx.http.get('/api/v1/settings/events').set(as(member))).status).toBe(403);
  });
});
