import type { Queryable } from '../db/sql';
import { NotFoundError, UnauthorizedError, ValidationError } from '../errors';
import { isUuid } from '../ids';
import { sha256 } from '../security/hash';
import { verifyPassword } from '../security/password';
import { ACCESS_TOKEN_PREFIX, DISPLAY_PREFIX_LENGTH, issueSecret } from '../security/secrets';
import { findUserByEmail, findUserById, type UserRow } from '../users/repo';
import type { UserRole } from '../users/schemas';
import { es } from '../messages/server-messages';

/**
 * User access tokens: `svc_at_` + 256 random bits, shown once; only SHA-256 of the value and its
 * first 12 characters are stored. The Bearer middleware of the API looks them up by hash.
 */

export const MIN_ACCESS_TOKEN_TTL_SECONDS = 60;
export const MAX_ACCESS_TOKEN_TTL_SECONDS = 90 * 24 * 3600;

export interface AccessTokenRow {
  id: string;
  tenant_id: string;
  user_id: string;
  prefix: string;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
}

export interface IssuedAccessToken {
  /** The full token: shown once, never stored. */
  token: string;
  id: string;
  prefix: string;
  expires_at: string;
  user_id: string;
  tenant_id: string;
}

export interface AccessTokenResponseBody {
  id: string;
  prefix: string;
  user_id: string;
  tenant_id: string;
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export function toAccessTokenResponse(row: AccessTokenRow): AccessTokenResponseBody {
  return {
    id: row.id,
    prefix: row.prefix,
    user_id: row.user_id,
    tenant_id: row.tenant_id,
    expires_at: row.expires_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

function checkTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < MIN_ACCESS_TOKEN_TTL_SECONDS || ttlSeconds > MAX_ACCESS_TOKEN_TTL_SECONDS) {
    throw ValidationError.single(
      ['ttl'],
      es.auth.ttlOutOfRange(MIN_ACCESS_TOKEN_TTL_SECONDS, MAX_ACCESS_TOKEN_TTL_SECONDS),
      'range',
    );
  }
}

async function insertToken(sql: Queryable, user: UserRow, ttlSeconds: number): Promise<IssuedAccessToken> {
  const secret = issueSecret(ACCESS_TOKEN_PREFIX);
  const [row] = await sql<{ id: string; expires_at: Date }[]>`
    insert into access_tokens (tenant_id, user_id, token_hash, prefix, expires_at)
    values (${user.tenant_id}, ${user.id}, ${secret.hash}, ${secret.prefix}, now() + make_interval(secs => ${ttlSeconds}))
    returning id, expires_at`;
  return {
    token: secret.value,
    id: row!.id,
    prefix: secret.prefix,
    expires_at: row!.expires_at.toISOString(),
    user_id: user.id,
    tenant_id: user.tenant_id,
  };
}

/** Issues a token for an active user, valid for `ttlSeconds`. */
export async function issueAccessToken(sql: Queryable, userId: string, ttlSeconds: number): Promise<IssuedAccessToken> {
  checkTtl(ttlSeconds);
  const user = isUuid(userId) ? await findUserById(sql, userId) : null;
  if (!user) throw new NotFoundError(es.users.notFound);
  if (!user.is_active) throw new ValidationError([{ field: 'user', message: es.users.inactive, loc: ['user'], type: 'inactive' }]);
  return insertToken(sql, user, ttlSeconds);
}

/** Revokes a token; true when this call revoked it, false when it already was revoked. */
export async function revokeAccessToken(sql: Queryable, tokenId: string): Promise<boolean> {
  if (!isUuid(tokenId)) throw new NotFoundError(es.auth.accessTokenNotFound);
  const [row] = await sql<{ was_revoked: boolean }[]>`
    update access_tokens t set revoked_at = coalesce(t.revoked_at, now())
    from (select id, revoked_at is not null as was_revoked from access_tokens where id = ${tokenId} for update) old
    where t.id = old.id
    returning old.was_revoked`;
  if (!row) throw new NotFoundError(es.auth.accessTokenNotFound);
  return !row.was_revoked;
}

/**
 * Tokens an operator may mean by `ref`: an id, a whole token, or its 12-character prefix (which
 * can match several tokens: the caller decides what an ambiguous prefix means).
 */
export async function findAccessTokens(sql: Queryable, ref: string): Promise<AccessTokenRow[]> {
  const cols = sql`id, tenant_id, user_id, prefix, expires_at, revoked_at, last_used_at, created_at`;
  if (isUuid(ref as unknown)) return sql<AccessTokenRow[]>`select ${cols} from access_tokens where id = ${ref}`;
  if (ref.startsWith(ACCESS_TOKEN_PREFIX) && ref.length > DISPLAY_PREFIX_LENGTH) {
    return sql<AccessTokenRow[]>`select ${cols} from access_tokens where token_hash = ${sha256(ref)}`;
  }
  return sql<AccessTokenRow[]>`select ${cols} from access_tokens where prefix = ${ref} order by created_at`;
}

export interface LoginResult {
  access_token: string;
  token_type: 'Bearer';
  expires_at: string;
  user: { id: string; email: string; name: string | null; role: UserRole; tenant_id: string; must_change_password: boolean };
}

/**
 * A password hash of a random password, with the same parameters as real ones: an unknown email
 * is verified against it, so the answer takes as long as for a known email with a wrong password.
 */
const DUMMY_PASSWORD_HASH = 'scrypt$32768$8$1$lorsIHhEgJy6ZlLoZOZbBA$F4pxmn-HtOYznJdB4OtZWnaIQ_AdY_05pTxUYuB2Y1M';

/**
 * Email + password → a new access token. Unknown email, wrong password and inactive user all
 * answer the same 401 `Credenciales inválidas`, after the same scrypt work.
 */
export async function login(sql: Queryable, email: string, password: string, ttlSeconds: number): Promise<LoginResult> {
  checkTtl(ttlSeconds);
  const user = await findUserByEmail(sql, email);
  // a missing user or an unusable stored hash still costs one full scrypt verification
  const usable = !!user && user.password_hash.split('$').length === 6;
  const matches = (await verifyPassword(password, usable ? user.password_hash : DUMMY_PASSWORD_HASH)) && usable;
  if (!user || !matches || !user.is_active) throw new UnauthorizedError();
  const issued = await insertToken(sql, user, ttlSeconds);
  return {
    access_token: issued.token,
    token_type: 'Bearer',
    expires_at: issued.expires_at,
    user: {
      id: user.id, email: user.email, name: user.name, role: user.role, tenant_id: user.tenant_id,
      must_change_password: user.must_change_password,
    },
  };
}

export interface SessionRow {
  user: UserRow;
  token: AccessTokenRow;
}

/** The user and token behind an authenticated request (for `GET /auth/me`). */
export async function getSession(sql: Queryable, tokenId: string): Promise<SessionRow> {
  const [token] = await sql<AccessTokenRow[]>`
    select id, tenant_id, user_id, prefix, expires_at, revoked_at, last_used_at, created_at
    from access_tokens where id = ${tokenId}`;
  const user = token ? await findUserById(sql, token.user_id) : null;
  if (!token || !user) throw new UnauthorizedError();
  return { user, token };
}
