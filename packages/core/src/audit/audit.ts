import type { Queryable } from '../db/sql';

/** One row of the tenant's audit log. Never put a secret in `details`. */
export interface AuditEntry {
  tenantId: string;
  actorType: 'user' | 'api_key' | 'system' | 'machine';
  actorId?: string | null;
  action: string;
  source: string;
  resourceType?: string | null;
  resourceId?: string | null;
  details?: Record<string, unknown>;
  requestId?: string | null;
  ip?: string | null;
}

export async function recordAudit(sql: Queryable, e: AuditEntry): Promise<void> {
  await sql`
    insert into audit_log (tenant_id, actor_type, actor_id, action, source, resource_type, resource_id, details, request_id, ip)
    values (${e.tenantId}, ${e.actorType}, ${e.actorId ?? null}, ${e.action}, ${e.source}, ${e.resourceType ?? null},
            ${e.resourceId ?? null}, ${sql.json((e.details ?? {}) as never)}, ${e.requestId ?? null}, ${e.ip ?? null})`;
}
