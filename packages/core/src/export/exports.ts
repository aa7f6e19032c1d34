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
import type { RecordArchive } from '../retention/archive';
import { ENDED_ITEM_STATUSES } from '../retention/pass';
import { FINAL_JOB_STATUSES } from '../jobs/transitions';
import type { QueueItemRow } from '../queue-items/repo';
import type { JobFilter, JobWithNames } from '../jobs/repo';
import { IncludeArchivedQuery, archiveForExport, archivedChunks, archivedDate } from './archived';
import { jsonbContains } from './jsonb-contains';
import { KEYSET_AT_SQL, ExportFormatQuery, exportStream, primed, walkKeyset, type ExportFormat, type KeysetPosition, type KeysetRow } from './stream';

/**
 * The three exports: a queue's items, a workspace's jobs and its audit log. Each takes its list's
 * filters (not its paging) with the same schema, parsing and SQL, so a filter means the same in
 * the list and in the export; each checks them before its first byte (a bad filter is a 422, never
 * a broken stream), then reads in keyset chunks (export/stream.ts, docs/decisions/export.md).
 */
const { page: _itemPage, limit: _itemLimit, ...itemFilters } = QueueItemListQuery.properties;
export const QueueItemExportQuery = Type.Object({ ...itemFilters, format: ExportFormatQuery, include_archived: IncludeArchivedQuery }, { additionalProperties: false });
export type QueueItemExportQuery = Static<typeof QueueItemExportQuery>;

const { page: _jobPage, limit: _jobLimit, ...jobFilters } = JobListQuery.properties;
export const JobExportQuery = Type.Object({ ...jobFilters, format: ExportFormatQuery, include_archived: IncludeArchivedQuery }, { additionalProperties: false });
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

/** The marker `include_archived=true` adds to every record, and its CSV column (the last). */
export const ARCHIVED_COLUMN = 'archived' as const;
type Marked<R> = R & { archived: boolean };

/** Live chunks, then archived ones, every record marked with where it was read. */
async function* liveThenArchived<R>(live: AsyncIterable<R[]>, archived: () => AsyncIterable<R[]>): AsyncGenerator<Array<Marked<R>>> {
  for await (const rows of live) yield rows.map((r) => ({ ...r, archived: false }));
  for await (const rows of archived()) yield rows.map((r) => ({ ...r, archived: true }));
}

/** An archived item (`to_jsonb` of its row) as the row the live export reads. */
function archivedItemRow(row: Record<string, unknown>): QueueItemRow {
  return {
    ...(row as unknown as QueueItemRow),
    deadline: archivedDate(row.deadline), postpone: archivedDate(row.postpone), created_at: archivedDate(row.created_at)!,
    processed_at: archivedDate(row.processed_at), reviewed_at: archivedDate(row.reviewed_at),
    // archived before items kept their kind of failure: every failure then was an application one (migration 0031)
    exception_type: (row.exception_type as QueueItemRow['exception_type'] | undefined) ?? (row.error_message != null ? 'application' : null),
  };
}

/**
 * A queue's items matching the list's filters, newest first, as CSV or NDJSON: every field of the
 * QueueItemResponse, or only `columns` (the CLI's re-importable NDJSON). With `include_archived`,
 * the queue's archived items that match follow (export/archived.ts), every record marked.
 */
export async function exportQueueItems(
  sql: Sql, archive: RecordArchive | null, queue: QueueRef, query: Omit<QueueItemExportQuery, 'format'>, format: ExportFormat,
  columns: ReadonlyArray<keyof QueueItemResponse & string> = QUEUE_ITEM_EXPORT_COLUMNS,
): Promise<Readable> {
  const filter = { status: query.status, reference: query.reference, exception_type: query.exception_type, data: parseContainmentFilter(query.data, 'data') };
  const from = archiveForExport(query.include_archived, archive);
  const live = walkKeyset((after, limit) => exportQueueItemsChunk(sql, queue, filter, after, limit));
  const every = columns.length === QUEUE_ITEM_EXPORT_COLUMNS.length;
  const record = (row: QueueItemRow) => {
    const item = toQueueItemResponse(row);
    return every ? item : Object.fromEntries(columns.map((c) => [c, item[c]])) as Partial<QueueItemResponse>;
  };
  const records = mapChunks(live, record);
  if (!from) return exportStream(await primed(records), columns, format);
  // only ended items are archived: a filter on another status reads no file
  const archivable = filter.status === undefined || (ENDED_ITEM_STATUSES as readonly string[]).includes(filter.status);
  const match = (row: Record<string, unknown>) =>
    (filter.status === undefined || row.status === filter.status)
    && (filter.reference === undefined || row.reference === filter.reference)
    && (filter.exception_type === undefined || archivedItemRow(row).exception_type === filter.exception_type)
    && (filter.data === undefined || jsonbContains(row.data, filter.data));
  const archived = async function* archivedItems(): AsyncGenerator<Array<Partial<QueueItemResponse>>> {
    if (!archivable) return;
    yield* mapChunks(archivedChunks(sql, from, { tenantId: queue.tenant_id, kind: 'queue_items', queueId: queue.id }, match), (r) => record(archivedItemRow(r)));
  };
  return exportStream(await primed(liveThenArchived(records, archived)), [...columns, ARCHIVED_COLUMN], format);
}

