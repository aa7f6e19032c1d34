import { ForbiddenError, UnauthorizedError, findAccessTokenByHash, sha256 } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { Guard } from '../http/guard';

/** `Authorization: Bearer <access token>` of an active user; missing, unknown, revoked or expired → 401. */
export function authenticateUser(deps: ApiDeps): Guard {
  return async (ctx) => {
    const match = /^Bearer\s+(\S+)$/i.exec(ctx.get('Authorization'));
    if (!match) throw new UnauthorizedError();
    const row = await findAccessTokenByHash(deps.sql, sha256(match[1]!));
    if (!row || row.revoked_at || !row.user_active) throw new UnauthorizedError();
    if (row.expires_at.getTime() <= Date.now()) throw new UnauthorizedError('Token de acceso expirado');
    ctx.state.user = {
      kind: 'user',
      userId: row.user_id,
      tenantId: row.tenant_id,
      role: row.role,
      tokenId: row.token_id,
      email: row.email,
    };
  };
}

/** Workspace admin role (else 403). */
export function requireAdmin(): Guard {
  return (ctx) => {
    if (ctx.state.user?.role !== 'admin') throw new ForbiddenError('Se requiere el rol de administrador del workspace');
  };
}
