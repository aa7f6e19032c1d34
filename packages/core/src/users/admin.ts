import type { Queryable, Sql } from '../db/sql';
import { recordAudit } from '../audit/audit';
import type { AuditActor } from '../audit/catalog-changes';
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '../errors';
import { isUuid } from '../ids';
import { randomToken } from '../security/hash';
import { hashPassword, verifyPassword } from '../security/password';
import { validate } from '../validation/validate';
import { pageMeta, type PageMeta } from '../validation/formats';
import { es } from '../messages/server-messages';
import {
  deactivateUserRow, findTenantUser, findUserByEmail, findUserById, insertUser, listUserRows, lockActiveAdmins, replaceOwnPassword,
  updateUserFields, type UserRow,
} from './repo';
import { PasswordChangeBody, UserUpdateBody, WorkspaceUserCreateBody } from './schemas';
import { refuseCommonPassword, toUserResponse, type UserResponseBody } from './service';

/**
 * A workspace's people as its admins manage them (the API's /settings/users): every change is
 * audited in its transaction; another workspace's user is 404, as if it did not exist.
 * docs/decisions/users-and-access-tokens.md.
 */

/** 18 random bytes: 24 URL-safe characters, well past the password policy's minimum. */
function oneTimePassword(): string {
  return randomToken(18);
}

function auditOf(actor: AuditActor, tenantId: string, action: string, user: UserRow, details: Record<string, unknown> = {}) {
  return { ...actor, tenantId, action, resourceType: 'user', resourceId: user.id, details: { email: user.email, ...details } };
}

async function tenantUser(sql: Queryable, tenantId: string, id: string, lock = false): Promise<UserRow> {
  const row = isUuid(id) ? await findTenantUser(sql, tenantId, id, lock) : null;
  if (!row) throw new NotFoundError(es.users.notFound);
  return row;
}

export async function listWorkspaceUsers(
  sql: Sql,
  tenantId: string,
  query: { page: number; limit: number },
): Promise<{ data: UserResponseBody[]; meta: PageMeta }> {
  const { rows, total } = await listUserRows(sql, tenantId, { limit: query.limit, offset: (query.page - 1) * query.limit });
  return { data: rows.map(toUserResponse), meta: pageMeta(query.page, query.limit, total) };
}

/** A new user with a generated password, returned this once; they must replace it at their first sign-in. */
export async function createWorkspaceUser(
  sql: Sql,
  actor: AuditActor,
  tenantId: string,
  input: unknown,
): Promise<UserResponseBody & { one_time_password: string }> {
  const body = validate(WorkspaceUserCreateBody, input, 'body');
  const email = body.email.trim();
  if (await findUserByEmail(sql, email)) throw new ConflictError(es.users.emailTaken);
  const password = oneTimePassword();
  const password_hash = await hashPassword(password);
  try {
    const row = await sql.begin(async (tx) => {
      const created = await insertUser(tx, { tenant_id: tenantId, email, name: body.name ?? null, password_hash, role: body.role, must_change_password: true });
      await recordAudit(tx, auditOf(actor, tenantId, 'create_user', created, { role: created.role }));
      return created;
    });
    return { ...toUserResponse(row), one_time_password: password };
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string };
    if (e.code === '23505' && e.constraint_name === 'users_email_key') throw new ConflictError(es.users.emailTaken);
    throw err;
  }
}

/**
 * The user to change, locked after the workspace's active admins (always in that order, so two
 * changes cannot wait on each other), and the admins' ids for the last-admin rule.
 */
async function lockForChange(tx: Queryable, tenantId: string, id: string): Promise<{ user: UserRow; admins: string[] }> {
  const admins = await lockActiveAdmins(tx, tenantId);
  return { user: await tenantUser(tx, tenantId, id, true), admins };
}

/** Refuses (409) a change that would leave the workspace without an active admin. */
function keepAnAdmin(admins: string[], user: UserRow): void {
  if (admins.length === 1 && admins[0] === user.id) throw new ConflictError(es.users.lastAdmin);
}

/** Role and name; demoting the last active admin → 409. */
export async function updateWorkspaceUser(sql: Sql, actor: AuditActor, tenantId: string, id: string, input: unknown): Promise<UserResponseBody> {
  await tenantUser(sql, tenantId, id);
  const body = validate(UserUpdateBody, input, 'body');
  if (body.role === undefined && body.name === undefined) throw ValidationError.single(['body'], es.users.emptyUpdate);
  const row = await sql.begin(async (tx) => {
    const { user: before, admins } = await lockForChange(tx, tenantId, id);
    if (body.role === 'member') keepAnAdmin(admins, before);
    const after = await updateUserFields(tx, id, { role: body.role, name: body.name });
    const changes: Record<string, unknown> = {};
    if (before.role !== after.role) changes.role = { from: before.role, to: after.role };
    if (before.name !== after.name) changes.name = { from: before.name, to: after.name };
    if (Object.keys(changes).length > 0) await recordAudit(tx, auditOf(actor, tenantId, 'update_user', after, { changes }));
    return after;
  });
  return toUserResponse(row);
}

/**
 * Deactivates a user and revokes all its access tokens in one statement: its next request is 401
 * and its event streams end at the registry's next check. Deactivating the last active admin →
 * 409; an inactive user answers its record again (no second audit row).
 */
export async function deactivateWorkspaceUser(sql: Sql, actor: AuditActor, tenantId: string, id: string): Promise<UserResponseBody> {
  await tenantUser(sql, tenantId, id);
  const row = await sql.begin(async (tx) => {
    const { user: before, admins } = await lockForChange(tx, tenantId, id);
    if (!before.is_active) return before;
    keepAnAdmin(admins, before);
    const after = (await deactivateUserRow(tx, id))!;
    await recordAudit(tx, auditOf(actor, tenantId, 'deactivate_user', after));
    return after;
  });
  return toUserResponse(row);
}

/**
 * A signed-in user's own password: the current one is required (a stolen session alone cannot
 * take the account over), the new one must differ, the must-change flag goes and the user's other
 * tokens are revoked; the token of this request stays valid.
 */
export async function changeOwnPassword(
  sql: Sql,
  session: { tenantId: string; userId: string; tokenId: string },
  input: unknown,
  origin: { requestId?: string | null; ip?: string | null } = {},
): Promise<void> {
  const body = validate(PasswordChangeBody, input, 'body');
  const user = await findUserById(sql, session.userId);
  if (!user || !user.is_active) throw new UnauthorizedError();
  if (!(await verifyPassword(body.current_password, user.password_hash))) {
    throw ValidationError.single(['body', 'current_password'], es.users.wrongCurrentPassword, 'wrong_password');
  }
  if (body.new_password === body.current_password) {
    throw ValidationError.single(['body', 'new_password'], es.users.samePassword, 'same_password');
  }
  refuseCommonPassword(body.new_password, ['body', 'new_password']);
  const hash = await hashPassword(body.new_password);
  await sql.begin(async (tx) => {
    const row = await replaceOwnPassword(tx, session.userId, hash, session.tokenId);
    if (!row) throw new UnauthorizedError();
    await recordAudit(tx, {
      tenantId: session.tenantId, actorType: 'user', actorId: session.userId, action: 'change_password', source: 'api',
      resourceType: 'user', resourceId: session.userId, details: { email: row.email, was_one_time: user.must_change_password },
      requestId: origin.requestId ?? null, ip: origin.ip ?? null,
    });
  });
}
