import { SCOPES, sha256 } from '@svc/core/internals';
import { seedApiKey, seedTenant, seedUser } from '@svc/testing';
import type { BodyOf } from '@svc/client';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
// svc_ak_ + 32 random bytes in base64url = 43 characters (256 bits)
const KEY = /^svc_ak_[A-Za-z0-9_-]{43}$/;
const RECORD_FIELDS = [
  'allowed_ips', 'created_at', 'environments', 'expires_at', 'id', 'is_active', 'last_used_at', 'name', 'prefix', 'scopes',
];
const MISSING = '00000000-0000-4000-8000-000000000000';
const future = (days = 30) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('API key management', () => {
  let t: ApiTestContext;
  let tenant: string;
  let adminId: string;
  let admin: string;
  let member: string;
  let expired: string;
  let otherAdmin: string;
  let otherKeyId: string;
  let n = 0;

  beforeAll(async () => {
    t = await createApiTestContext();
    tenant = (await seedTenant(t.sql)).id;
    const a = await seedUser(t.sql, tenant, { role: 'admin' });
    adminId = a.user.id;
    admin = a.token;
    member = (await seedUser(t.sql, tenant, { role: 'member' })).token;
    expired = (await seedUser(t.sql, tenant, { role: 'admin', tokenExpiresAt: new Date(Date.now() - 1000) })).token;
    const other = (await seedTenant(t.sql)).id;
    otherAdmin = (await seedUser(t.sql, other, { role: 'admin' })).token;
    otherKeyId = (await seedApiKey(t.sql, other)).row.id;
  });
  afterAll(() => t.close());

  const auth = (token: string): Record<string, string> => (token ? { Authorization: `Bearer ${token}` } : {});
  const create = (body: unknown, token = admin) => t.http.post('/api/v1/settings/api-keys').set(auth(token)).send(body as object);
  const rotate = (id: string, token = admin) => t.http.post(`/api/v1/settings/api-keys/${id}/rotate`).set(auth(token));
  const revoke = (id: string, token = admin) => t.http.delete(`/api/v1/settings/api-keys/${id}`).set(auth(token));
  const list = (query = '', token = admin) => t.http.get(`/api/v1/settings/api-keys${query}`).set(auth(token));
  const useKey = (key: string) => t.http.get('/api/v1/processes/list').set('X-API-Key', key);
  const minimal = (): BodyOf<'createApiKey'> => ({ name: `key-${++n}`, scopes: ['processes:read'] });
  /** Well-formed calls whose answers a test reads: through the typed client, as the console makes them. */
  const api = (token = admin) => apiClient(t, { token });
  const make = (body: BodyOf<'createApiKey'>) => api().call('createApiKey', { body });
  const page = (query: { page?: number; limit?: number } = {}, token = admin) => api(token).request('listWorkspaceApiKeys', { query });
  const keyCount = async () => (await t.sql`select count(*)::int as c from api_keys where tenant_id = ${tenant}`)[0]!.c as number;

  describe('who may call it', () => {
    const calls: Array<[string, (token?: string) => ReturnType<typeof create>]> = [
      ['POST /settings/api-keys', (token) => create(minimal(), token)],
      ['GET /settings/api-keys', (token) => list('', token)],
      ['GET /settings/api-keys/available-scopes', (token) => t.http.get('/api/v1/settings/api-keys/available-scopes').set(auth(token ?? admin))],
      ['POST /settings/api-keys/:key_id/rotate', (token) => rotate(MISSING, token)],
      ['DELETE /settings/api-keys/:key_id', (token) => revoke(MISSING, token)],
    ];

    it.each(calls)('%s answers 401 without a token, with an unknown one or with an expired one', async (_name, call) => {
      const none = await call('');
      expect(none.status).toBe(401);
      expect(none.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
      const unknown = await call('svc_at_not-a-real-token');
      expect(unknown.status).toBe(401);
      const old = await call(expired);
      expect(old.status).toBe(401);
      expect(old.body.error.code).toBe('UNAUTHORIZED');
    });

    it.each(calls)('%s answers 403 to a member', async (_name, call) => {
      const before = await keyCount();
      const res = await call(member);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
      expect(await keyCount()).toBe(before);
    });

    it('refuses an API key in place of the access token', async () => {
      const { key } = await seedApiKey(t.sql, tenant);
      const res = await t.http.get('/api/v1/settings/api-keys').set('X-API-Key', key);
      expect(res.status).toBe(401);
    });
  });

  describe('available scopes', () => {
    it('returns the whole catalogue with scope, description and group', async () => {
      const res = await api().request('listApiKeyScopes');
      expect(res.success).toBe(true);
      expect(res.data).toEqual(SCOPES.map((s) => ({ scope: s.scope, description: s.description, group: s.group })));
      expect(res.data.map((s) => s.scope).sort()).toEqual([
        'assets:read', 'jobs:read', 'jobs:stop', 'jobs:write', 'machines:read', 'processes:read', 'queues:read', 'queues:write',
      ]);
      expect(Object.fromEntries(res.data.map((s) => [s.scope, s.group]))).toEqual({
        'assets:read': 'credentials', 'queues:read': 'queues', 'queues:write': 'queues', 'jobs:read': 'executions',
        'jobs:write': 'executions', 'jobs:stop': 'executions', 'processes:read': 'processes', 'machines:read': 'machines',
      });
    });
  });

  describe('create', () => {
    it('answers 201 with the ApiKeyResponse record and the secret, and stores only its SHA-256', async () => {
      const expiresAt = future();
      const body = {
        name: 'ERP producción',
        scopes: ['queues:write', 'jobs:read'],
        expires_at: expiresAt,
        allowed_ips: ['203.0.113.7', '10.0.0.0/8', '2001:db8::1', '2001:db8::/32'],
        environments: ['staging', 'production'],
      };
      const res = await create(body);
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      const k = res.body.data;
      expect(Object.keys(k).sort()).toEqual([...RECORD_FIELDS, 'key'].sort());
      expect(k.id).toMatch(UUID);
      expect(k.name).toBe('ERP producción');
      expect(k.key).toMatch(KEY);
      expect(k.prefix).toBe(k.key.slice(0, 12));
      expect(k.prefix.startsWith('svc_ak_')).toBe(true);
      expect(k.is_active).toBe(true);
      expect(k.last_used_at).toBeNull();
      expect(k.expires_at).toBe(expiresAt);
      expect(k.allowed_ips).toEqual(body.allowed_ips);
      expect(k.scopes).toEqual(['queues:write', 'jobs:read']);
      expect(k.environments).toEqual(['staging', 'production']);
      expect(k.created_at).toMatch(ISO);

      const [row] = await t.sql`select * from api_keys where id = ${k.id}`;
      expect(row!.tenant_id).toBe(tenant);
      expect(row!.created_by).toBe(adminId);
      expect(Buffer.compare(row!.key_hash, sha256(k.key))).toBe(0);
      const [asText] = await t.sql`select row_to_json(k)::text as t from api_keys k where id = ${k.id}`;
      expect(asText!.t).not.toContain(k.key);
      expect(asText!.t).not.toContain(k.key.slice(12));
    });

    it('accepts the minimal body: no expiry, no IP restriction, every environment', async () => {
      const made = await make({ name: 'ab', scopes: ['assets:read'] });
      expect(made).toMatchObject({ name: 'ab', expires_at: null, allowed_ips: null, environments: null, scopes: ['assets:read'] });
      const explicit = await make({ name: 'nulls', scopes: ['jobs:stop'], expires_at: null, allowed_ips: null, environments: null });
      expect(explicit).toMatchObject({ expires_at: null, allowed_ips: null, environments: null });
    });

    it('issues a key that authenticates at once, and two keys never share a secret', async () => {
      const a = await make(minimal());
      const b = await make(minimal());
      expect(a.key).not.toBe(b.key);
      const res = await useKey(a.key);
      expect(res.status).toBe(200);
    });

    it('trims the name and keeps each scope once', async () => {
      const made = await make({ name: '  CI pipeline  ', scopes: ['jobs:read', 'jobs:read', 'jobs:write'] });
      expect(made.name).toBe('CI pipeline');
      expect(made.scopes).toEqual(['jobs:read', 'jobs:write']);
    });

    it.each<[string, unknown, string]>([
      ['a missing name', { scopes: ['jobs:read'] }, 'body → name'],
      ['a one-character name', { name: 'a', scopes: ['jobs:read'] }, 'body → name'],
      ['a name of spaces', { name: '   ', scopes: ['jobs:read'] }, 'body → name'],
      ['a name that is not a string', { name: 12, scopes: ['jobs:read'] }, 'body → name'],
      ['a null name', { name: null, scopes: ['jobs:read'] }, 'body → name'],
      ['missing scopes', { name: 'ok' }, 'body → scopes'],
      ['an empty scope list', { name: 'ok', scopes: [] }, 'body → scopes'],
      ['null scopes', { name: 'ok', scopes: null }, 'body → scopes'],
      ['an unknown scope', { name: 'ok', scopes: ['jobs:read', 'jobs:delete'] }, 'body → scopes → 1'],
      ['a dotted internal permission', { name: 'ok', scopes: ['jobs.read'] }, 'body → scopes → 0'],
      ['a scope that is not a string', { name: 'ok', scopes: [7] }, 'body → scopes → 0'],
      ['scopes as a string', { name: 'ok', scopes: 'jobs:read' }, 'body → scopes'],
      ['an unknown environment', { name: 'ok', scopes: ['jobs:read'], environments: ['prod'] }, 'body → environments → 0'],
      ['an empty environment list', { name: 'ok', scopes: ['jobs:read'], environments: [] }, 'body → environments'],
      ['a repeated environment', { name: 'ok', scopes: ['jobs:read'], environments: ['dev', 'dev'] }, 'body → environments'],
      ['environments as a string', { name: 'ok', scopes: ['jobs:read'], environments: 'dev' }, 'body → environments'],
      ['an invalid IPv4 address', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['999.1.1.1'] }, 'body → allowed_ips → 0'],
      ['a hostname', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['10.0.0.1', 'example.com'] }, 'body → allowed_ips → 1'],
      ['an IPv4 prefix over 32', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['10.0.0.0/33'] }, 'body → allowed_ips → 0'],
      ['an IPv6 prefix over 128', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['2001:db8::/129'] }, 'body → allowed_ips → 0'],
      ['a non-numeric prefix', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['10.0.0.0/x'] }, 'body → allowed_ips → 0'],
      ['two slashes', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['10.0.0.0/8/1'] }, 'body → allowed_ips → 0'],
      ['an invalid IPv6 address', { name: 'ok', scopes: ['jobs:read'], allowed_ips: ['2001:db8:::1'] }, 'body → allowed_ips → 0'],
      ['an empty IP list', { name: 'ok', scopes: ['jobs:read'], allowed_ips: [] }, 'body → allowed_ips'],
      ['allowed_ips as a string', { name: 'ok', scopes: ['jobs:read'], allowed_ips: '10.0.0.1' }, 'body → allowed_ips'],
      ['an expiry in the past', { name: 'ok', scopes: ['jobs:read'], expires_at: '2020-01-01T00:00:00Z' }, 'body → expires_at'],
      ['an expiry that is not a date', { name: 'ok', scopes: ['jobs:read'], expires_at: 'tomorrow' }, 'body → expires_at'],
      ['an expiry without a time', { name: 'ok', scopes: ['jobs:read'], expires_at: '2999-01-01' }, 'body → expires_at'],
      ['an expiry as a number', { name: 'ok', scopes: ['jobs:read'], expires_at: 4102444800 }, 'body → expires_at'],
      ['an unknown field', { name: 'ok', scopes: ['jobs:read'], tenant_id: MISSING }, 'body → tenant_id'],
      ['a key chosen by the client', { name: 'ok', scopes: ['jobs:read'], key: 'svc_ak_mine' }, 'body → key'],
      ['an array instead of an object', [{ name: 'ok', scopes: ['jobs:read'] }], 'body'],
    ])('refuses %s with 422 naming the field, and creates nothing', async (_case, body, field) => {
      const before = await keyCount();
      const res = await create(body);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      for (const d of res.body.error.details) expect(typeof d.message).toBe('string');
      expect(res.body.detail.length).toBeGreaterThan(0);
      expect(await keyCount()).toBe(before);
    });

    it('lists every problem of a body at once', async () => {
      const res = await create({ name: 'x', scopes: ['nope'], allowed_ips: ['1.2.3.4/99'], environments: ['qa'] });
      expect(res.status).toBe(422);
      const fields = res.body.error.details.map((d: { field: string }) => d.field);
      expect(fields).toEqual(expect.arrayContaining(['body → name', 'body → scopes → 0', 'body → environments → 0']));
    });

    it('writes a create_api_key audit row for the admin, without the secret', async () => {
      const k = await make({ ...minimal(), allowed_ips: ['192.0.2.0/24'] });
      const rows = await t.sql`select * from audit_log where resource_id = ${k.id}`;
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        tenant_id: tenant, actor_type: 'user', actor_id: adminId, action: 'create_api_key', source: 'api', resource_type: 'api_key',
      });
      expect(rows[0]!.details).toMatchObject({ name: k.name, prefix: k.prefix, scopes: ['processes:read'], allowed_ips: ['192.0.2.0/24'] });
      expect(rows[0]!.request_id).toEqual(expect.any(String));
      expect(JSON.stringify(rows[0])).not.toContain(k.key.slice(12));
    });
  });

  describe('list', () => {
    it('returns the workspace keys newest first, paged, never with a secret', async () => {
      const created: Array<Awaited<ReturnType<typeof make>>> = [];
      for (let i = 0; i < 3; i++) created.push(await make(minimal()));
      const total = await keyCount();
      const res = await page({ limit: 2 });
      expect(res.success).toBe(true);
      expect(res.meta).toEqual({ page: 1, limit: 2, total, pages: Math.ceil(total / 2) });
      expect(res.data.map((k) => k.id)).toEqual([created[2]!.id, created[1]!.id]);
      for (const k of res.data) expect(Object.keys(k).sort()).toEqual(RECORD_FIELDS);
      const second = await page({ limit: 2, page: 2 });
      expect(second.data[0]!.id).toBe(created[0]!.id);
      const all = await page({ limit: 100 });
      expect(all.data).toHaveLength(total);
      expect(all.data.find((k) => k.id === created[1]!.id)).toEqual((({ key: _k, ...rest }) => rest)(created[1]!));
      expect(JSON.stringify(all)).not.toContain(created[0]!.key);
    });

    it('defaults to page 1 and 20 per page', async () => {
      expect((await page()).meta).toMatchObject({ page: 1, limit: 20 });
    });

    it('never shows another workspace its keys', async () => {
      const mine = await page({ limit: 100 });
      expect(mine.data.map((k) => k.id)).not.toContain(otherKeyId);
      const theirs = await page({ limit: 100 }, otherAdmin);
      expect(theirs.data.map((k) => k.id)).toEqual([otherKeyId]);
    });

    it.each([['page=0'], ['page=501'], ['limit=0'], ['limit=101'], ['limit=abc']])('refuses %s with 422', async (q) => {
      const res = await list(`?${q}`);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    });
  });

  describe('rotate', () => {
    it('issues a new secret for the same record; the old one stops working at once', async () => {
      const before = await make({ name: 'rotating', scopes: ['processes:read', 'jobs:read'], allowed_ips: ['0.0.0.0/0', '::/0'], environments: ['dev'], expires_at: future() });
      expect((await useKey(before.key)).status).toBe(200); // now cached in this process
      const after = await api().call('rotateApiKey', { path: { key_id: before.id } });
      expect(Object.keys(after).sort()).toEqual([...RECORD_FIELDS, 'key'].sort());
      expect(after.key).toMatch(KEY);
      expect(after.key).not.toBe(before.key);
      expect(after.prefix).toBe(after.key.slice(0, 12));
      // the use above may already be written (last-use times are flushed about once a second)
      const { key: _a, prefix: _b, last_used_at: _c, ...same } = before;
      expect(after).toMatchObject(same);
      if (after.last_used_at !== null) expect(Date.parse(after.last_used_at)).toBeGreaterThanOrEqual(Date.parse(before.created_at));

      const old = await useKey(before.key);
      expect(old.status).toBe(401);
      expect(old.body.error.message).toBe('Credenciales inválidas');
      expect((await useKey(after.key)).status).toBe(200);

      const [row] = await t.sql`select key_hash, prefix, rotated_at from api_keys where id = ${before.id}`;
      expect(Buffer.compare(row!.key_hash, sha256(after.key))).toBe(0);
      expect(row!.rotated_at).toBeInstanceOf(Date);
      const listed = (await page({ limit: 100 })).data.find((k) => k.id === before.id);
      expect(listed?.prefix).toBe(after.prefix);
      expect(listed && 'key' in listed).toBe(false);
    });

    it('writes a rotate_api_key audit row without either secret', async () => {
      const k = await make(minimal());
      const r = await api().call('rotateApiKey', { path: { key_id: k.id } });
      const rows = await t.sql`select * from audit_log where resource_id = ${k.id} and action = 'rotate_api_key'`;
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actor_type: 'user', actor_id: adminId, source: 'api', resource_type: 'api_key' });
      expect(rows[0]!.details).toMatchObject({ name: k.name, prefix: r.prefix });
      const text = JSON.stringify(rows[0]);
      expect(text).not.toContain(k.key.slice(12));
      expect(text).not.toContain(r.key.slice(12));
    });

    it('answers 404 for another workspace key or a missing one, and 422 for an id that is not a UUID', async () => {
      const theirs = await rotate(otherKeyId);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error).toMatchObject({ code: 'NOT_FOUND', message: 'Recurso no encontrado' });
      const [row] = await t.sql`select rotated_at from api_keys where id = ${otherKeyId}`;
      expect(row!.rotated_at).toBeNull();
      expect((await rotate(MISSING)).status).toBe(404);
      const bad = await rotate('not-a-uuid');
      expect(bad.status).toBe(422);
      expect(bad.body.error.details[0].field).toBe('path → key_id');
    });

    it('refuses to rotate a revoked key with 409', async () => {
      const k = await make(minimal());
      await api().call('revokeApiKey', { path: { key_id: k.id } });
      await expect(api().call('rotateApiKey', { path: { key_id: k.id } })).rejects.toMatchObject({ status: 409, code: 'CONFLICT' });
      expect((await useKey(k.key)).status).toBe(401);
    });
  });

  describe('revoke', () => {
    it('deactivates the key; it is rejected at once and the record says so', async () => {
      const k = await make(minimal());
      expect((await useKey(k.key)).status).toBe(200);
      const revoked = await api().call('revokeApiKey', { path: { key_id: k.id } });
      expect(Object.keys(revoked).sort()).toEqual(RECORD_FIELDS);
      expect(revoked).toMatchObject({ id: k.id, name: k.name, prefix: k.prefix, is_active: false });
      const denied = await useKey(k.key);
      expect(denied.status).toBe(401);
      expect(denied.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
      const [row] = await t.sql`select is_active, revoked_at from api_keys where id = ${k.id}`;
      expect(row!.is_active).toBe(false);
      expect(row!.revoked_at).toBeInstanceOf(Date);
    });

    it('is idempotent and audited once, without the secret', async () => {
      const k = await make(minimal());
      expect((await api().call('revokeApiKey', { path: { key_id: k.id } })).is_active).toBe(false);
      const again = await api().call('revokeApiKey', { path: { key_id: k.id } });
      expect(again.is_active).toBe(false);
      const rows = await t.sql`select * from audit_log where resource_id = ${k.id} and action = 'revoke_api_key'`;
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ actor_type: 'user', actor_id: adminId, source: 'api' });
      expect(rows[0]!.details).toMatchObject({ name: k.name, prefix: k.prefix });
      expect(JSON.stringify(rows[0])).not.toContain(k.key.slice(12));
    });

    it('answers 404 for another workspace key or a missing one, and 422 for an id that is not a UUID', async () => {
      const theirs = await revoke(otherKeyId);
      expect(theirs.status).toBe(404);
      const [row] = await t.sql`select is_active from api_keys where id = ${otherKeyId}`;
      expect(row!.is_active).toBe(true);
      expect((await revoke(MISSING)).status).toBe(404);
      expect((await revoke('123')).status).toBe(422);
    });
  });

  it('keeps no secret anywhere in the database: only hashes and 12-character prefixes', async () => {
    const k = await make(minimal());
    const r = await api().call('rotateApiKey', { path: { key_id: k.id } });
    const tail = (s: string) => s.slice(12);
    const [dump] = await t.sql`
      select (select coalesce(string_agg(row_to_json(a)::text, ''), '') from api_keys a)
          || (select coalesce(string_agg(row_to_json(l)::text, ''), '') from audit_log l) as text`;
    expect(dump!.text).not.toContain(tail(k.key));
    expect(dump!.text).not.toContain(tail(r.key));
  });
});
