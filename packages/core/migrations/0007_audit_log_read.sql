-- The audit log as admins read it (GET /settings/audit-log, docs/decisions/audit-log.md):
-- newest first in keyset pages of (created_at, id), whole or for one resource.
create index audit_log_tenant_list_idx on audit_log (tenant_id, created_at desc, id desc);
drop index audit_log_tenant_idx;
create index audit_log_resource_idx on audit_log (tenant_id, resource_id, created_at desc, id desc) where resource_id is not null;
