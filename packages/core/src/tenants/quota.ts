import type { Queryable } from '../db/sql';
import { quotaRejections } from '../metrics/domain';
import { ForbiddenError, QuotaExceededError } from '../errors';
import { es } from '../messages/server-messages';

/**
 * The monthly execution quota (docs/decisions/quota.md). A period is a calendar month in UTC,
 * taken from the database clock; `quota_period` holds the first day of the month that
 * `quota_used` counts, so a new month starts from zero without any sweep.
 */

/** Subscription states that may run executions. */
export const ACTIVE_SUBSCRIPTION_STATUSES: readonly string[] = ['active', 'trialing'];

export function isSubscriptionActive(status: string): boolean {
  return ACTIVE_SUBSCRIPTION_STATUSES.includes(status);
}

export function assertSubscriptionActive(status: string): void {
  if (!isSubscriptionActive(status)) {
    throw new ForbiddenError(es.tenants.subscriptionInactive, { subscription_status: status });
  }
}

export interface QuotaUsage {
  monthly_quota: number;
  /** Executions counted in the current period. */
  quota_used: number;
  /** First day (UTC) of the current period. */
  period_start: Date;
}

/** First instant (UTC) of the month after `periodStart`: when an exhausted quota frees up. */
export function quotaResetsAt(periodStart: Date): Date {
  return new Date(Date.UTC(periodStart.getUTCFullYear(), periodStart.getUTCMonth() + 1, 1));
}

export function quotaExceeded(usage: QuotaUsage): QuotaExceededError {
  quotaRejections.inc();
  return new QuotaExceededError({
    monthly_quota: usage.monthly_quota,
    quota_used: usage.quota_used,
    resets_at: quotaResetsAt(usage.period_start).toISOString(),
  });
}

/** Throws 429 QUOTA_EXCEEDED when the period's usage has reached the quota (a read-only pre-check). */
export function assertQuotaAvailable(usage: QuotaUsage): void {
  if (usage.quota_used >= usage.monthly_quota) throw quotaExceeded(usage);
}

/**
 * Consumes one execution in ONE statement: the row lock of the UPDATE serializes concurrent
 * callers and Postgres re-checks the WHERE on the row each one finally updates, so with N
 * executions left exactly N callers succeed. A new month restarts the count at 1.
 * Returns the usage after consuming, or null when the quota is exhausted (nothing changed).
 *
 * Call it inside the transaction that creates the execution, as its last write before the
 * audit row: a failure after it rolls the consumption back, and the tenant row stays locked
 * only until the commit.
 */
export async function consumeExecution(sql: Queryable, tenantId: string): Promise<QuotaUsage | null> {
  const [row] = await sql<QuotaUsage[]>`
    update tenants
    set quota_used = case when quota_period = date_trunc('month', now() at time zone 'utc')::date then quota_used + 1 else 1 end,
        quota_period = date_trunc('month', now() at time zone 'utc')::date
    where id = ${tenantId}
      and (case when quota_period = date_trunc('month', now() at time zone 'utc')::date then quota_used else 0 end) < monthly_quota
    returning monthly_quota, quota_used, quota_period as period_start`;
  return row ?? null;
}

/** The tenant's usage in the current period (0 when its counter belongs to an older month). */
export async function readQuotaUsage(sql: Queryable, tenantId: string): Promise<QuotaUsage | null> {
  const [row] = await sql<QuotaUsage[]>`
    select monthly_quota,
           case when quota_period = date_trunc('month', now() at time zone 'utc')::date then quota_used else 0 end as quota_used,
           date_trunc('month', now() at time zone 'utc')::date as period_start
    from tenants where id = ${tenantId}`;
  return row ?? null;
}
