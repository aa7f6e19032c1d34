import { createUser, deactivateUser, issueAccessToken } from '@svc/core/internals';
import { seedTenant, seedUser } from '@svc/testing';
import { apiClient, createApiTestContext, type ApiTestContext } from '@svc/testing/api';

const PASSWORD = 'correct horse battery';

describe('user login, logout and /auth/me', () => {
  let t: ApiTestContext;
  let tenantId: string;
  let admin: { id: string; email: string };
  let member: { id: string; email: string };

  beforeAll(async () => {
    t = await createApiTestContext();
    tenantId = (await seedTenant(t.sql, { name: 'acme-auth' })).id;
    admin = await createUser(t.sql, tenantId, { email: 'Ada.Admin@Example.test', password: PASSWORD, role: 'admin', name: 'Ada' });
    member = await createUser(t.sql, tenantId, { email: 'mel.member@example.test', password: PASSWORD, role: 'member' });
  });
  afterAll(() => t.close());

  const loginAs = (email: string, password = PASSWORD) => t.http.post('/api/v1/auth/login').send({ email, password });
  const me = (token: string) => t.http.get('/api/v1/auth/me').set('Authorization', `Bearer ${token}`);
  /** Well-formed calls whose answers a test reads: through the typed client, as the console makes them. */
  const logIn = (email: string) => apiClient(t, {}).request('logIn', { body: { email, password: PASSWORD } });
  const session = (token: string) => apiClient(t, { token }).call('getSession');
  const tokenOf = async (email: string) => (await logIn(email)).data.access_token;

  it('logs in with email and password and returns a Bearer token with its expiry and the user', async () => {
    const before = Date.now();
    const res = await logIn('Ada.Admin@Example.test');
    expect(res.success).toBe(true);
    const data = res.data;
    expect(Object.keys(data).sort()).toEqual(['access_token', 'expires_at', 'token_type', 'user']);
    expect(data.token_type).toBe('Bearer');
    expect(data.access_token).toMatch(/^svc_at_[A-Za-z0-9_-]{43}$/);
    const ttlMs = new Date(data.expires_at).getTime() - before;
    expect(ttlMs).toBeGreaterThan(t.config.accessTokenTtlSeconds * 1000 - 60_000);
    expect(ttlMs).toBeLessThanOrEqual(t.config.accessTokenTtlSeconds * 1000 + 60_000);
    expect(data.user).toEqual({ id: admin.id, email: 'Ada.Admin@Example.test', name: 'Ada', role: 'admin', tenant_id: tenantId, must_change_password: false });
    expect((await session(data.access_token)).id).toBe(admin.id);
  });

  it('stores only the SHA-256 of the token, never the token itself', async () => {
    const token = await tokenOf('mel.member@example.test');
    const rows = await t.sql`select token_hash, prefix from access_tokens where user_id = ${member.id}`;
    expect(rows.length).toBeGreaterThan(0);
    const hashes = rows.map((r) => (r.token_hash as Buffer).toString('hex'));
    expect(hashes).toContain(require('node:crypto').createHash('sha256').update(token).digest('hex'));
    expect(rows.map((r) => r.prefix)).toContain(token.slice(0, 12));
    const [{ n }] = await t.sql`select count(*)::int as n from access_tokens a where row_to_json(a)::text like ${'%' + token + '%'}`;
    expect(n).toBe(0);
  });

  it('matches the email case-insensitively', async () => {
    expect((await logIn('ADA.ADMIN@example.TEST')).data.user.id).toBe(admin.id);
  });

  it('answers a wrong password, an unknown email and an inactive user with the same 401', async () => {
    const inactive = await createUser(t.sql, tenantId, { email: 'gone@example.test', password: PASSWORD, role: 'admin' });
    await deactivateUser(t.sql, inactive.id);
    const answers = [
      await loginAs('Ada.Admin@Example.test', 'wrong password!'),
      await loginAs('nobody@example.test'),
      await loginAs('gone@example.test'),
    ];
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'UNAUTHORIZED', message: 'Credenciales inválidas', request_id: res.headers['x-request-id'] },
      });
    }
  });

  it('stops accepting the tokens of a user once deactivated', async () => {
    const user = await createUser(t.sql, tenantId, { email: 'leaver@example.test', password: PASSWORD, role: 'admin' });
    const token = await tokenOf('leaver@example.test');
    expect((await me(token)).status).toBe(200);
    await deactivateUser(t.sql, user.id);
    const res = await me(token);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('shows the role of the caller in /auth/me: admin and member', async () => {
    const a = await session(await tokenOf('ada.admin@example.test'));
    expect(a).toMatchObject({ id: admin.id, role: 'admin', tenant_id: tenantId, email: 'Ada.Admin@Example.test', is_active: true });
    expect(a.token.prefix).toMatch(/^svc_at_/);
    expect(a).not.toHaveProperty('password_hash');
    const m = await session(await tokenOf('mel.member@example.test'));
    expect(m).toMatchObject({ id: member.id, role: 'member', name: null });
  });

  it('rejects /auth/me without a token, with a malformed header and with an unknown token', async () => {
    expect((await t.http.get('/api/v1/auth/me')).status).toBe(401);
    expect((await t.http.get('/api/v1/auth/me').set('Authorization', 'Basic abc')).status).toBe(401);
    const res = await me('svc_at_' + 'x'.repeat(43));
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Credenciales inválidas' });
  });

  it('rejects an expired token with 401', async () => {
    const { token } = await seedUser(t.sql, tenantId, { tokenExpiresAt: new Date(Date.now() - 1000) });
    const res = await me(token);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('rejects a token issued with a short lifetime once that lifetime has passed', async () => {
    const issued = await issueAccessToken(t.sql, member.id, 60);
    expect((await me(issued.token)).status).toBe(200);
    await t.sql`update access_tokens set expires_at = now() - interval '1 second' where id = ${issued.id}`;
    expect((await me(issued.token)).status).toBe(401);
  });

  it('logs out: revokes the presented token, which then answers 401, and leaves other tokens working', async () => {
    const first = await tokenOf('mel.member@example.test');
    const second = await tokenOf('mel.member@example.test');
    expect(await apiClient(t, { token: first }).request('logOut')).toEqual({ success: true, data: { revoked: true } });
    expect((await me(first)).status).toBe(401);
    expect((await t.http.post('/api/v1/auth/logout').set('Authorization', `Bearer ${first}`)).status).toBe(401);
    expect((await me(second)).status).toBe(200);
    const [row] = await t.sql`select revoked_at from access_tokens where prefix = ${first.slice(0, 12)} and revoked_at is not null`;
    expect(row).toBeDefined();
  });

  it('records logins and logouts in the audit log without the token', async () => {
    const token = await tokenOf('mel.member@example.test');
    await apiClient(t, { token }).call('logOut');
    const rows = await t.sql`select action, actor_id, details::text as details from audit_log where tenant_id = ${tenantId} and actor_id = ${member.id}`;
    const actions = rows.map((r) => r.action);
    expect(actions).toContain('login');
    expect(actions).toContain('logout');
    for (const r of rows) expect(r.details).not.toContain('svc_at_');
  });

  it.each([
    ['no body', undefined, [['body → email', 'required'], ['body → password', 'required']]],
    ['a body that is an array', [{ email: 'a@b.test', password: 'x' }], [['body', 'type']]],
    ['a missing email', { password: 'x' }, [['body → email', 'required']]],
    ['a missing password', { email: 'a@b.test' }, [['body → password', 'required']]],
    ['an email that is not a string', { email: 42, password: 'x' }, [['body → email', 'type']]],
    ['a malformed email', { email: 'not-an-email', password: 'x' }, [['body → email', 'format']]],
    ['an empty password', { email: 'a@b.test', password: '' }, [['body → password', 'minLength']]],
    ['an unknown field', { email: 'a@b.test', password: 'x', tenant: 'acme' }, [['body → tenant', 'additionalProperties']]],
  ])('answers a login with %s with 422 naming the field', async (_name, body, expected) => {
    const req = t.http.post('/api/v1/auth/login');
    const res = body === undefined ? await req : await req.send(body as object);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    for (const [field, type] of expected as Array<[string, string]>) {
      expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc: field.split(' → '), type })]));
    }
  });
});

describe('login rate limit', () => {
  let t: ApiTestContext;
  beforeAll(async () => {
    t = await createApiTestContext();
  });
  afterAll(() => t.close());

  it('limits logins per source IP with the default limit of 120 a minute, answering 429 after that', async () => {
    const first = await t.http.post('/api/v1/auth/login').send({});
    expect(first.status).toBe(422);
    expect(first.headers['x-ratelimit-limit']).toBe('120');
    for (let i = 1; i < 120; i++) await t.http.post('/api/v1/auth/login').send({});
    const over = await t.http.post('/api/v1/auth/login').send({ email: 'a@b.test', password: 'x' });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
  });
});
