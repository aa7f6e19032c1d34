import type { Sql } from '../db/sql';
import { recordAudit } from '../audit/audit';
import { login, revokeAccessToken, type LoginResult } from './service';

/** Where a sign-in or sign-out came from, for its audit row. */
export interface RequestOrigin {
  requestId?: string | null;
  ip?: string | null;
}

/**
 * `POST /auth/login`: a new access token for a valid email and password, and its audit row.
 * The password is checked before anything is written (and outside any transaction: hashing holds
 * no connection); a refusal writes nothing and answers 401 whatever the reason.
 */
export async function signIn(sql: Sql, credentials: { email: string; password: string }, ttlSeconds: number, origin: RequestOrigin = {}): Promise<LoginResult> {
  const result = await login(sql, credentials.email, credentials.password, ttlSeconds);
  await recordAudit(sql, {
    tenantId: result.user.tenant_id,
    actorType: 'user',
    actorId: result.user.id,
    action: 'login',
    source: 'api',
    resourceType: 'user',
    resourceId: result.user.id,
    requestId: origin.requestId ?? null,
    ip: origin.ip ?? null,
  });
  return result;
}

/** `POST /auth/logout`: the token of the request is revoked, with its audit row, in one transaction. */
export async function signOut(sql: Sql, session: { tenantId: string; userId: string; tokenId: string }, origin: RequestOrigin = {}): Promise<void> {
  await sql.begin(async (tx) => {
    await revokeAccessToken(tx, session.tokenId);
    await recordAudit(tx, {
      tenantId: session.tenantId,
      actorType: 'user',
      actorId: session.userId,
      action: 'logout',
      source: 'api',
      resourceType: 'access_token',
      resourceId: session.tokenId,
      requestId: origin.requestId ?? null,
      ip: origin.ip ?? null,
    });
  });
}
