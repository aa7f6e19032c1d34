import type { Queryable } from '../db/sql';
import { ForbiddenError, UnauthorizedError } from '../errors';
import { sha256 } from '../security/hash';
import type { UserRole } from '../users/schemas';
import { findAccessTokenByHash } from './repo';
import { es } from '../messages/server-messages';

/**
 * The one check of a user access token, for every way one is presented (the API's Bearer guard,
 * the queues board's header and the session exchange behind its cookie): docs/decisions/one-place-per-rule.md.
 */

/** Who presented a valid access token. */
export interface AccessTokenPrincipal {
  kind: 'user';
  userId: string;
  tenantId: string;
  role: UserRole;
  tokenId: string;
  email: string;
  /** Signed in with a one-time password not yet replaced: only the password change is open. */
  mustChangePassword: boolean;
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other shape. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1];
}

/**
 * The active user behind an access token. Missing, unknown or revoked token, or deactivated user
 * → 401 `Credenciales inválidas`; expired → 401 `Token de acceso expirado`.
 */
export async function authenticateAccessToken(sql: Queryable, token: string | undefined): Promise<AccessTokenPrincipal> {
  if (!token) throw new UnauthorizedError();
  const row = await findAccessTokenByHash(sql, sha256(token));
  if (!row || row.revoked_at || !row.user_active) throw new UnauthorizedError();
  if (row.expires_at.getTime() <= Date.now()) throw new UnauthorizedError(es.auth.accessTokenExpired);
  return { kind: 'user', userId: row.user_id, tenantId: row.tenant_id, role: row.role, tokenId: row.token_id, email: row.email, mustChangePassword: row.must_change_password };
}

/** `Authorization: Bearer <access token>` → its user (errors as authenticateAccessToken). */
export function authenticateBearer(sql: Queryable, authorization: string | undefined): Promise<AccessTokenPrincipal> {
  return authenticateAccessToken(sql, bearerToken(authorization));
}

/** Workspace administration needs the admin role: else 403. */
export function requireAdminRole(principal: Pick<AccessTokenPrincipal, 'role'> | undefined): void {
  if (principal?.role !== 'admin') throw new ForbiddenError(es.auth.adminRequired);
}

/** Everything but the session and the password change waits until a one-time password is replaced: else 403. */
export function requirePasswordChanged(principal: Pick<AccessTokenPrincipal, 'mustChangePassword'> | undefined): void {
  if (principal?.mustChangePassword) throw new ForbiddenError(es.users.mustChangePassword, { reason: 'must_change_password' });
}
