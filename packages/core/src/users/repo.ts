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
  must_change_password: boolean;
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
  u: { tenant_id: string; email: string; name: string | null; password_hash: string; role: UserRole; must_change_password?: boolean },
): Promise<UserRow> {
  const [row] = await sql<UserRow[]>`
    insert into users (tenant_id, email, name, password_hash, role, must_change_password)
    values (${u.tenant_id}, ${u.email}, ${u.name}, ${u.password_hash}, ${u.role}, ${u.must_change_password ?? false})
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

export async function findTenantUser(sql: Queryable, tenantId: string, id: string, lock = false): Promise<UserRow | null> {
  const [row] = lock
    ? await sql<UserRow[]>`select * from users where tenant_id = ${tenantId} and id = ${id} for update`
    : await sql<UserRow[]>`select * from users where tenant_id = ${tenantId} and id = ${id}`;
  return row ?? null;
}

/** A page of a tenant's users, oldest first (the order people were added). */
export async function listUserRows(
  sql: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: UserRow[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    sql<UserRow[]>`
      select * from users where tenant_id = ${tenantId}
      order by created_at, id
      limit ${page.limit} offset ${page.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from users where tenant_id = ${tenantId}`,
  ]);
  return { rows, total: count!.total };
}

/**
 * The ids of the tenant's active admins, locked: two admins demoting each other at once are
 * serialised here, so one of them always finds the other still an admin.
 */
export async function lockActiveAdmins(sql: Queryable, tenantId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from users where tenant_id = ${tenantId} and role = 'admin' and is_active order by id for update`;
  return rows.map((r) => r.id);
}

export async function updateUserFields(sql: Queryable, id: string, fields: { role?: UserRole; name?: string | null }): Promise<UserRow> {
  const [row] = await sql<UserRow[]>`
    update users set
      role = coalesce(${fields.role ?? null}, role),
      name = case when ${fields.name !== undefined} then ${fields.name ?? null} else name end,
      updated_at = now()
    where id = ${id} returning *`;
  return row!;
}

/** The user's own new password: the must-change flag goes, and every other token of the user is revoked. */
export async function replaceOwnPassword(sql: Queryable, id: string, passwordHash: string, keepTokenId: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`
    with u as (
      update users set password_hash = ${passwordHash}, must_change_password = false, updated_at = now()
      where id = ${id} and is_active returning *
    ), t as (
      update access_tokens set revoked_at = now()
      where user_id in (select id from u) and id <> ${keepTokenId} and revoked_at is null
    )
    select * from u`;
  return row ?? null;
}
