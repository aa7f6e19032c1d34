import type { Queryable } from '../db/sql';
import type { UserRole } from './schemas';

export interface UserRow {
  id: string;
  tenant_id: string;
  email: string;
  name: string | null;
  password_hash: string;
  role: UserRole;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Emails are unique case-insensitively across all tenants (a login names no tenant). */
export async function findUserByEmail(sql: Queryable, email: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`select * from users where lower(email) = lower(${email.trim()})`;
  return row ?? null;
}

export async function findUserById(sql: Queryable, id: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`select * from users where id = ${id}`;
  return row ?? null;
}

export async function insertUser(
  sql: Queryable,
  u: { tenant_id: string; email: string; name: string | null; password_hash: string; role: UserRole },
): Promise<UserRow> {
  const [row] = await sql<UserRow[]>`
    insert into users (tenant_id, email, name, password_hash, role)
    values (${u.tenant_id}, ${u.email}, ${u.name}, ${u.password_hash}, ${u.role})
    returning *`;
  return row!;
}

export async function updateUserPasswordHash(sql: Queryable, id: string, passwordHash: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`
    update users set password_hash = ${passwordHash}, updated_at = now() where id = ${id} returning *`;
  return row ?? null;
}

/** Deactivates the user and revokes its live access tokens, in one statement. */
export async function deactivateUserRow(sql: Queryable, id: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`
    with u as (
      update users set is_active = false, updated_at = case when is_active then now() else updated_at end
      where id = ${id} returning *
    ), t as (
      update access_tokens set revoked_at = now() where user_id in (select id from u) and revoked_at is null
    )
    select * from u`;
  return row ?? null;
}

export async function listUsersOfTenant(sql: Queryable, tenantId: string): Promise<UserRow[]> {
  return sql<UserRow[]>`select * from users where tenant_id = ${tenantId} order by created_at, email`;
}