/** An archived job (`to_jsonb` of its row) as the row the live export reads, with its names as they are now. */
function archivedJobRow(row: Record<string, unknown>, names: Map<string, string>): JobWithNames {
  return {
    ...(row as unknown as JobWithNames),
    logs: null,
    started_at: archivedDate(row.started_at), finished_at: archivedDate(row.finished_at),
    created_at: archivedDate(row.created_at)!, updated_at: archivedDate(row.updated_at)!,
    process_name: names.get(row.process_id as string) ?? null, machine_name: names.get(row.machine_id as string) ?? null,
  };
}

/** The names of the processes and machines of a chunk of archived jobs (either may have been deleted since). */
async function namesOf(sql: Sql, tenantId: string, rows: Array<Record<string, unknown>>): Promise<Map<string, string>> {
  const ids = [...new Set(rows.flatMap((r) => [r.process_id as string, r.machine_id as string]))];
  const found = await sql<Array<{ id: string; name: string }>>`
    select id, name from processes where tenant_id = ${tenantId} and id = any(${ids}::uuid[])
    union all
    select id, name from machines where tenant_id = ${tenantId} and id = any(${ids}::uuid[])`;
  return new Map(found.map((r) => [r.id, r.name]));
}

function jobMatches(filter: JobFilter) {
  // Postgres compares the live rows' ids as uuids, whatever their letters' case; the archived rows
  // hold them as the lower-case text `to_jsonb` wrote
  const processId = filter.process_id?.toLowerCase();
  const machineId = filter.machine_id?.toLowerCase();
  return (row: Record<string, unknown>) =>
    (filter.status === undefined || row.status === filter.status)
    && (processId === undefined || row.process_id === processId)
    && (machineId === undefined || row.machine_id === machineId)
    && (filter.input_data === undefined || jsonbContains(row.input_data, filter.input_data));
}

/**
 * A workspace's jobs matching the list's filters, newest first, without their logs. With
 * `include_archived`, its archived jobs that match follow, every record marked.
 */
export async function exportJobs(
  sql: Sql, archive: RecordArchive | null, tenantId: string, query: Omit<JobExportQuery, 'format'>, format: ExportFormat,
): Promise<Readable> {
  const filter = await resolveJobFilter(sql, tenantId, query);
  const from = archiveForExport(query.include_archived, archive);
  const chunks = walkKeyset((after, limit) => exportJobsChunk(sql, tenantId, filter, after, limit));
  const toRecord = (row: JobWithNames): JobExportRecord => {
    const { logs: _logs, ...record } = toJobResponse(row);
    return record;
  };
  const records = mapChunks(chunks, (row) => toRecord({ ...row, logs: null }));
  if (!from) return exportStream(await primed(records), JOB_EXPORT_COLUMNS, format);
  const archivable = filter.status === undefined || (FINAL_JOB_STATUSES as readonly string[]).includes(filter.status);
  const archived = async function* archivedJobs(): AsyncGenerator<JobExportRecord[]> {
    if (!archivable) return;
    for await (const rows of archivedChunks(sql, from, { tenantId, kind: 'jobs' }, jobMatches(filter))) {
      const names = await namesOf(sql, tenantId, rows);
      yield rows.map((r) => toRecord(archivedJobRow(r, names)));
    }
  };
  return exportStream(await primed(liveThenArchived(records, archived)), [...JOB_EXPORT_COLUMNS, ARCHIVED_COLUMN], format);
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
