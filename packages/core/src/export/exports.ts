import type { Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import type { Sql } from '../db/sql';
import { parseContainmentFilter } from '../validation/containment-filter';
import { QueueItemListQuery, QueueItemResponse } from '../queue-items/schemas';
import { exportQueueItemsChunk, type QueueRef } from '../queue-items/repo';
import { toQueueItemResponse } from '../queue-items/serialize';
import { JobListQuery, JobResponse } from '../jobs/schemas';
import { exportJobsChunk } from '../jobs/repo';
import { resolveJobFilter } from '../jobs/service';
import { toJobResponse } from '../jobs/serialize';
import { AuditEntryResponse, AuditLogQuery, auditFilterSql, checkAuditFilter } from '../audit/read';
import { KEYSET_AT_SQL, ExportFormatQuery, exportStream, primed, walkKeyset, type ExportFormat, type KeysetPosition, type KeysetRow } from './stream';

/**
 * The three exports: a queue's items, a workspace's jobs and its audit log. Each takes its list's
 * filters (not its paging) with the same schema, parsing and SQL, so a filter means the same in
 * the list and in the export; each checks them before its first byte (a bad filter is a 422, never
 * a broken stream), then reads in keyset chunks (export/stream.ts, docs/decisions/export.md).
 */
const { page: _itemPage, limit: _itemLimit, ...itemFilters } = QueueItemListQuery.properties;
export const QueueItemExportQuery = Type.Object({ ...itemFilters, format: ExportFormatQuery }, { additionalProperties: false });
export type QueueItemExportQuery = Static<typeof QueueItemExportQuery>;

const { page: _jobPage, limit: _jobLimit, ...jobFilters } = JobListQuery.properties;
export const JobExportQuery = Type.Object({ ...jobFilters, format: ExportFormatQuery }, { additionalProperties: false });
export type JobExportQuery = Static<typeof JobExportQuery>;

const { limit: _auditLimit, cursor: _auditCursor, ...auditFilters } = AuditLogQuery.properties;
export const AuditLogExportQuery = Type.Object({ ...auditFilters, format: ExportFormatQuery }, { additionalProperties: false });
export type AuditLogExportQuery = Static<typeof AuditLogExportQuery>;

/** The columns of each export, in the order of its response schema (CSV's header; NDJSON's keys). */
export const QUEUE_ITEM_EXPORT_COLUMNS = Object.keys(QueueItemResponse.properties) as Array<keyof QueueItemResponse & string>;
/**
 * The fields `svc items import` reads of an NDJSON line (an add's body), which refuses any other:
 * an export of only these is re-imported as it stands.
 */
export const QUEUE_ITEM_IMPORT_COLUMNS = ['data', 'reference', 'priority', 'deadline', 'postpone'] as const satisfies ReadonlyArray<keyof QueueItemResponse>;

/** A JobResponse but `logs`: a log can be large, and has its own route. */
export const JobExportRecord = Type.Omit(JobResponse, ['logs']);
export type JobExportRecord = Static<typeof JobExportRecord>;
export const JOB_EXPORT_COLUMNS = Object.keys(JobExportRecord.properties) as Array<keyof JobExportRecord & string>;
export const AUDIT_EXPORT_COLUMNS = Object.keys(AuditEntryResponse.properties) as Array<keyof AuditEntryResponse & string>;

async function* mapChunks<Row, Out>(chunks: AsyncIterable<Row[]>, map: (row: Row) => Out): AsyncGenerator<Out[]> {
  for await (const rows of chunks) yield rows.map(map);
}

/**
 * A queue's items matching the list's filters, newest first, as CSV or NDJSON: every field of the
 * QueueItemResponse, or only `columns` (the CLI's re-importable NDJSON).
 */
export async function exportQueueItems(
  sql: Sql, queue: QueueRef, query: Omit<QueueItemExportQuery, 'format'>, format: ExportFormat,
  columns: ReadonlyArray<keyof QueueItemResponse & string> = QUEUE_ITEM_EXPORT_COLUMNS,
): Promise<Readable> {
  const filter = { status: query.status, reference: query.reference, data: parseContainmentFilter(query.data, 'data') };
  const chunks = await primed(walkKeyset((after, limit) => exportQueueItemsChunk(sql, queue, filter, after, limit)));
  const every = columns.length === QUEUE_ITEM_EXPORT_COLUMNS.length;
  const record = (row: Parameters<typeof toQueueItemResponse>[0]) => {
    const item = toQueueItemResponse(row);
    return every ? item : Object.fromEntries(columns.map((c) => [c, item[c]])) as Partial<QueueItemResponse>;
  };
  return exportStream(mapChunks(chunks, record), columns, format);
}

/** A workspace's jobs matching the list's filters, newest first, without their logs. */
export async function exportJobs(sql: Sql, tenantId: string, query: Omit<JobExportQuery, 'format'>, format: ExportFormat): Promise<Readable> {
  const filter = await resolveJobFilter(sql, tenantId, query);
  const chunks = await primed(walkKeyset((after, limit) => exportJobsChunk(sql, tenantId, filter, after, limit)));
  const toRecord = (row: Parameters<typeof toJobResponse>[0]): JobExportRecord => {
    const { logs: _logs, ...record } = toJobResponse(row);
    return record;
  };
  return exportStream(mapChunks(chunks, (row) => toRecord({ ...row, logs: null })), JOB_EXPORT_COLUMNS, format);
}

interface AuditExportRow extends Omit<AuditEntryResponse, 'created_at'>, KeysetRow {
  created_at: Date;
}

/** A workspace's audit log matching the list's filters, newest first. */
export async function exportAuditLog(
  sql: Sql, tenantId: string, query: Omit<AuditLogExportQuery, 'format'>, format: ExportFormat,
): Promise<Readable> {
  checkAuditFilter(query);
  const chunk = (after: KeysetPosition | null, limit: number) => sql<AuditExportRow[]>`
    select id, created_at, action, actor_type, actor_id, source, resource_type, resource_id, details, request_id, ip,
           ${sql.unsafe(KEYSET_AT_SQL)} as export_at, id::text as export_id
    from audit_log
    where tenant_id = ${tenantId} ${auditFilterSql(sql, query)}
      ${after ? sql`and (created_at, id) < (${after.at}::text::timestamptz, ${after.id}::bigint)` : sql``}
    order by created_at desc, id desc
    limit ${limit}`;
  const toRecord = ({ export_at: _at, export_id: _id, created_at, ...r }: AuditExportRow): AuditEntryResponse =>
    ({ ...r, created_at: created_at.toISOString() });
  return exportStream(mapChunks(await primed(walkKeyset(chunk)), toRecord), AUDIT_EXPORT_COLUMNS, format);
}
