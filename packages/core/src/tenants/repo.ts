import type { Queryable } from '../db/sql';

export interface TenantRow {
  id: string;
  name: string;
  plan: string;
  plan_features: string[];
  subscription_status: string;
  monthly_quota: number;
  job_retention_days: number;
  job_retention_action: 'delete' | 'archive';
  quota_period: Date;
  quota_used: number;
  created_at: Date;
  updated_at: Date;
}

export async function findTenant(sql: Queryable, id: string): Promise<TenantRow | null> {
  const [row] = await sql<TenantRow[]>`select * from tenants where id = ${id}`;
  return row ?? null;
}
