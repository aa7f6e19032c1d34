import * as passwords from '../src/security/password';
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '@svc/core';
import { toTenantResponse, toUserResponse } from '@svc/core/internals';
import {
  createTenant, createUser, deactivateUser, findAccessTokens, getTenant, hashPassword, issueAccessToken, listTenants,
  login, resolveTenant, resolveUser, revokeAccessToken, setPassword, sha256, updateTenant, verifyPassword,
} from '@svc/core/internals';
import { createTestContext, type TestContext } from '@svc/testing';

let t: TestContext;
beforeAll(async () => {
  t = await createTestContext();
});
afterAll(() => t.close());

async function fieldsOf(p: Promise<unknown>): Promise<string[]> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(ValidationError);
  return (err as ValidationError).issues.map((i) => i.field);
}

describe('password hashing', () => {
  it('hashes with scrypt and a random salt, and verifies only the right password', async () => {
    const a = await hashPassword('s3cret-password');
    const b = await hashPassword('s3cret-password');
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('s3cret-password');
    expect(await verifyPassword('s3cret-password', a)).toBe(true);
    expect(await verifyPassword('s3cret-passwore', a)).toBe(false);
    expect(await verifyPassword('s3cret-password', 'not-a-hash')).toBe(false);
  });
});

describe('tenants', () => {
  it('creates a tenant with the table defaults when only the name is given', async () => {
    const row = await createTenant(t.sql, { name: 'defaults-co' });
    expect(toTenantResponse(row)).toMatchObject({
      name: 'defaults-co', plan: 'standard', plan_features: ['api_keys', 'webhooks'], subscription_status: 'active',
      monthly_quota: 10000, quota_used: 0,
    });
    expect(toTenantResponse(row).quota_period).toMatch(/^\d{4}-\d{2}-01$/);
  });

  it('creates a tenant with features, quota and subscription state, and refuses a duplicate name with 409', async () => {
    const row = await createTenant(t.sql, { name: 'full-co', plan_features: ['webhooks'], monthly_quota: 5, subscription_status: 'trialing' });
    expect(row).toMatchObject({ plan_features: ['webhooks'], monthly_quota: 5, subscription_status: 'trialing' });
    const err = await createTenant(t.sql, { name: 'full-co' }).catch((e) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.status).toBe(409);
  });

  it('rejects unknown plan features, a negative quota, an unknown subscription state and a one-letter name', async () => {
    expect(await fieldsOf(createTenant(t.sql, { name: 'x' }))).toEqual(['body → name']);
    expect(await fieldsOf(createTenant(t.sql, { name: 'bad-co', plan_features: ['api_keys', 'teleport' as never] }))).toEqual(['body → plan_features → 1']);
    expect(await fieldsOf(createTenant(t.sql, { name: 'bad-co', monthly_quota: -1 }))).toEqual(['body → monthly_quota']);
    expect(await fieldsOf(createTenant(t.sql, { name: 'bad-co', subscription_status: 'frozen' as never }))).toEqual(['body → subscription_status']);
    expect(await resolveTenant(t.sql, 'bad-co').catch((e) => e)).toBeInstanceOf(NotFoundError);
  });

  it('changes only the fields given, and an empty feature list removes every feature', async () => {
    const row = await createTenant(t.sql, { name: 'change-co', monthly_quota: 100 });
    const changed = await updateTenant(t.sql, row.id, { plan_features: [], subscription_status: 'past_due' });
    expect(changed).toMatchObject({ name: 'change-co', monthly_quota: 100, plan_features: [], subscription_status: 'past_due' });
    const renamed = await updateTenant(t.sql, row.id, { name: 'changed-co', monthly_quota: 0 });
    expect(renamed).toMatchObject({ name: 'changed-co', monthly_quota: 0, plan_features: [], subscription_status: 'past_due' });
    expect((await getTenant(t.sql, row.id)).name).toBe('changed-co');
  });

  it('finds a tenant by id or by name, lists tenants, and answers an unknown one with NotFoundError', async () => {
    const row = await createTenant(t.sql, { name: 'lookup-co' });
    expect((await resolveTenant(t.sql, row.id)).name).toBe('lookup-co');
    expect((await resolveTenant(t.sql, 'lookup-co')).id).toBe(row.id);
    expect((await listTenants(t.sql)).map((r) => r.name)).toContain('lookup-co');
    await expect(getTenant(t.sql, '00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
    await expect(getTenant(t.sql, 'not-a-uuid')).rejects.toBeInstanceOf(NotFoundError);
    await expect(updateTenant(t.sql, '00000000-0000-4000-8000-000000000000', { plan: 'x' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refuses to rename a tenant to a name already taken', async () => {
    const a = await createTenant(t.sql, { name: 'taken-a' });
    await createTenant(t.sql, { name: 'taken-b' });
    await expect(updateTenant(t.sql, a.id, { name: 'taken-b' })).rejects.toBeInstanceOf(ConflictError);
  });
});

describe('users', () => {
  let tenantId: string;
  beforeAll(async () => {
    tenantId = (await createTenant(t.sql, { name: 'users-co' })).id;
  });

  it('creates a user with a scrypt hash of the password and shows it without the hash', async () => {
    const row = await createUser(t.sql, tenantId, { email: 'Someone@Example.test', password: 'longenough', role: 'member', name: 'Some One' });
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('longenough', row.password_hash)).toBe(true);
    const shown = toUserResponse(row);
    expect(shown).toEqual({
      id: row.id, email: 'Someone@Example.test', name: 'Some One', role: 'member', tenant_id: tenantId, is_active: true, must_change_password: false,
      created_at: row.created_at.toISOString(),
    });
    expect(JSON.stringify(shown)).not.toContain('scrypt');
  });

  it('refuses a second user with the same email in any letter case, even in another tenant', async () => {
    await createUser(t.sql, tenantId, { email: 'dup@example.test', password: 'longenough', role: 'admin' });
    const other = await createTenant(t.sql, { name: 'users-co-2' });
    const err = await createUser(t.sql, other.id, { email: 'DUP@example.TEST', password: 'longenough', role: 'admin' }).catch((e) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.message).toBe('Ya existe un usuario con ese email');
  });

  it('validates email, password length (at least 8), role and unknown fields', async () => {
    expect(await fieldsOf(createUser(t.sql, tenantId, { email: 'short@example.test', password: '1234567', role: 'admin' }))).toEqual(['body → password']);
    expect(await fieldsOf(createUser(t.sql, tenantId, { email: 'nope', password: 'longenough', role: 'admin' }))).toEqual(['body → email']);
    expect(await fieldsOf(createUser(t.sql, tenantId, { email: 'r@example.test', password: 'longenough', role: 'owner' as never }))).toEqual(['body → role']);
    expect(await fieldsOf(createUser(t.sql, tenantId, { email: 'r@example.test', password: 'longenough', role: 'admin', extra: 1 } as never))).toEqual(['body → extra']);
    const [{ n }] = await t.sql`select count(*)::int as n from users where email in ('short@example.test', 'r@example.test')`;
    expect(n).toBe(0);
  });

  it('refuses a common password in any letter case, on creation and on a new password, and stores nothing', async () => {
    const refusal = async (p: Promise<unknown>) => {
      const err = await p.then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      return (err as ValidationError).issues.map((i) => [i.field, i.message, i.type]);
    };
    const common = ['body → password', 'es una contraseña demasiado común; elige otra', 'common_password'];
    for (const password of ['12345678', 'Password1', 'QWERTY123', 'iloveyou']) {
      expect(await refusal(createUser(t.sql, tenantId, { email: 'common@example.test', password, role: 'admin' }))).toEqual([common]);
    }
    const [{ n }] = await t.sql`select count(*)::int as n from users where email = 'common@example.test'`;
    expect(n).toBe(0);
    const user = await createUser(t.sql, tenantId, { email: 'uncommon@example.test', password: 'first-password', role: 'member' });
    expect(await refusal(setPassword(t.sql, user.id, 'Sunshine'))).toEqual([common]);
    expect((await login(t.sql, 'uncommon@example.test', 'first-password', 3600)).user.id).toBe(user.id);
  });

  it('answers a user of an unknown tenant with NotFoundError', async () => {
    await expect(
      createUser(t.sql, '00000000-0000-4000-8000-000000000000', { email: 'orphan@example.test', password: 'longenough', role: 'admin' }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('changes a password: the old one stops working and the new one logs in', async () => {
    const user = await createUser(t.sql, tenantId, { email: 'rotate@example.test', password: 'first-password', role: 'member' });
    await expect(setPassword(t.sql, user.id, 'short')).rejects.toBeInstanceOf(ValidationError);
    await setPassword(t.sql, user.id, 'second-password');
    await expect(login(t.sql, 'rotate@example.test', 'first-password', 3600)).rejects.toBeInstanceOf(UnauthorizedError);
    expect((await login(t.sql, 'rotate@example.test', 'second-password', 3600)).user.id).toBe(user.id);
  });

  it('finds a user by id or by email in any letter case', async () => {
    const user = await createUser(t.sql, tenantId, { email: 'find.me@example.test', password: 'longenough', role: 'member' });
    expect((await resolveUser(t.sql, 'FIND.ME@example.test')).id).toBe(user.id);
    expect((await resolveUser(t.sql, user.id)).email).toBe('find.me@example.test');
    await expect(resolveUser(t.sql, 'missing@example.test')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('access tokens and login', () => {
  let tenantId: string;
  let userId: string;
  beforeAll(async () => {
    tenantId = (await createTenant(t.sql, { name: 'tokens-co' })).id;
    userId = (await createUser(t.sql, tenantId, { email: 'tok@example.test', password: 'the-password', role: 'admin' })).id;
  });
  afterEach(() => jest.restoreAllMocks());

  it('issues a token shown once: only its SHA-256 and its 12-character prefix are stored', async () => {
    const issued = await issueAccessToken(t.sql, userId, 600);
    expect(issued.token).toMatch(/^svc_at_[A-Za-z0-9_-]{43}$/);
    expect(issued.prefix).toBe(issued.token.slice(0, 12));
    const [row] = await t.sql`select * from access_tokens where id = ${issued.id}`;
    expect((row!.token_hash as Buffer).equals(sha256(issued.token))).toBe(true);
    expect(JSON.stringify(row)).not.toContain(issued.token);
    const ttl = (new Date(issued.expires_at).getTime() - (row!.created_at as Date).getTime()) / 1000;
    expect(Math.round(ttl)).toBe(600);
    expect(issued).toMatchObject({ user_id: userId, tenant_id: tenantId });
  });

  it('refuses a lifetime outside 60 seconds .. 90 days, an unknown user and a deactivated user', async () => {
    await expect(issueAccessToken(t.sql, userId, 59)).rejects.toBeInstanceOf(ValidationError);
    await expect(issueAccessToken(t.sql, userId, 90 * 86400 + 1)).rejects.toBeInstanceOf(ValidationError);
    await expect(issueAccessToken(t.sql, userId, 1.5)).rejects.toBeInstanceOf(ValidationError);
    await expect(issueAccessToken(t.sql, '00000000-0000-4000-8000-000000000000', 600)).rejects.toBeInstanceOf(NotFoundError);
    const gone = await createUser(t.sql, tenantId, { email: 'gone-tok@example.test', password: 'the-password', role: 'admin' });
    await deactivateUser(t.sql, gone.id);
    await expect(issueAccessToken(t.sql, gone.id, 600)).rejects.toBeInstanceOf(ValidationError);
  });

  it('revokes a token once: true the first time, false after, NotFoundError for an unknown id', async () => {
    const issued = await issueAccessToken(t.sql, userId, 600);
    expect(await revokeAccessToken(t.sql, issued.id)).toBe(true);
    expect(await revokeAccessToken(t.sql, issued.id)).toBe(false);
    const [row] = await t.sql`select revoked_at from access_tokens where id = ${issued.id}`;
    expect(row!.revoked_at).toBeInstanceOf(Date);
    await expect(revokeAccessToken(t.sql, '00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('finds tokens by id, by whole value and by prefix', async () => {
    const issued = await issueAccessToken(t.sql, userId, 600);
    expect((await findAccessTokens(t.sql, issued.id)).map((r) => r.id)).toEqual([issued.id]);
    expect((await findAccessTokens(t.sql, issued.token)).map((r) => r.id)).toEqual([issued.id]);
    expect((await findAccessTokens(t.sql, issued.prefix)).map((r) => r.id)).toContain(issued.id);
    expect(await findAccessTokens(t.sql, 'svc_at_' + 'z'.repeat(43))).toEqual([]);
  });

  it('deactivating a user revokes its live tokens', async () => {
    const user = await createUser(t.sql, tenantId, { email: 'deact@example.test', password: 'the-password', role: 'member' });
    const issued = await issueAccessToken(t.sql, user.id, 600);
    const row = await deactivateUser(t.sql, user.id);
    expect(row.is_active).toBe(false);
    const [tok] = await t.sql`select revoked_at from access_tokens where id = ${issued.id}`;
    expect(tok!.revoked_at).toBeInstanceOf(Date);
  });

  it('logs in with the right password in any email letter case and issues a token of the given lifetime', async () => {
    const res = await login(t.sql, 'TOK@example.test', 'the-password', 120);
    expect(res.token_type).toBe('Bearer');
    expect(res.user).toEqual({ id: userId, email: 'tok@example.test', name: null, role: 'admin', tenant_id: tenantId, must_change_password: false });
    const [row] = await t.sql`select extract(epoch from expires_at - created_at)::float8 as ttl from access_tokens where token_hash = ${sha256(res.access_token)}`;
    expect(Math.round(row!.ttl as number)).toBe(120);
  });

  it('answers unknown email, wrong password and inactive user with the same UnauthorizedError', async () => {
    const inactive = await createUser(t.sql, tenantId, { email: 'inactive@example.test', password: 'the-password', role: 'admin' });
    await deactivateUser(t.sql, inactive.id);
    const errors = await Promise.all([
      login(t.sql, 'nobody@example.test', 'the-password', 600).catch((e) => e),
      login(t.sql, 'tok@example.test', 'wrong-password', 600).catch((e) => e),
      login(t.sql, 'inactive@example.test', 'the-password', 600).catch((e) => e),
    ]);
    for (const err of errors) {
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err.message).toBe('Credenciales inválidas');
    }
    const [{ n }] = await t.sql`select count(*)::int as n from access_tokens where user_id = ${inactive.id}`;
    expect(n).toBe(0);
  });

  it('runs a full scrypt verification for an unknown email, as for a known one', async () => {
    const spy = jest.spyOn(passwords, 'verifyPassword');
    await login(t.sql, 'nobody-at-all@example.test', 'whatever', 600).catch(() => undefined);
    await login(t.sql, 'tok@example.test', 'wrong', 600).catch(() => undefined);
    expect(spy).toHaveBeenCalledTimes(2);
    const [unknownCall, knownCall] = spy.mock.calls;
    // both stored hashes carry the same scrypt parameters, so both verifications cost the same
    const params = (stored: string) => stored.split('$').slice(0, 4).join('$');
    expect(params(unknownCall![1])).toBe('scrypt$32768$8$1');
    expect(params(unknownCall![1])).toBe(params(knownCall![1]));
    expect(await spy.mock.results[0]!.value).toBe(false);
  });
});
