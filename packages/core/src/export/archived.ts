import { Type } from '@sinclair/typebox';
import type { Queryable } from '../db/sql';
import { ConflictError, ValidationError } from '../errors';
import { es } from '../messages/server-messages';
import type { RecordArchive } from '../retention/archive';
import { EXPORT_CHUNK_BYTES, EXPORT_CHUNK_ROWS } from './stream';

/**
 * The archived rows an export adds when asked (`include_archived=true`, docs/decisions/export.md):
 * the rows retention wrote to the archive before deleting them (docs/decisions/retention.md), read
 * back file by file from the manifest (`archive_files`), filtered in the API as the live rows are
 * in SQL. Only the manifest's files are read: a file written by a batch that did not commit is not
 * listed, so it is never seen.
 */
export const IncludeArchivedQuery = Type.Optional(Type.Unsafe<'true' | 'false'>({
  type: 'string',
  description: '`true`: the rows retention archived (docs/decisions/retention.md) that match the filters follow the live ones, ' +
    'each marked `archived: true` (live rows `archived: false`; in CSV a last column `archived`). `false` or absent: live ' +
    'rows only, without the field. Any other value → 422. Asking for them when the API has no archive configured (ARCHIVE_DIR or ARCHIVE_S3_BUCKET) → 409.',
}));

/** `include_archived` as the query holds it: only the text `true` or `false` (a 422 on anything else). */
export function parseIncludeArchived(text: string | undefined): boolean {
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  throw ValidationError.single(['query', 'include_archived'], es.export.includeArchived, 'enum');
}

/**
 * The archive an export reads when its query asks for archived rows (`include_archived`), or null
 * when it does not: refused with a 409 when the API has none, since a download of the live rows
 * alone would look complete and be partial.
 */
export function archiveForExport(includeArchived: string | undefined, archive: RecordArchive | null | undefined): RecordArchive | null {
  if (!parseIncludeArchived(includeArchived)) return null;
  if (!archive) throw new ConflictError(es.export.archiveNotConfigured);
  return archive;
}

/** Manifest rows per statement: a scope archived for years has files by the hundred thousand. */
const MANIFEST_PAGE = 500;

export type ArchiveScope = { tenantId: string; kind: 'queue_items'; queueId: string } | { tenantId: string; kind: 'jobs' };

/**
 * The keys of a scope's manifest files, oldest first (the hour the rows ended, then the first
 * end in the file, then the key), read a page at a time in keyset order. `first_ended_at` is
 * carried as text to the microsecond, as the exports' keyset does with created_at.
 */
async function* manifestKeys(sql: Queryable, scope: ArchiveScope): AsyncGenerator<string> {
  let after: { hour: Date; first: string; key: string } | null = null;
  for (;;) {
    const page: Array<{ key: string; hour: Date; first: string }> = await sql<Array<{ key: string; hour: Date; first: string }>>`
      select key, hour, to_char(first_ended_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as first
      from archive_files
      where tenant_id = ${scope.tenantId} and kind = ${scope.kind}
        ${scope.kind === 'queue_items' ? sql`and queue_id = ${scope.queueId}` : sql``}
        ${after ? sql`and (hour, first_ended_at, key) > (${after.hour}, ${after.first}::text::timestamptz, ${after.key})` : sql``}
      order by hour, first_ended_at, key
      limit ${MANIFEST_PAGE}`;
    for (const f of page) yield f.key;
    if (page.length < MANIFEST_PAGE) return;
    const last = page[page.length - 1]!;
    after = { hour: last.hour, first: last.first, key: last.key };
  }
}

/**
 * The archived rows of a scope that `match`, as chunks bounded like the live ones (in rows and in
 * bytes of JSON text): file after file in manifest order, each file's lines in the order the pass
 * wrote them (end time, then id). One file is held at a time. A listed file that is gone is a
 * broken archive: an error, which cuts the download short, never a silent gap.
 */
export async function* archivedChunks<Row>(
  sql: Queryable, archive: RecordArchive, scope: ArchiveScope, match: (row: Row) => boolean,
): AsyncGenerator<Row[]> {
  for await (const key of manifestKeys(sql, scope)) {
    const lines = await archive.get(key);
    if (lines === null) throw new Error(`archive file missing: ${key}`);
    let rows: Row[] = [];
    let bytes = 0;
    for (const line of lines) {
      const row = JSON.parse(line) as Row;
      if (!match(row)) continue;
      rows.push(row);
      bytes += line.length;
      if (rows.length >= EXPORT_CHUNK_ROWS || bytes >= EXPORT_CHUNK_BYTES) {
        yield rows;
        rows = [];
        bytes = 0;
      }
    }
    if (rows.length > 0) yield rows;
  }
}

/** A timestamp of an archived row (`to_jsonb` text, microseconds and offset) as a Date, or null. */
export function archivedDate(v: unknown): Date | null {
  return v === null || v === undefined ? null : new Date(v as string);
}
