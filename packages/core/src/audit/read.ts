import { Type, type Static } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { ValidationError } from '../errors';
import { DateTime, Nullable, Uuid, storableDate } from '../validation/formats';
import { es } from '../messages/server-messages';

/**
 * GET /settings/audit-log: a workspace's audit log, newest first, in keyset pages
 * (docs/decisions/audit-log.md). The cursor is the (created_at, id) of the last entry of a page,
 * with created_at to the microsecond as Postgres wrote it, so a page never repeats or skips an
 * entry, whatever was written meanwhile and however many entries share a timestamp. (It goes to
 * Postgres as text: a parameter typed timestamptz would pass through a JS Date, to the millisecond.)
 */
export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'system', 'machine'] as const;

export const AuditLogQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: '`meta.next_cursor` of the previous page' })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'e.g. create_api_key, trigger_job, read_asset' })),
    actor_type: Type.Optional(Type.Unsafe<(typeof AUDIT_ACTOR_TYPES)[number]>({ type: 'string', enum: [...AUDIT_ACTOR_TYPES] })),
    actor_id: Type.Optional(Uuid()),
    resource_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'e.g. api_key, job, queue, asset' })),
    resource_id: Type.Optional(Uuid()),
    since: Type.Optional(DateTime({ description: 'Entries at or after this instant' })),
    until: Type.Optional(DateTime({ description: 'Entries before this instant' })),
  },
  { additionalProperties: false },
);
export type AuditLogQuery = Static<typeof AuditLogQuery>;

export const AuditEntryResponse = Type.Object({
  id: Type.Integer({ description: 'Increasing with each entry written' }),
  created_at: DateTime(),
  action: Type.String(),
  actor_type: Type.String({ enum: [...AUDIT_ACTOR_TYPES] }),
  actor_id: Nullable(Uuid()),
  source: Type.String({ description: 'api, webhook, cli, dispatcher, …' }),
  resource_type: Nullable(Type.String()),
  resource_id: Nullable(Uuid()),
  details: Type.Object({}, { additionalProperties: true, description: 'What changed; never a secret' }),
  request_id: Nullable(Type.String()),
  ip: Nullable(Type.String()),
});
export type AuditEntryResponse = Static<typeof AuditEntryResponse>;

export interface CursorMeta {
  limit: number;
  next_cursor: string | null;
}

interface AuditRow extends Omit<AuditEntryResponse, 'created_at'> {
  created_at: Date;
  /** created_at to the microsecond, as the cursor carries it */
  at: string;
}

const CURSOR_RE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|(\d{1,18})$/;

function encodeCursor(row: AuditRow): string {
  return Buffer.from(`${row.at}|${row.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { at: string; id: number } {
  const m = /^[A-Za-z0-9_-]+$/.test(cursor) ? CURSOR_RE.exec(Buffer.from(cursor, 'base64url').toString('utf8')) : null;
  if (!m || Number.isNaN(Date.parse(m[1]!))) {
    throw ValidationError.single(['query', 'cursor'], es.feeds.notAnAuditCursor, 'invalid_cursor');
  }
  return { at: m[1]!, id: Number(m[2]) };
}

/** The filters of the list and of the export (everything but the paging). */
export type AuditLogFilter = Omit<AuditLogQuery, 'limit' | 'cursor'>;

/** `since` after `until` would always match nothing: a 422 shows the mistake. */
export function checkAuditFilter(query: AuditLogFilter): void {
  storableDate(query.since, ['query', 'since']);
  storableDate(query.until, ['query', 'until']);
  if (query.since !== undefined && query.until !== undefined && Date.parse(query.since) > Date.parse(query.until)) {
    throw ValidationError.single(['query', 'until'], es.feeds.untilBeforeSince, 'value_error');
  }
}

export function auditFilterSql(sql: Queryable, query: AuditLogFilter) {
  return sql`${query.action !== undefined ? sql`and action = ${query.action}` : sql``}
      ${query.actor_type !== undefined ? sql`and actor_type = ${query.actor_type}` : sql``}
      ${query.actor_id !== undefined ? sql`and actor_id = ${query.actor_id}` : sql``}
      ${query.resource_type !== undefined ? sql`and resource_type = ${query.resource_type}` : sql``}
      ${query.resource_id !== undefined ? sql`and resource_id = ${query.resource_id}` : sql``}
      ${query.since !== undefined ? sql`and created_at >= ${query.since}::text::timestamptz` : sql``}
      ${query.until !== undefined ? sql`and created_at < ${query.until}::text::timestamptz` : sql``}`;
}

export async function listAuditLog(sql: Queryable, tenantId: string, query: AuditLogQuery): Promise<{ rows: AuditEntryResponse[]; meta: CursorMeta }> {
  const limit = query.limit ?? 50;
  checkAuditFilter(query);
  const after = query.cursor !== undefined ? decodeCursor(query.cursor) : null;
  const rows = await sql<AuditRow[]>`
    select id, created_at, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at,
           action, actor_type, actor_id, source, resource_type, resource_id, details, request_id, ip
    from audit_log
    where tenant_id = ${tenantId}
      ${auditFilterSql(sql, query)}
      ${after ? sql`and (created_at, id) < (${after.at}::text::timestamptz, ${after.id}::bigint)` : sql``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  return {
    rows: page.map(({ at: _at, created_at, ...r }) => ({ ...r, created_at: created_at.toISOString() })),
    meta: { limit, next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null },
  };
}
