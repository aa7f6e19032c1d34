import { Readable, pipeline } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { stringify } from 'csv-stringify';

/**
 * The streaming exports (docs/decisions/export.md): every row a list's filters match, read in
 * keyset chunks and written as CSV or NDJSON, in the list's order (created_at desc, id desc).
 */
export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export const DEFAULT_EXPORT_FORMAT: ExportFormat = 'ndjson';

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv',
};

export const ExportFormatQuery = Type.Optional(Type.Unsafe<ExportFormat>({
  type: 'string',
  enum: [...EXPORT_FORMATS],
  description: 'ndjson (one JSON object a line) or csv (a header line, then one row per record); wins over the Accept header; ' +
    'without either, ndjson',
}));

/**
 * Rows per statement. Each chunk is one short statement of its own (no transaction or cursor
 * held across chunks), so the memory an export holds is one chunk's rows whatever the total.
 */
export const EXPORT_CHUNK_ROWS = 1000;

/**
 * A chunk's bound in bytes as Postgres stores its JSON columns (`pg_column_size`, read without
 * decompressing): an item's data may be megabytes, and a thousand of those would be a chunk of
 * gigabytes. A chunk ends at the row that passes it; its first row is always taken.
 */
export const EXPORT_CHUNK_BYTES = 8 * 1024 * 1024;

/** Where the walk stands: the last row's created_at to the microsecond (as text) and its id. */
export interface KeysetPosition {
  at: string;
  id: string;
}

/**
 * Postgres's created_at as text to the microsecond: a JS Date would cut it to the millisecond
 * and a chunk would then repeat or skip rows that share a millisecond.
 */
export const KEYSET_AT_SQL = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** A row as a chunk reads it: the record, plus where the walk stands after it. */
export interface KeysetRow {
  export_at: string;
  export_id: string;
}

/**
 * Walks a keyset-ordered read chunk by chunk: `chunk(after, limit)` returns the rows strictly
 * after `after` (null: from the start) in the export's order, at most `limit` and possibly fewer
 * (EXPORT_CHUNK_BYTES), so only an empty chunk ends the walk. A consumer that stops iterating
 * (the client left) stops the reads too.
 */
export async function* walkKeyset<Row extends KeysetRow>(
  chunk: (after: KeysetPosition | null, limit: number) => Promise<Row[]>,
  maxLimit = EXPORT_CHUNK_ROWS,
): AsyncGenerator<Row[]> {
  let after: KeysetPosition | null = null;
  // Postgres sizes every row up to the limit before the byte bound cuts the chunk: start small and
  // grow while chunks come back full, so large payloads cost Postgres about what is sent
  let limit = Math.min(maxLimit, Math.max(1, Math.floor(maxLimit / 10)));
  for (;;) {
    const rows = await chunk(after, limit);
    if (rows.length === 0) return;
    yield rows;
    const last = rows[rows.length - 1]!;
    after = { at: last.export_at, id: last.export_id };
    limit = rows.length === limit ? Math.min(maxLimit, limit * 2) : Math.max(1, Math.min(maxLimit, rows.length * 2));
  }
}

/**
 * Reads the first chunk now, so that a failure before the first byte (Postgres unreachable) is
 * an error answer like any other, not a download cut short.
 */
export async function primed<T>(chunks: AsyncGenerator<T>): Promise<AsyncGenerator<T>> {
  const first = await chunks.next();
  return (async function* resumed() {
    if (first.done) return;
    yield first.value;
    yield* chunks;
  })();
}

/**
 * OWASP's guard against CSV injection: a text cell a spreadsheet would read as a formula (it
 * starts with = + - @, a tab or a carriage return) gets a leading apostrophe. So does one whose
 * first character after leading spaces, tabs, CRs and LFs is = + - or @: some spreadsheets trim
 * a cell before they evaluate it, so ` =1+1` and `\n=1+1` are formulas there. Only CSV: NDJSON
 * is data for programs and stays exact.
 */
export function neutralizeFormula(text: string): string {
  return /^[\t\r]|^[ \t\r\n]*[=+\-@]/.test(text) ? `'${text}` : text;
}

/** A CSV cell: null empty, objects as their JSON text, text guarded against formulas. */
function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return neutralizeFormula(value);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * The bytes of an export: NDJSON (one JSON record a line) or CSV (a header of `columns`, then one
 * row per record). Pulled by its reader: a chunk is read from Postgres only when the previous one
 * has been taken, so a slow client holds one chunk, not the export. A failed read destroys the
 * stream with its error; destroying the stream (the client left) ends the reads.
 */
export function exportStream<R extends object>(
  chunks: AsyncIterable<R[]>,
  columns: readonly (keyof R & string)[],
  format: ExportFormat,
): Readable {
  if (format === 'ndjson') {
    return Readable.from((async function* lines() {
      for await (const rows of chunks) {
        let text = '';
        for (const row of rows) text += `${JSON.stringify(row)}\n`;
        yield text;
      }
    })(), { objectMode: false });
  }
  const records = Readable.from((async function* cells() {
    for await (const rows of chunks) {
      for (const row of rows) yield columns.map((c) => csvCell((row as Record<string, unknown>)[c]));
    }
  })());
  const csv = stringify({ header: true, columns: [...columns], record_delimiter: 'windows' });
  pipeline(records, csv, () => undefined);
  return csv;
}
