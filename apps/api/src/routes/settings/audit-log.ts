import { AuditEntryResponse, AuditLogExportQuery, AuditLogQuery } from '@svc/core/schemas';
import { EXPORT_RATE_LIMIT, exportFormatOf, sendDownload } from '../../http/download';
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
    const { data, meta } = await rc.deps.engine.audit.list(tenantOf(ctx), input.query());
    paged(ctx, data, meta);
  });
  addRoute(router, rc, {
    method: 'get',
    path: '/settings/audit-log/export',
    operationId: 'exportAuditLog',
    summary: 'Download the audit log entries that match the filters',
    description:
      'Every entry the list\'s filters match (action, actor_type, actor_id, resource_type, resource_id, since, until: as GET ' +
      '/settings/audit-log, without paging), newest first, as NDJSON (one entry a line) or CSV (a header line, then one ' +
      'row per entry; details as JSON text, empty for null; a text cell starting with = + - @, a tab or a carriage return ' +
      'gets a leading apostrophe). Format: `format` (csv|ndjson), else the Accept header, else NDJSON. A failure once the ' +
      'download has begun cuts the transfer short. Admins only. See docs/decisions/export.md.',
    tags: ['settings: audit log'],
    auth: ADMIN,
    query: AuditLogExportQuery,
    download: { record: AuditEntryResponse },
    rateLimit: EXPORT_RATE_LIMIT,
    errors: [422],
  }, async (ctx, input) => {
    const query = input.query();
    const format = exportFormatOf(ctx, query);
    sendDownload(ctx, await rc.deps.engine.audit.export(tenantOf(ctx), query, format), format, 'audit-log');
  });
  return router;
}
