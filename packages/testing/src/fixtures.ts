import { randomBytes } from 'node:crypto';
import { API_KEY_PREFIX, MACHINE_KEY_PREFIX, SCOPE_NAMES, type Sql } from '@svc/core';
import type { ApiKeyRow } from '@svc/core/internals';
import { issueSecret, ACCESS_TOKEN_PREFIX, type Queryable, type TenantRow } from '@svc/core/internals';

/**
 * Direct-SQL fixtures for tests: they set up a state without going through the services under
 * test. Names are random so fixtures never collide inside one database.
 */
const uniq = (p: string) => `${p}-${randomBytes(4).toString('hex')}`;
type Row = Record<string, any>;

export async function seedTenant(sql: Queryable, fields: Partial<Pick<TenantRow, 'name' | 'plan_features' | 'subscription_status' | 'monthly_quota' | 'quota_used'>> = {}): Promise<TenantRow> {
  const [row] = await sql<TenantRow[]>`
    insert into tenants (name, plan_features, subscription_status, monthly_quota, quota_used)
    values (${fields.name ?? uniq('tenant')}, ${fields.plan_features ?? ['api_keys', 'webhooks']},
            ${fields.subscription_status ?? 'active'}, ${fields.monthly_quota ?? 10000}, ${fields.quota_used ?? 0})
    returning *`;
  return row!;
}

/** A user with an access token (password hash is a placeholder: log in through the API to test passwords). */
export async function seedUser(
  sql: Queryable,
  tenantId: string,
  fields: { role?: 'admin' | 'member'; email?: string; tokenExpiresAt?: Date } = {},
): Promise<{ user: Row; token: string; tokenId: string }> {
  const [user] = await sql`
    insert into users (tenant_id, email, name, password_hash, role)
    values (${tenantId}, ${fields.email ?? `${uniq('user')}@example.test`}, 'Test User', 'scrypt$invalid', ${fields.role ?? 'admin'})
    returning *`;
  const secret = issueSecret(ACCESS_TOKEN_PREFIX);
  const [tok] = await sql`
    insert into access_tokens (tenant_id, user_id, token_hash, prefix, expires_at)
    values (${tenantId}, ${user!.id}, ${secret.hash}, ${secret.prefix}, ${fields.tokenExpiresAt ?? new Date(Date.now() + 3600_000)})
    returning id`;
  return { user: user!, token: secret.value, tokenId: tok!.id };
}

