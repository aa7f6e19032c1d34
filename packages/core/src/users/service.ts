import type { Queryable } from '../db/sql';
import { ConflictError, NotFoundError, ValidationError } from '../errors';
import { isUuid } from '../ids';
import { isCommonPassword } from '../security/common-passwords';
import { hashPassword } from '../security/password';
import { validate } from '../validation/validate';
import { deactivateUserRow, findUserByEmail, findUserById, insertUser, updateUserPasswordHash, type UserRow } from './repo';
import { PasswordBody, UserCreateBody, type UserCreateInput, type UserRole } from './schemas';
import { es } from '../messages/server-messages';

export interface UserResponseBody {
  id: string;
  email: string;
  name: string | null;
  role: UserRole;
  tenant_id: string;
  is_active: boolean;
  must_change_password: boolean;
  created_at: string;
}

export function toUserResponse(row: UserRow): UserResponseBody {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    tenant_id: row.tenant_id,
    is_active: row.is_active,
    must_change_password: row.must_change_password,
    created_at: row.created_at.toISOString(),
  };
}

const EMAIL_TAKEN = es.users.emailTaken;

/**
 * Refuses a password on the common list (security/common-passwords.ts) with a 422 on `field`:
 * the length rule alone lets `12345678` through, which an attacker tries first. Every place a
 * password is chosen calls it after the schema's checks.
 */
export function refuseCommonPassword(password: string, field: Array<string | number>): void {
  if (isCommonPassword(password)) throw ValidationError.single(field, es.users.commonPassword, 'common_password');
}

/** A user of `tenantId`; the password is hashed with scrypt and never stored or logged in clear. */
export async function createUser(sql: Queryable, tenantId: string, input: UserCreateInput): Promise<UserRow> {
  const body = validate(UserCreateBody, { ...input }, 'body');
  refuseCommonPassword(body.password, ['body', 'password']);
  const email = body.email.trim();
  // checked first so the (slow) hash is not computed for a duplicate; the unique index still decides
  if (await findUserByEmail(sql, email)) throw new ConflictError(EMAIL_TAKEN);
  const password_hash = await hashPassword(body.password);
  try {
    return await insertUser(sql, { tenant_id: tenantId, email, name: body.name ?? null, password_hash, role: body.role });
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string };
    if (e.code === '23505' && e.constraint_name === 'users_email_key') throw new ConflictError(EMAIL_TAKEN);
    if (e.code === '23503') throw new NotFoundError(es.tenants.notFound);
    throw err;
  }
}

export async function getUser(sql: Queryable, id: string): Promise<UserRow> {
  const row = isUuid(id) ? await findUserById(sql, id) : null;
  if (!row) throw new NotFoundError(es.users.notFound);
  return row;
}

/** A user by id or by email (operators type either); unknown → NotFoundError. */
export async function resolveUser(sql: Queryable, idOrEmail: string): Promise<UserRow> {
  const row = isUuid(idOrEmail) ? await findUserById(sql, idOrEmail) : await findUserByEmail(sql, idOrEmail);
  if (!row) throw new NotFoundError(es.users.notFoundNamed(idOrEmail));
  return row;
}

export async function setPassword(sql: Queryable, userId: string, password: string): Promise<UserRow> {
  const body = validate(PasswordBody, { password }, 'body');
  refuseCommonPassword(body.password, ['body', 'password']);
  const row = isUuid(userId) ? await updateUserPasswordHash(sql, userId, await hashPassword(body.password)) : null;
  if (!row) throw new NotFoundError(es.users.notFound);
  return row;
}

/**
 * Deactivates a user and revokes every access token it holds, so that a later reactivation
 * (by SQL or a future command) does not bring old tokens back to life.
 */
export async function deactivateUser(sql: Queryable, userId: string): Promise<UserRow> {
  const row = isUuid(userId) ? await deactivateUserRow(sql, userId) : null;
  if (!row) throw new NotFoundError(es.users.notFound);
  return row;
}
