import type { Sql } from '../db/sql';
import { recordAudit } from '../audit/audit';
import { UnauthorizedError } from '../errors';
import type { Logger } from '../logger';
import { findUserByEmail } from '../users/repo';
import { login, revokeAccessToken, type LoginResult } from './service';

/** Where a sign-in or sign-out came from, for its audit row. */
export interface RequestOrigin {
  requestId?: string | null;
  ip?: string | null;
  /** Where a failed sign-in for an e-mail no workspace has is logged (it has no audit log to go to). */
  logger?: Logger;
}

/**
 * `POST /auth/login`: a new access token for a valid email and password, and its audit row.
 * The password is checked before anything is written (and outside any transaction: hashing holds
 * no connection); a refusal writes nothing and answers 401 whatever the reason.
 */
export async function signIn(sql: Sql, credentials: { email: string; password: string }, ttlSeconds: number, origin: RequestOrigin = {}): Promise<LoginResult> {
  let result: LoginResult;
  try {
    result = await login(sql, credentials.email, credentials.password, ttlSeconds);
  } catch (err) {
    if (err instanceof UnauthorizedError) await recordFailedSignIn(sql, credentials.email, origin);
    throw err;
  }
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

/**
 * A refused sign-in goes to the audit log of the account's workspace as `login_failed`, with the
 * e-mail and why (never the password); an e-mail no workspace has goes to the application log.
 */
async function recordFailedSignIn(sql: Sql, email: string, origin: RequestOrigin): Promise<void> {
  const user = await findUserByEmail(sql, email);
  if (!user) {
    origin.logger?.warn('sign-in failed', { reason: 'unknown_email', ip: origin.ip ?? null, request_id: origin.requestId ?? null });
    return;
  }
  await recordAudit(sql, {
    tenantId: user.tenant_id,
    actorType: 'user',
    action: 'login_failed',
    source: 'api',
    resourceType: 'user',
    resourceId: user.id,
    details: { email: user.email, reason: user.is_active ? 'wrong_password' : 'inactive_user' },
    requestId: origin.requestId ?? null,
    ip: origin.ip ?? null,
  });
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
