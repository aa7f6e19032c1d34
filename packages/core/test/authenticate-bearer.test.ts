import { ForbiddenError, bearerToken, requireAdminRole } from '@svc/core';
import { authenticateAccessToken, authenticateBearer, deactivateUser, revokeAccessToken } from '@svc/core/internals';
import { databaseSuite, seedTenant, seedUser, refusal } from '@svc/testing';

/** The one access-token check behind the API's Bearer guard and the queues board. */
const db = databaseSuite();

describe('authenticateBearer', () => {
  it('answers the active user behind a valid token, with the tenant of the token', async () => {
    const a = await seedTenant(db.sql);
    const b = await seedTenant(db.sql);
    const ofA = await seedUser(db.sql, a.id, { role: 'member' });
    const ofB = await seedUser(db.sql, b.id, { role: 'admin' });
    expect(await authenticateBearer(db.sql, `Bearer ${ofA.token}`)).toEqual({
      kind: 'user', userId: ofA.user.id, tenantId: a.id, role: 'member', tokenId: ofA.tokenId, email: ofA.user.email, mustChangePassword: false,
    });
    // the scheme is case-insensitive; the tenant is always the token's own
    const principal = await authenticateBearer(db.sql, `bearer ${ofB.token}`);
    expect(principal).toMatchObject({ tenantId: b.id, userId: ofB.user.id, role: 'admin' });
  });

  it('refuses a missing, malformed or unknown token with 401 Credenciales inválidas', async () => {
    const tenant = await seedTenant(db.sql);
    const { token } = await seedUser(db.sql, tenant.id);
    for (const header of [undefined, '', token, `Basic ${token}`, `Bearer ${token} extra`, 'Bearer svc_at_unknown']) {
      expect(await refusal(authenticateBearer(db.sql, header))).toEqual({ status: 401, message: 'Credenciales inválidas' });
    }
  });

  it('refuses an expired token with 401 Token de acceso expirado', async () => {
    const tenant = await seedTenant(db.sql);
    const { token } = await seedUser(db.sql, tenant.id, { tokenExpiresAt: new Date(Date.now() - 1000) });
    expect(await refusal(authenticateBearer(db.sql, `Bearer ${token}`))).toEqual({ status: 401, message: 'Token de acceso expirado' });
  });

  it('refuses a revoked token and a deactivated user\'s token like an unknown one', async () => {
    const tenant = await seedTenant(db.sql);
    const revoked = await seedUser(db.sql, tenant.id);
    await revokeAccessToken(db.sql, revoked.tokenId);
    expect(await refusal(authenticateBearer(db.sql, `Bearer ${revoked.token}`))).toEqual({ status: 401, message: 'Credenciales inválidas' });
    const gone = await seedUser(db.sql, tenant.id);
    expect((await authenticateAccessToken(db.sql, gone.token)).userId).toBe(gone.user.id);
    await deactivateUser(db.sql, gone.user.id);
    expect(await refusal(authenticateAccessToken(db.sql, gone.token))).toEqual({ status: 401, message: 'Credenciales inválidas' });
  });
});

describe('bearerToken and requireAdminRole', () => {
  it('takes the token only out of a well-formed Bearer header', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('BEARER   abc')).toBe('abc');
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Token abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('lets an admin through and refuses a member or nobody with 403', () => {
    expect(() => requireAdminRole({ role: 'admin' })).not.toThrow();
    for (const who of [{ role: 'member' as const }, undefined]) {
      let err: unknown;
      try {
        requireAdminRole(who);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ForbiddenError);
      expect((err as ForbiddenError).message).toBe('Se requiere el rol de administrador del workspace');
    }
  });
});
