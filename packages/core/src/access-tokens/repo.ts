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
}

/** The token and its user, by SHA-256 of the presented token. */
export async function findAccessTokenByHash(sql: Queryable, hash: Buffer): Promise<AccessTokenPrincipalRow | null> {
  const [row] = await sql<AccessTokenPrincipalRow[]>`
    select t.id as token_id, t.user_id, t.tenant_id, u.role, u.email, t.expires_at, t.revoked_at, u.is_active as user_active
    from access_tokens t join users u on u.id = t.user_id
    where t.token_hash = ${hash}`;
  return row ?? null;
}
