import type { Queryable } from '../db/sql';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors';
import type { PlanFeature } from '../scopes';
import { isUuid } from '../ids';
import { validate } from '../validation/validate';
import { findTenant, type TenantRow } from './repo';
import { TenantCreateBody, TenantUpdateBody, type TenantCreateInput, type TenantUpdateInput } from './schemas';
import { es } from '../messages/server-messages';

/**
 * Tenants are created and changed by operators (CLI) — never through the public API. The plan's
 * feature flags, the subscription state and the monthly quota are what the API checks on use.
 */

/** A tenant as answered: its row, with every date as text (`quota_period` a day, YYYY-MM-DD). */
export type TenantResponseBody = { [K in keyof TenantRow]: TenantRow[K] extends Date ? string : TenantRow[K] };

function isoDate(value: Date | string): string {
  // postgres.js parses a `date` as `new Date('YYYY-MM-DD')`, i.e. UTC midnight
  return typeof value === 'string' ? value.slice(0, 10) : value.toISOString().slice(0, 10);
}

export function toTenantResponse(row: TenantRow): TenantResponseBody {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    plan_features: row.plan_features,
    subscription_status: row.subscription_status,
    monthly_quota: row.monthly_quota,
    job_retention_days: row.job_retention_days,
    job_retention_action: row.job_retention_action,
    quota_used: row.quota_used,
    quota_period: isoDate(row.quota_period),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const TENANT_NAME_TAKEN = es.tenants.nameTaken;

function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === '23505' && (!constraint || e.constraint_name === constraint);
}

export async function createTenant(sql: Queryable, input: TenantCreateInput): Promise<TenantRow> {
  const body = validate(TenantCreateBody, { ...input }, 'body');
  try {
    const [row] = await sql<TenantRow[]>`
      insert into tenants (name, plan, plan_features, subscription_status, monthly_quota)
      values (${body.name.trim()}, coalesce(${body.plan ?? null}, 'standard'),
              coalesce(${body.plan_features ?? null}::text[], '{api_keys,webhooks}'),
              coalesce(${body.subscription_status ?? null}, 'active'), coalesce(${body.monthly_quota ?? null}::int, 10000))
      returning *`;
    return row!;
  } catch (err) {
    if (isUniqueViolation(err, 'tenants_name_key')) throw new ConflictError(TENANT_NAME_TAKEN);
    throw err;
  }
}

/** Changes only the fields given; an empty change returns the tenant as it is. */
export async function updateTenant(sql: Queryable, id: string, input: TenantUpdateInput): Promise<TenantRow> {
  const body = validate(TenantUpdateBody, { ...input }, 'body');
  if (!isUuid(id)) throw new NotFoundError(es.tenants.notFound);
  try {
    // a change of the jobs retention is a policy change: audited in the same statement
    const [row] = await sql<TenantRow[]>`
      with old as (select id, job_retention_days as old_days, job_retention_action as old_action from tenants where id = ${id} for update),
      upd as (
        update tenants t set
          name = coalesce(${body.name?.trim() ?? null}, name),
          plan = coalesce(${body.plan ?? null}, plan),
          plan_features = coalesce(${body.plan_features ?? null}::text[], plan_features),
          subscription_status = coalesce(${body.subscription_status ?? null}, subscription_status),
          monthly_quota = coalesce(${body.monthly_quota ?? null}::int, monthly_quota),
          job_retention_days = coalesce(${body.job_retention_days ?? null}::float8, job_retention_days),
          job_retention_action = coalesce(${body.job_retention_action ?? null}, job_retention_action),
          updated_at = case when ${Object.keys(body).length > 0} then now() else updated_at end
        from old where t.id = old.id
        returning t.*, old.old_days, old.old_action),
      audit as (
        insert into audit_log (tenant_id, actor_type, action, source, resource_type, resource_id, details)
        select id, 'system', 'update_tenant_retention', 'cli', 'tenant', id, jsonb_build_object('fields',
                 to_jsonb(array_remove(array[
                   case when job_retention_days is distinct from old_days then 'job_retention_days' end,
                   case when job_retention_action is distinct from old_action then 'job_retention_action' end], null)))
        from upd where job_retention_days is distinct from old_days or job_retention_action is distinct from old_action)
      select * from upd`;
    if (row) {
      delete (row as Partial<TenantRow & { old_days: unknown; old_action: unknown }>).old_days;
      delete (row as Partial<TenantRow & { old_days: unknown; old_action: unknown }>).old_action;
    }
    if (!row) throw new NotFoundError(es.tenants.notFound);
    return row;
  } catch (err) {
    if (isUniqueViolation(err, 'tenants_name_key')) throw new ConflictError(TENANT_NAME_TAKEN);
    throw err;
  }
}

export async function getTenant(sql: Queryable, id: string): Promise<TenantRow> {
  const row = isUuid(id) ? await findTenant(sql, id) : null;
  if (!row) throw new NotFoundError(es.tenants.notFound);
  return row;
}

export async function findTenantByName(sql: Queryable, name: string): Promise<TenantRow | null> {
  const [row] = await sql<TenantRow[]>`select * from tenants where name = ${name}`;
  return row ?? null;
}

/** A tenant by id or by name (operators type either); unknown → NotFoundError. */
export async function resolveTenant(sql: Queryable, idOrName: string): Promise<TenantRow> {
  const row = (isUuid(idOrName) ? await findTenant(sql, idOrName) : null) ?? (await findTenantByName(sql, idOrName));
  if (!row) throw new NotFoundError(es.tenants.notFoundNamed(idOrName));
  return row;
}

export async function listTenants(sql: Queryable): Promise<TenantRow[]> {
  return sql<TenantRow[]>`select * from tenants order by created_at, name`;
}

/** The tenant's plan includes `feature`; else 403 (an unknown tenant too, telling nothing more). */
export async function assertPlanFeature(sql: Queryable, tenantId: string | null | undefined, feature: PlanFeature): Promise<void> {
  const tenant = tenantId ? await findTenant(sql, tenantId) : null;
  if (!tenant || !tenant.plan_features.includes(feature)) {
    throw new ForbiddenError(es.tenants.featureNotInPlan(feature), { feature });
  }
}
