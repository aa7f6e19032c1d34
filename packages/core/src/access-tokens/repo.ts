import type { Queryable } from '../db/sql';

export interface AccessTokenPrincipalRow {
  token_id: string;
  user_id: string;
  tenant_id: string;
  role: 'admin' | 'member';
  email: string;
  expires_at: Date;
  revoked_at: Date | null;
  user_active: boolean;
  must_change_password: boolean;
}

/** The token and its user, by SHA-256 of the presented token. */
export async function findAccessTokenByHash(sql: Queryable, hash: Buffer): Promise<AccessTokenPrincipalRow | null> {
  const [row] = await sql<AccessTokenPrincipalRow[]>`
    select t.id as token_id, t.user_id, t.tenant_id, u.role, u.email, t.expires_at, t.revoked_at, u.is_active as user_active, u.must_change_password
    from access_tokens t join users u on u.id = t.user_id
    where t.token_hash = ${hash}`;
  return row ?? null;
}

/** A token that still grants access, with its user's current role. */
export interface LiveAccessTokenRow {
  token_id: string;
  role: 'admin' | 'member';
}

/**
 * Of `tokenIds`, the tokens that still grant access now: not revoked, not expired, their user
 * active. Long-lived reads (event streams) ask this for all their tokens at once, so that a logout,
 * a revocation, an expiry, a deactivation or a lost role ends them without waiting for the client.
 */
export async function findLiveAccessTokens(sql: Queryable, tokenIds: readonly string[]): Promise<LiveAccessTokenRow[]> {
  if (tokenIds.length === 0) return [];
  return sql<LiveAccessTokenRow[]>`
    select t.id as token_id, u.role
    from access_tokens t join users u on u.id = t.user_id
    where t.id = any(${tokenIds as string[]}::uuid[]) and t.revoked_at is null and t.expires_at > now() and u.is_active`;
}
