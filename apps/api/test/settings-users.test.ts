import { createUser } from '@svc/core/internals';
import { seedTenant, seedUser } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { PAIR_FREE_FAILURES } from '../src/auth/throttle';

const PASSWORD = 'correct horse battery';
const BASE = '/api/v1/settings/users';
const MISSING = '00000000-0000-4000-8000-000000000000';

/** Users through the API: admins manage them, a one-time password confines its user until changed. */
describe('settings/users', () => {
  let t: ApiTestContext;
  let tenantId: string;
  let otherTenantId: string;
  let admin: string;
  let member: string;
  let foreignUserId: string;
  let foreignAdmin: string;
  const as = (token: string) => ({ Authorization: `Bearer ${token}` });

  beforeAll(async () => {
    t = await createApiTestContext();
    tenantId = (await seedTenant(t.sql, { name: 'acme-users' })).id;
    otherTenantId = (await seedTenant(t.sql, { name: 'globex-users' })).id;
    admin = (await seedUser(t.sql, tenantId, { role: 'admin' })).token;
    member = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
    const foreign = await seedUser(t.sql, otherTenantId, { role: 'admin' });
    foreignUserId = foreign.user.id as string;
    foreignAdmin = foreign.token;
  });
  afterAll(() => t.close());

  const login = (email: string, password: string) => t.http.post('/api/v1/auth/login').send({ email, password });
  const audit = async (action: string, resourceId: string) =>
    t.sql`select actor_type, action, details from audit_log where tenant_id = ${tenantId} and action = ${action} and resource_id = ${resourceId}`;

  it('creates a user with a one-time password shown once, which signs in and must be changed before anything else', async () => {
    const res = await t.http.post(BASE).set(as(admin)).send({ email: 'Nueva@Example.test', role: 'member', name: 'Nueva' });
    expect(res.status).toBe(201);
    const created = res.body.data;
    expect(created).toMatchObject({ email: 'Nueva@Example.test', role: 'member', name: 'Nueva', tenant_id: tenantId, is_active: true, must_change_password: true });
    expect(created.one_time_password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const [{ n }] = await t.sql`select count(*)::int as n from users u where row_to_json(u)::text like ${'%' + created.one_time_password + '%'}`;
    expect(n).toBe(0);
    const rows = await audit('create_user', created.id);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows[0])).not.toContain(created.one_time_password);

    // the list never shows the password
    const list = await t.http.get(BASE).set(as(admin));
    expect(list.status).toBe(200);
    const listed = list.body.data.find((u: { id: string }) => u.id === created.id);
    expect(listed).toMatchObject({ must_change_password: true });
    expect(listed).not.toHaveProperty('one_time_password');

    const signIn = await login('nueva@example.test', created.one_time_password);
    expect(signIn.status).toBe(200);
    expect(signIn.body.data.user.must_change_password).toBe(true);
    const token: string = signIn.body.data.access_token;

    // confined: the session answers, everything else is 403 with the reason
    expect((await t.http.get('/api/v1/auth/me').set(as(token))).body.data.must_change_password).toBe(true);
    const blocked = await t.http.get('/api/v1/settings/jobs').set(as(token));
    expect(blocked.status).toBe(403);
    expect(blocked.body.error).toMatchObject({ code: 'FORBIDDEN', message: 'Debes cambiar tu contraseña antes de continuar' });

    // the current password must be right, and the new one must differ
    const wrong = await t.http.post('/api/v1/auth/password').set(as(token)).send({ current_password: 'not it at all', new_password: 'otra clave segura' });
    expect(wrong.status).toBe(422);
    expect(JSON.stringify(wrong.body.error)).toContain('La contraseña actual no es correcta');
    const same = await t.http.post('/api/v1/auth/password').set(as(token))
      .send({ current_password: created.one_time_password, new_password: created.one_time_password });
    expect(same.status).toBe(422);

    const changed = await t.http.post('/api/v1/auth/password').set(as(token))
      .send({ current_password: created.one_time_password, new_password: 'mi clave nueva 1' });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toEqual({ changed: true });
    expect((await t.http.get('/api/v1/settings/jobs').set(as(token))).status).toBe(200);
    expect((await login('nueva@example.test', created.one_time_password)).status).toBe(401);
    expect((await login('nueva@example.test', 'mi clave nueva 1')).status).toBe(200);
    expect(await audit('change_password', created.id)).toHaveLength(1);
  });

  it('refuses a common password as the new one, the first one after a one-time password too: 422 on the field, nothing changed', async () => {
    const created = (await t.http.post(BASE).set(as(admin)).send({ email: 'primera-vez@example.test', role: 'member' })).body.data;
    const token = (await login(created.email, created.one_time_password)).body.data.access_token as string;
    for (const new_password of ['12345678', 'PassWord1']) {
      const res = await t.http.post('/api/v1/auth/password').set(as(token)).send({ current_password: created.one_time_password, new_password });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        success: false,
        error: { code: 'VALIDATION_ERROR', details: [{ field: 'body → new_password', message: 'es una contraseña demasiado común; elige otra' }] },
      });
    }
    // still confined, the one-time password still the one
    expect((await t.http.get('/api/v1/auth/me').set(as(token))).body.data.must_change_password).toBe(true);
    expect((await login(created.email, created.one_time_password)).status).toBe(200);

    const u = await createUser(t.sql, tenantId, { email: 'cambia-comun@example.test', password: PASSWORD, role: 'member' });
    const own = (await login(u.email, PASSWORD)).body.data.access_token as string;
    const res = await t.http.post('/api/v1/auth/password').set(as(own)).send({ current_password: PASSWORD, new_password: 'Football' });
    expect([res.status, res.body.error?.details]).toEqual([422, [{ field: 'body → new_password', message: 'es una contraseña demasiado común; elige otra' }]]);
    expect((await login(u.email, PASSWORD)).status).toBe(200);
  });

  it('revokes the other tokens of a user who changes their password, and keeps the one used', async () => {
    const u = await createUser(t.sql, tenantId, { email: 'dos-sesiones@example.test', password: PASSWORD, role: 'member' });
    const first = (await login(u.email, PASSWORD)).body.data.access_token;
    const second = (await login(u.email, PASSWORD)).body.data.access_token;
    const res = await t.http.post('/api/v1/auth/password').set(as(first)).send({ current_password: PASSWORD, new_password: 'otra clave larga' });
    expect(res.status).toBe(200);
    expect((await t.http.get('/api/v1/auth/me').set(as(first))).status).toBe(200);
    expect((await t.http.get('/api/v1/auth/me').set(as(second))).status).toBe(401);
  });

  it('counts a wrong current password as a failed sign-in of the account: a stolen token cannot guess on', async () => {
    const u = await createUser(t.sql, tenantId, { email: 'adivina@example.test', password: PASSWORD, role: 'member' });
    const token = (await login(u.email, PASSWORD)).body.data.access_token as string;
    const statuses: number[] = [];
    for (let i = 0; i < PAIR_FREE_FAILURES + 2; i++) {
      const r = await t.http.post('/api/v1/auth/password').set(as(token)).send({ current_password: `intento ${i}`, new_password: 'otra clave segura' });
      statuses.push(r.status);
    }
    expect(statuses.slice(0, PAIR_FREE_FAILURES)).toEqual(Array.from({ length: PAIR_FREE_FAILURES }, () => 422));
    expect(statuses).toContain(429);
    // blocked for this account from this address, the right one too; the session itself goes on
    const right = await t.http.post('/api/v1/auth/password').set(as(token)).send({ current_password: PASSWORD, new_password: 'otra clave segura' });
    expect(right.status).toBe(429);
    expect(right.body.error.message).toBe('Demasiados intentos de inicio de sesión; espera antes de reintentar');
    expect((await t.http.get('/api/v1/auth/me').set(as(token))).status).toBe(200);
  });

  it('lists the workspace users in pages, never another workspace\'s', async () => {
    const page = await t.http.get(`${BASE}?limit=1&page=2`).set(as(admin));
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.meta).toMatchObject({ page: 2, limit: 1 });
    expect(page.body.meta.total).toBeGreaterThanOrEqual(3);
    const all = await t.http.get(`${BASE}?limit=100`).set(as(admin));
    expect(all.body.data.every((u: { tenant_id: string }) => u.tenant_id === tenantId)).toBe(true);
    expect(all.body.data.map((u: { id: string }) => u.id)).not.toContain(foreignUserId);
  });

  it('changes role and name, audited with what changed', async () => {
    const created = (await t.http.post(BASE).set(as(admin)).send({ email: 'rol@example.test', role: 'member' })).body.data;
    const res = await t.http.patch(`${BASE}/${created.id}`).set(as(admin)).send({ role: 'admin', name: 'Ahora admin' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ role: 'admin', name: 'Ahora admin' });
    const rows = await audit('update_user', created.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.details.changes).toEqual({ role: { from: 'member', to: 'admin' }, name: { from: null, to: 'Ahora admin' } });
    const cleared = await t.http.patch(`${BASE}/${created.id}`).set(as(admin)).send({ name: null });
    expect(cleared.body.data.name).toBeNull();
    expect(cleared.body.data.role).toBe('admin');
  });

  it('deactivates a user: its tokens stop at once, the call is idempotent and audited once', async () => {
    const victim = await seedUser(t.sql, tenantId, { role: 'member' });
    expect((await t.http.get('/api/v1/auth/me').set(as(victim.token))).status).toBe(200);
    const res = await t.http.delete(`${BASE}/${victim.user.id as string}`).set(as(admin));
    expect(res.status).toBe(200);
    expect(res.body.data.is_active).toBe(false);
    expect((await t.http.get('/api/v1/auth/me').set(as(victim.token))).status).toBe(401);
    const again = await t.http.delete(`${BASE}/${victim.user.id as string}`).set(as(admin));
    expect(again.status).toBe(200);
    expect(await audit('deactivate_user', victim.user.id as string)).toHaveLength(1);
  });

  it('never demotes or deactivates the last active admin of the workspace (409)', async () => {
    const lone = (await seedTenant(t.sql, { name: 'solo-users' })).id;
    const only = await seedUser(t.sql, lone, { role: 'admin' });
    const id = only.user.id as string;
    for (const res of [
      await t.http.patch(`${BASE}/${id}`).set(as(only.token)).send({ role: 'member' }),
      await t.http.delete(`${BASE}/${id}`).set(as(only.token)),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.error.message).toBe('No se puede quitar el rol ni desactivar al último administrador activo del workspace');
    }
    // with a second admin, the first may step down
    const second = await seedUser(t.sql, lone, { role: 'admin' });
    expect((await t.http.patch(`${BASE}/${id}`).set(as(second.token)).send({ role: 'member' })).status).toBe(200);
    expect((await t.http.delete(`${BASE}/${second.user.id as string}`).set(as(second.token))).status).toBe(409);
  });

  it('lets only one of two admins demoting each other at once succeed', async () => {
    const pair = (await seedTenant(t.sql, { name: 'pair-users' })).id;
    const a = await seedUser(t.sql, pair, { role: 'admin' });
    const b = await seedUser(t.sql, pair, { role: 'admin' });
    const answers = await Promise.all([
      t.http.patch(`${BASE}/${b.user.id as string}`).set(as(a.token)).send({ role: 'member' }),
      t.http.patch(`${BASE}/${a.user.id as string}`).set(as(b.token)).send({ role: 'member' }),
    ]);
    // the loser is 409 when both passed the role check first, 403 when it came after the other's commit
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const [{ n }] = await t.sql`select count(*)::int as n from users where tenant_id = ${pair} and role = 'admin' and is_active`;
    expect(n).toBe(1);
  });

  it('answers 403 to members on every admin route, with no change made', async () => {
    const target = await seedUser(t.sql, tenantId, { role: 'member' });
    const id = target.user.id as string;
    for (const res of [
      await t.http.get(BASE).set(as(member)),
      await t.http.post(BASE).set(as(member)).send({ email: 'nope@example.test', role: 'admin' }),
      await t.http.patch(`${BASE}/${id}`).set(as(member)).send({ role: 'admin' }),
      await t.http.delete(`${BASE}/${id}`).set(as(member)),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    const [row] = await t.sql`select role, is_active from users where id = ${id}`;
    expect(row).toEqual({ role: 'member', is_active: true });
    expect((await t.sql`select 1 from users where email = 'nope@example.test'`).length).toBe(0);
  });

  it('answers 404 for another workspace\'s user and for an unknown one, 422 for a malformed id', async () => {
    for (const id of [foreignUserId, MISSING]) {
      expect((await t.http.patch(`${BASE}/${id}`).set(as(admin)).send({ role: 'member' })).status).toBe(404);
      expect((await t.http.delete(`${BASE}/${id}`).set(as(admin))).status).toBe(404);
    }
    const [row] = await t.sql`select role, is_active from users where id = ${foreignUserId}`;
    expect(row).toEqual({ role: 'admin', is_active: true });
    expect((await t.http.delete(`${BASE}/not-a-uuid`).set(as(admin))).status).toBe(422);
    expect((await t.http.get(BASE).set(as(foreignAdmin))).body.data.map((u: { id: string }) => u.id)).toEqual([foreignUserId]);
  });

  it('answers 401 without a token, with a revoked one, and on the password change', async () => {
    const gone = await seedUser(t.sql, tenantId, { role: 'admin' });
    await t.deps.engine.users.revokeToken(gone.tokenId);
    for (const token of [undefined, gone.token, 'svc_at_unknown']) {
      const h = token ? as(token) : {};
      expect((await t.http.get(BASE).set(h)).status).toBe(401);
      expect((await t.http.post(BASE).set(h).send({ email: 'x@example.test', role: 'member' })).status).toBe(401);
      expect((await t.http.post('/api/v1/auth/password').set(h).send({ current_password: 'a', new_password: 'bbbbbbbb' })).status).toBe(401);
    }
  });

  it('refuses hostile bodies with 422 in the error envelope, never a 500', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 200; i++) deep = { a: deep };
    const target = await seedUser(t.sql, tenantId, { role: 'member' });
    const id = target.user.id as string;
    const bad: Array<[string, () => ReturnType<typeof t.http.post>]> = [
      ['role not in the list', () => t.http.post(BASE).set(as(admin)).send({ email: 'h1@example.test', role: 'owner' })],
      ['email of the wrong type', () => t.http.post(BASE).set(as(admin)).send({ email: 42, role: 'member' })],
      ['not an email', () => t.http.post(BASE).set(as(admin)).send({ email: 'nope', role: 'member' })],
      ['NUL byte in the name', () => t.http.post(BASE).set(as(admin)).send({ email: 'h2@example.test', role: 'member', name: 'a\u0000b' })],
      ['huge name', () => t.http.post(BASE).set(as(admin)).send({ email: 'h3@example.test', role: 'member', name: 'x'.repeat(100_000) })],
      ['a password chosen by the admin', () => t.http.post(BASE).set(as(admin)).send({ email: 'h4@example.test', role: 'member', password: 'elegida por mi' })],
      ['deeply nested', () => t.http.post(BASE).set(as(admin)).send({ email: 'h5@example.test', role: 'member', name: deep })],
      ['an array body', () => t.http.post(BASE).set(as(admin)).send([{ email: 'h6@example.test', role: 'member' }])],
      ['empty update', () => t.http.patch(`${BASE}/${id}`).set(as(admin)).send({})],
      ['unknown update field', () => t.http.patch(`${BASE}/${id}`).set(as(admin)).send({ is_active: true })],
      ['role of the wrong type', () => t.http.patch(`${BASE}/${id}`).set(as(admin)).send({ role: ['admin'] })],
      ['short new password', () => t.http.post('/api/v1/auth/password').set(as(member)).send({ current_password: 'x', new_password: 'short' })],
      ['huge new password', () => t.http.post('/api/v1/auth/password').set(as(member)).send({ current_password: 'x', new_password: 'y'.repeat(2000) })],
      ['NUL in the password', () => t.http.post('/api/v1/auth/password').set(as(member)).send({ current_password: 'x\u0000', new_password: 'yyyyyyyyy' })],
    ];
    for (const [label, call] of bad) {
      const res = await call();
      expect([label, res.status]).toEqual([label, 422]);
      expect(res.body.success).toBe(false);
      expect(typeof res.body.error.message).toBe('string');
    }
    const [row] = await t.sql`select role from users where id = ${id}`;
    expect(row!.role).toBe('member');
    expect((await t.sql`select 1 from users where email like 'h_@example.test'`).length).toBe(0);
  });

  it('answers 409 for an email already taken in any workspace, case-insensitively', async () => {
    const taken = await t.sql`select email from users where id = ${foreignUserId}`;
    const res = await t.http.post(BASE).set(as(admin)).send({ email: (taken[0]!.email as string).toUpperCase(), role: 'member' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toBe('Ya existe un usuario con ese email');
  });
});
