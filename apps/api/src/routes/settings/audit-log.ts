import { AuditEntryResponse, AuditLogQuery } from '@svc/core';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { paged } from '../../http/respond';
import { ADMIN, tenantOf } from './crud';

/** GET /settings/audit-log: the workspace's audit log for its admins (docs/decisions/audit-log.md). */
export function auditLogRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addRoute(router, rc, {
    method: 'get',
    path: '/settings/audit-log',
    operationId: 'readAuditLog',
    summary: 'Read the audit log of the workspace',
    description:
      'Newest first (created_at desc, id desc), in keyset pages: `limit` 1..100 (default 50), and `cursor` = the ' +
      '`meta.next_cursor` of the previous page (null on the last one); a cursor that is not one → 422. Filters combine: ' +
      '`action`, `actor_type`, `actor_id`, `resource_type`, `resource_id`, `since` (inclusive) and `until` (exclusive), ' +
      'RFC 3339 with a time zone; `since` after `until` → 422. Entries: key creation, rotation and revocation, job ' +
      'triggers (source api or webhook) and stops, credential and asset reads, catalogue changes, reviews and ' +
      're-drives, sign-ins, users added, changed and deactivated, password changes; `details` never holds a secret.',
    tags: ['settings: audit log'],
    auth: ADMIN,
    query: AuditLogQuery,
    response: AuditEntryResponse,
    paged: 'cursor',
    errors: [422],
  }, async (ctx, input) => {
    const { rows, meta } = await rc.deps.engine.audit.list(tenantOf(ctx), input.query());
    paged(ctx, rows, meta);
  });
  return router;
}