export async function seedApiKey(
  sql: Queryable,
  tenantId: string,
  fields: Partial<Pick<ApiKeyRow, 'name' | 'scopes' | 'allowed_ips' | 'environments' | 'expires_at' | 'is_active'>> = {},
): Promise<{ row: ApiKeyRow; key: string }> {
  const secret = issueSecret(API_KEY_PREFIX);
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (tenant_id, name, prefix, key_hash, scopes, allowed_ips, environments, expires_at, is_active)
    values (${tenantId}, ${fields.name ?? uniq('key')}, ${secret.prefix}, ${secret.hash},
            ${fields.scopes ?? [...SCOPE_NAMES]}, ${fields.allowed_ips ?? null}, ${fields.environments ?? null},
            ${fields.expires_at ?? null}, ${fields.is_active ?? true})
    returning *`;
  return { row: row!, key: secret.value };
}

/** A fresh tenant and an API key of it with `scopes`. */
export async function seedTenantWithKey(sql: Queryable, scopes: string[]): Promise<{ tenant: TenantRow; key: string; keyRow: ApiKeyRow }> {
  const tenant = await seedTenant(sql);
  const { key, row } = await seedApiKey(sql, tenant.id, { scopes });
  return { tenant, key, keyRow: row };
}

export async function seedQueue(sql: Queryable, tenantId: string, fields: Row = {}): Promise<Row> {
  const [row] = await sql`
    insert into queues (tenant_id, name, max_retries, consumer_process_id, max_consumers)
    values (${tenantId}, ${fields.name ?? uniq('queue')}, ${fields.max_retries ?? 3}, ${fields.consumer_process_id ?? null},
            ${fields.max_consumers ?? 1})
    returning *`;
  return row!;
}

export async function seedProcess(sql: Queryable, tenantId: string, fields: Row = {}): Promise<Row> {
  const [row] = await sql`
    insert into processes (tenant_id, name, input_schema, is_active, folder_id, timeout_seconds, max_retries, auto_retry,
                           retry_delay_seconds, sla_deadline_minutes, on_success_trigger_process_id)
    values (${tenantId}, ${fields.name ?? uniq('process')}, ${fields.input_schema ? sql.json(fields.input_schema) : null},
            ${fields.is_active ?? true}, ${fields.folder_id ?? null}, ${fields.timeout_seconds ?? 3600},
            ${fields.max_retries ?? 0}, ${fields.auto_retry ?? false}, ${fields.retry_delay_seconds ?? 60},
            ${fields.sla_deadline_minutes ?? null}, ${fields.on_success_trigger_process_id ?? null})
    returning *`;
  return row!;
}

export async function seedMachine(sql: Queryable, tenantId: string, fields: Row = {}): Promise<{ row: Row; machineKey: string }> {
  const secret = issueSecret(MACHINE_KEY_PREFIX);
  const [row] = await sql`
    insert into machines (tenant_id, name, machine_key_hash, machine_key_prefix, slots, is_active, status, last_heartbeat_at)
    values (${tenantId}, ${fields.name ?? uniq('machine')}, ${secret.hash}, ${secret.prefix}, ${fields.slots ?? 1},
            ${fields.is_active ?? true}, ${fields.status ?? 'online'}, ${fields.status === 'offline' ? null : new Date()})
    returning *`;
  return { row: row!, machineKey: secret.value };
}

/** A job in any state (direct SQL; the trigger service is what the API tests exercise). */
export async function seedJob(sql: Queryable, tenantId: string, fields: Row & { process_id: string; machine_id: string }): Promise<Row> {
  const status = fields.status ?? 'pending';
  const started = status === 'pending' ? null : new Date();
  const finished = ['completed', 'failed', 'stopped', 'timed_out'].includes(status) ? new Date() : null;
  // a run seeded as started is one its robot holds (acknowledged), unless the test says otherwise
  const acknowledged = fields.acknowledged_at !== undefined ? fields.acknowledged_at : started;
  const [row] = await sql`
    insert into jobs (tenant_id, process_id, machine_id, status, priority, input_data, attempt, started_at, finished_at, source, acknowledged_at)
    values (${tenantId}, ${fields.process_id}, ${fields.machine_id}, ${status}, ${fields.priority ?? 3},
            ${fields.input_data ? sql.json(fields.input_data) : null}, ${fields.attempt ?? (status === 'pending' ? 0 : 1)},
            ${fields.started_at ?? started}, ${fields.finished_at ?? finished}, ${fields.source ?? 'api'}, ${acknowledged as Date | null})
    returning *`;
  return row!;
}

/** A tenant with an admin, an API key with every scope, and helpers to add the rest. */
export async function seedWorkspace(sql: Sql) {
  const tenant = await seedTenant(sql);
  const admin = await seedUser(sql, tenant.id, { role: 'admin' });
  const apiKey = await seedApiKey(sql, tenant.id);
  return {
    tenant,
    adminToken: admin.token,
    adminEmail: admin.user.email as string,
    key: apiKey.key,
    process: (fields: Record<string, unknown> = {}) => seedProcess(sql, tenant.id, fields),
    machine: (fields: Record<string, unknown> = {}) => seedMachine(sql, tenant.id, fields),
    queue: (fields: Record<string, unknown> = {}) => seedQueue(sql, tenant.id, fields),
  };
}

/** Status counts of a queue's items, from the table itself. */
export async function itemStatusCounts(sql: Sql, queueId: string): Promise<Record<string, number>> {
  const rows = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from queue_items where queue_id = ${queueId} group by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}
