import { seedTenantWithKey, seedMachine, seedTenant } from '@svc/testing';
import type { QueryOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const URL = '/api/v1/machines/list';

describe('GET /api/v1/machines/list', () => {
  let t: ApiTestContext;
  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());

  const tenantWithKey = (scopes = ['machines:read']) => seedTenantWithKey(t.sql, scopes);
  const names = (body: { data: Array<{ name: string }> }) => body.data.map((m) => m.name);
  /** A read as an integrator makes it, through the typed client (@svc/client). */
  const list = (key: string, query: QueryOf<'listMachines'> = {}) => apiClient(t, { apiKey: key }).request('listMachines', { query });

  it('returns the documented machine record field by field, never the machine key', async () => {
    const { tenant, key } = await tenantWithKey();
    const { row, machineKey } = await seedMachine(t.sql, tenant.id, { name: 'robot-01', slots: 4, status: 'busy' });
    await t.sql`update machines set description = 'Rack 3', running_jobs = 4, agent_version = '1.2.3',
                host_info = ${t.sql.json({ os: 'linux' })} where id = ${row.id}`;
    const [m] = await t.sql`select * from machines where id = ${row.id}`;

    const res = await list(key);
    expect(res).toEqual({
      success: true,
      data: [
        {
          id: row.id,
          tenant_id: tenant.id,
          name: 'robot-01',
          description: 'Rack 3',
          status: 'busy',
          slots: 4,
          kind: 'unattended',
          running_jobs: 4,
          is_active: true,
          environments: null,
          last_heartbeat_at: m!.last_heartbeat_at.toISOString(),
          agent_version: '1.2.3',
          created_at: m!.created_at.toISOString(),
          updated_at: m!.updated_at.toISOString(),
        },
      ],
      meta: { page: 1, limit: 20, total: 1, pages: 1 },
    });
    const text = JSON.stringify(res);
    expect(text).not.toContain(machineKey);
    expect(text).not.toContain(row.machine_key_prefix);
  });

  it('shows a machine that never sent a heartbeat with null last_heartbeat_at and agent_version', async () => {
    const { tenant, key } = await tenantWithKey();
    await seedMachine(t.sql, tenant.id, { name: 'fresh', status: 'offline' });
    const res = await list(key);
    expect(res.data[0]).toMatchObject({ name: 'fresh', status: 'offline', last_heartbeat_at: null, agent_version: null, description: null });
  });

  it('filters by each status, lists active machines only, ordered by name', async () => {
    const { tenant, key } = await tenantWithKey();
    await seedMachine(t.sql, tenant.id, { name: 'on-b', status: 'online' });
    await seedMachine(t.sql, tenant.id, { name: 'on-a', status: 'online' });
    await seedMachine(t.sql, tenant.id, { name: 'busy-a', status: 'busy' });
    await seedMachine(t.sql, tenant.id, { name: 'off-a', status: 'offline' });
    await seedMachine(t.sql, tenant.id, { name: 'retired', status: 'online', is_active: false });

    const all = await list(key);
    expect(names(all)).toEqual(['busy-a', 'off-a', 'on-a', 'on-b']);
    expect(all.meta.total).toBe(4);

    const online = await list(key, { status: 'online' });
    expect(names(online)).toEqual(['on-a', 'on-b']);
    expect(online.meta).toEqual({ page: 1, limit: 20, total: 2, pages: 1 });
    expect(names(await list(key, { status: 'busy' }))).toEqual(['busy-a']);
    expect(names(await list(key, { status: 'offline' }))).toEqual(['off-a']);
  });

  it('pages like every list', async () => {
    const { tenant, key } = await tenantWithKey();
    for (let i = 0; i < 7; i++) await seedMachine(t.sql, tenant.id, { name: `m-${i}` });
    const res = await list(key, { page: 2, limit: 3 });
    expect(names(res)).toEqual(['m-3', 'm-4', 'm-5']);
    expect(res.meta).toEqual({ page: 2, limit: 3, total: 7, pages: 3 });
  });

  it('never shows another workspace\'s machines', async () => {
    const { tenant, key } = await tenantWithKey();
    const other = await seedTenant(t.sql);
    await seedMachine(t.sql, tenant.id, { name: 'mine' });
    await seedMachine(t.sql, other.id, { name: 'theirs', status: 'online' });
    expect(names(await list(key, { status: 'online' }))).toEqual(['mine']);
  });

  it.each([
    ['status=running', 'query → status'],
    ['status=ONLINE', 'query → status'],
    ['status=', 'query → status'],
    ['status=online&status=busy', 'query → status'],
    ['limit=101', 'query → limit'],
    ['page=0', 'query → page'],
    ['name=x', 'query → name'],
  ])('rejects %s with 422 naming %s', async (qs, field) => {
    const { key } = await tenantWithKey();
    const res = await t.http.get(`${URL}?${qs}`).set('X-API-Key', key);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it('reports an unknown status as a single enum issue at query → status', async () => {
    const { key } = await tenantWithKey();
    const res = await t.http.get(`${URL}?status=running`).set('X-API-Key', key);
    expect(res.body.error.details).toHaveLength(1);
    expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'status'], type: 'enum' });
  });

  it('answers 401 without a valid key and 403 without machines:read, before validating the query', async () => {
    expect((await t.http.get(`${URL}?status=nope`)).status).toBe(401);
    const { key } = await tenantWithKey(['processes:read']);
    const res = await t.http.get(`${URL}?status=nope`).set('X-API-Key', key);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    const empty = await tenantWithKey([]);
    expect((await t.http.get(URL).set('X-API-Key', empty.key)).status).toBe(403);
  });

  it('allows 60 requests a minute per key, then answers 429', async () => {
    const { key } = await tenantWithKey();
    for (let i = 0; i < 60; i++) expect((await t.http.get(URL).set('X-API-Key', key)).status).toBe(200);
    const res = await t.http.get(URL).set('X-API-Key', key);
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(res.headers['retry-after']).toBeDefined();
  });
});
