import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CsvError, parse as csvParser, type Info as CsvInfo } from 'csv-parse';
import { SingleBar } from 'cli-progress';
import { IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS, MAX_JSON_DEPTH, isAppError, jsonInputIssue, validate, type Engine } from '@svc/core';
import { AddQueueItemBody, BULK_MAX_ITEMS, type AddQueueItemInput } from '@svc/core/schemas';
import { optionalInt, optionalString, parse, positional, required } from '../args';
import type { CommandContext } from '../context';
import { CliError, EXIT, UsageError } from '../errors';

export const ITEMS_IMPORT_HELP = `Usage:
  svc items import --tenant <id|name> --queue <name> <file.csv | file.ndjson | -> [--format csv|ndjson]
                   [--chunk-size ${BULK_MAX_ITEMS}] [--json]

  Adds one queue item per row of a file, in chunks of up to ${BULK_MAX_ITEMS} rows (and 2 MiB), each
  chunk all or nothing through the bulk add. Safe to run again: each chunk carries a key derived
  from its content and position, so a chunk an earlier run added is skipped (for 24 hours).

  NDJSON (.ndjson, .jsonl): one object per line: {"data": {...}, "reference"?, "priority"?,
    "deadline"?, "postpone"?}, checked like the body of one POST .../items.
  CSV (.csv): a header row names the columns; reference, priority, deadline and postpone fill
    those fields, every other column becomes a key of data, its value a string. Empty cells are
    left out.

  -                 read standard input (then --format is required)
  --format          csv or ndjson, instead of the file's extension
  --chunk-size      rows per chunk, 1..${BULK_MAX_ITEMS}; a re-run must use the same to skip what was added
  --json            one JSON line per chunk on stdout, then a summary line

  Stops at the first bad row: "line N: <problem>", exit code 2; nothing of its chunk is added,
  the chunks before it stay added. Fix the file and run it again.`;

export type ImportFormat = 'csv' | 'ndjson';

/** The API's request body limit: no row, and no chunk, is larger than one request could be. */
export const MAX_ROW_BYTES = 2 * 1024 * 1024;
const MAX_CHUNK_CHARS = 2 * 1024 * 1024;
/** The idempotency scope of imported chunks: keys of API requests never meet them. */
export const IMPORT_IDEMPOTENCY_SCOPE = 'queue-items.import';
const CSV_FIELDS = new Set(['reference', 'priority', 'deadline', 'postpone']);

/** A row refused by its physical line number in the file: exit code 2, nothing of its chunk added. */
export class RowError extends CliError {
  constructor(readonly line: number, problem: string) {
    super(`line ${line}: ${problem}`, EXIT.usage, 'VALIDATION_ERROR');
  }
}

export interface ChunkReport {
  chunk: number;
  /** first and last physical line of the chunk's rows */
  lines: [number, number];
  items: number;
  /** items this run added: 0 when an earlier run had added the chunk */
  added: number;
  replayed: boolean;
}

export interface ImportSummary {
  done: true;
  tenant: string;
  queue: string;
  format: ImportFormat;
  chunks: number;
  items: number;
  added: number;
  replayed_chunks: number;
}

export interface ImportOptions {
  tenant: string;
  queue: string;
  format: ImportFormat;
  /** the file's bytes, streamed */
  source: AsyncIterable<Buffer>;
  chunkSize?: number;
  /** bytes read so far, for a progress bar */
  onBytes?: (bytes: number) => void;
  onChunk?: (report: ChunkReport) => void;
  /** a chunk is in flight in another run (or in one that was killed): told once per chunk */
  onWait?: (chunk: number) => void;
}

interface Row {
  line: number;
  /** the row's text as in the file: what its chunk's key is made of */
  raw: string;
  value: unknown;
}

// ---------------------------------------------------------------- reading

interface Line {
  no: number;
  /** without its line end */
  text: string;
  /** the line ended with CRLF (a CSV cell spanning this line end keeps its CR) */
  crlf: boolean;
}

function decodeLine(bytes: Buffer, no: number): Line {
  let b = bytes;
  if (no === 1 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3);
  const crlf = b.length > 0 && b[b.length - 1] === 0x0d;
  if (crlf) b = b.subarray(0, -1);
  if (!isUtf8(b)) throw new RowError(no, 'not valid UTF-8 (the file must be UTF-8)');
  return { no, text: b.toString('utf8'), crlf };
}

/**
 * The file's physical lines (LF or CRLF, a leading BOM dropped), each checked to be UTF-8 and at
 * most MAX_ROW_BYTES: a line without end is refused as soon as it passes the bound, so memory
 * stays bounded whatever the input.
 */
async function* physicalLines(source: AsyncIterable<Buffer>, onBytes?: (n: number) => void): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let partBytes = 0;
  let no = 0;
  const tooLong = () => new RowError(no + 1, `longer than ${MAX_ROW_BYTES / 1024 / 1024} MiB`);
  for await (const data of source) {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    onBytes?.(chunk.length);
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
      if (partBytes + piece.length > MAX_ROW_BYTES) throw tooLong();
      if (nl === -1) {
        if (piece.length) {
          parts.push(piece);
          partBytes += piece.length;
        }
        break;
      }
      const bytes = parts.length ? Buffer.concat([...parts, piece]) : piece;
      parts = [];
      partBytes = 0;
      start = nl + 1;
      yield decodeLine(bytes, ++no);
    }
  }
  if (partBytes > 0) yield decodeLine(Buffer.concat(parts), ++no);
}

async function* ndjsonRows(lines: AsyncIterable<Line>): AsyncGenerator<Row> {
  for await (const { no, text } of lines) {
    // blank lines (a trailing newline, spacing) carry no row
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      // V8 overflows its stack on absurd nesting: the row's problem, not the command's
      if (err instanceof RangeError) throw new RowError(no, `nested deeper than ${MAX_JSON_DEPTH} levels`);
      throw new RowError(no, `invalid JSON: ${(err as Error).message}`);
    }
    yield { line: no, raw: text, value };
  }
}

/** The header row: named, distinct columns. */
function csvHeader(cells: string[], line: number): string[] {
  const seen = new Set<string>();
  cells.forEach((name, i) => {
    if (name.trim() === '') throw new RowError(line, `the header's column ${i + 1} has no name`);
    if (seen.has(name)) throw new RowError(line, `the header names column "${name}" twice`);
    // assigning it would set data's prototype instead of a key (the API refuses the key too)
    if (name === '__proto__') throw new RowError(line, 'the header\'s column "__proto__" cannot name a key of data');
    seen.add(name);
  });
  if (!cells.some((c) => !CSV_FIELDS.has(c))) throw new RowError(line, 'the header has no column for data');
  return cells;
}

/** A CSV record as the body of one add: the reserved columns are fields, the others data. */
function csvRecord(header: string[], cells: string[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const data: Record<string, unknown> = {};
  header.forEach((name, i) => {
    const cell = cells[i]!;
    if (cell === '') return;
    if (!CSV_FIELDS.has(name)) data[name] = cell;
    // a whole number becomes a number; anything else is left for the schema to name
    else if (name === 'priority') row.priority = /^-?\d{1,9}$/.test(cell.trim()) ? Number(cell) : cell;
    else row[name] = cell;
  });
  row.data = data;
  return row;
}

/**
 * Puts back the CR of each CRLF line end a record spans: csv-parse reads the lines with LF ends
 * (so a file mixing CRLF and LF reads as one with a single end), and each LF left inside the
 * record is inside a quoted cell, in the same order in the record's text and in its cells.
 * `crlf` says, for each of those LFs in order, whether the file had CRLF there.
 */
function withCrlf(body: string, cells: string[], crlf: boolean[]): { body: string; cells: string[] } {
  let i = 0;
  const restore = (text: string) => text.replace(/\n/g, () => (crlf[i++] ? '\r\n' : '\n'));
  const restoredBody = restore(body);
  i = 0;
  return { body: restoredBody, cells: cells.map(restore) };
}

async function* csvRows(lines: AsyncIterable<Line>, seen: { header: string }): AsyncGenerator<Row> {
  // whether each line fed to the parser ended with CRLF, in order, from `nextEnd` on: the
  // lines the parser holds but has not yet returned in a record
  let lineEnds: boolean[] = [];
  let nextEnd = 0;
  async function* text() {
    for await (const l of lines) {
      lineEnds.push(l.crlf);
      yield `${l.text}\n`;
    }
  }
  const input = Readable.from(text());
  const parser = csvParser({ info: true, raw: true, relax_column_count: true, skip_empty_lines: true, max_record_size: MAX_ROW_BYTES });
  // a problem found while reading (a line too long, not UTF-8) ends the parse with its own error
  input.on('error', (err) => parser.destroy(err));
  input.pipe(parser);
  let header: string[] | undefined;
  let lastEnd = 0;
  try {
    for await (const rec of parser as AsyncIterable<{ record: string[]; raw: string; info: CsvInfo }>) {
      // csv-parse counts the line the record ends on; a quoted field may span several
      let body = rec.raw.replace(/^\n+/, '').replace(/\n$/, '');
      const spanned = body.match(/\n/g)?.length ?? 0;
      const line = rec.info.lines - spanned;
      lastEnd = rec.info.lines;
      // the raw text holds every line end the record took: blank lines skipped before it, those
      // inside its quoted cells, its own end
      const first = nextEnd;
      nextEnd += rec.raw.match(/\n/g)?.length ?? 0;
      let cells = rec.record;
      if (spanned > 0) {
        const from = first + rec.raw.length - rec.raw.replace(/^\n+/, '').length;
        ({ body, cells } = withCrlf(body, cells, lineEnds.slice(from, from + spanned)));
      }
      if (nextEnd >= 4096) {
        lineEnds = lineEnds.slice(nextEnd);
        nextEnd = 0;
      }
      if (!header) {
        header = csvHeader(cells, line);
        seen.header = body;
        continue;
      }
      if (cells.length !== header.length) {
        throw new RowError(line, `${cells.length} field${cells.length === 1 ? '' : 's'} where the header has ${header.length}`);
      }
      yield { line, raw: body, value: csvRecord(header, cells) };
    }
  } catch (err) {
    if (err instanceof CsvError) {
      // csv-parse finds an unclosed quote at the end of the file: point at the record it opens
      if (err.code === 'CSV_QUOTE_NOT_CLOSED') throw new RowError(lastEnd + 1, 'invalid CSV: a quoted field opened in this row is never closed');
      throw new RowError((err as unknown as { lines: number }).lines, `invalid CSV: ${err.message}`);
    }
    throw err;
  } finally {
    input.destroy();
  }
  if (!header) throw new RowError(1, 'no header row (the first line names the columns)');
}

// ---------------------------------------------------------------- checking

/** A core issue's field path as the row names it (`data → x`), without the request's `body`. */
function fieldOf(field: string): string {
  return field.replace(/^body( → )?/, '') || 'row';
}

/**
 * The checks of one POST .../items body, in the API's order: what no request may carry (NUL,
 * lone surrogates, nesting, __proto__), then the schema.
 */
function checkRow(row: Row): AddQueueItemInput {
  const found = jsonInputIssue(row.value, ['body']);
  if (found) throw new RowError(row.line, `${fieldOf(found.field)}: ${found.message}`);
  try {
    return validate(AddQueueItemBody, row.value);
  } catch (err) {
    if (isAppError(err) && err.code === 'VALIDATION_ERROR' && Array.isArray(err.details) && err.details.length) {
      const d = (err.details as Array<{ field: string; message: string }>)[0]!;
      throw new RowError(row.line, `${fieldOf(d.field)}: ${d.message}`);
    }
    throw err;
  }
}

// ---------------------------------------------------------------- chunks

interface Chunk {
  index: number;
  rows: Row[];
  chars: number;
}

async function* chunksOf(rows: AsyncIterable<Row>, size: number): AsyncGenerator<Chunk> {
  let chunk: Chunk = { index: 1, rows: [], chars: 0 };
  for await (const row of rows) {
    // closing on size as well keeps a chunk within what one API request may carry
    if (chunk.rows.length > 0 && (chunk.rows.length >= size || chunk.chars + row.raw.length > MAX_CHUNK_CHARS)) {
      yield chunk;
      chunk = { index: chunk.index + 1, rows: [], chars: 0 };
    }
    chunk.rows.push(row);
    chunk.chars += row.raw.length;
  }
  if (chunk.rows.length > 0) yield chunk;
}

/**
 * The chunk's Idempotency-Key: its rows' text, its place in the file and what reads them (tenant,
 * queue, format, CSV header), so the same chunk of the same file is the same key on every run,
 * and the same rows elsewhere in the file (or under another header) are another.
 */
function chunkKey(ids: { tenantId: string; queueId: string; format: ImportFormat; header: string }, chunk: Chunk): string {
  const h = createHash('sha256');
  h.update(JSON.stringify(['svc-items-import/1', ids.tenantId, ids.queueId, ids.format, ids.header, chunk.index, chunk.rows.length]));
  for (const r of chunk.rows) h.update(`\n${r.raw}`);
  return `svc-import:${h.digest('hex')}`;
}

/** Maps a core refusal of the whole chunk back to the row it names, else to the chunk's lines. */
function chunkError(err: unknown, chunk: Chunk): unknown {
  if (!isAppError(err) || err.code !== 'VALIDATION_ERROR' || !Array.isArray(err.details)) return err;
  const d = (err.details as Array<{ field: string; message: string }>)[0];
  if (!d) return err;
  const m = /^body → items → (\d+)(?: → (.*))?$/.exec(d.field);
  const row = m ? chunk.rows[Number(m[1])] : undefined;
  if (row) return new RowError(row.line, `${m![2] ?? 'row'}: ${d.message}`);
  const first = chunk.rows[0]!.line;
  const last = chunk.rows[chunk.rows.length - 1]!.line;
  return new CliError(`lines ${first}–${last}: ${d.message}`, EXIT.usage, 'VALIDATION_ERROR');
}

/**
 * Imports a file's rows into a queue, chunk by chunk, and stops at the first bad row (its chunk
 * is not sent). Unknown tenant or queue (or another tenant's) → 404 before anything is read.
 */
export async function importItems(engine: Engine, opts: ImportOptions): Promise<ImportSummary> {
  const size = opts.chunkSize ?? BULK_MAX_ITEMS;
  const tenant = await engine.tenants.resolve(opts.tenant);
  const queue = await engine.items.activeQueueByName(tenant.id, opts.queue);
  const lines = physicalLines(opts.source, opts.onBytes);
  // the CSV header is part of every chunk's meaning (renaming a column changes its items' data)
  const read = { header: '' };
  const rows = opts.format === 'ndjson' ? ndjsonRows(lines) : csvRows(lines, read);
  const summary: ImportSummary = {
    done: true, tenant: tenant.name, queue: queue.name, format: opts.format, chunks: 0, items: 0, added: 0, replayed_chunks: 0,
  };
  for await (const chunk of chunksOf(rows, size)) {
    const items = chunk.rows.map(checkRow);
    const key = chunkKey({ tenantId: tenant.id, queueId: queue.id, format: opts.format, header: read.header }, chunk);
    let result;
    // a run killed mid-chunk leaves its claim in flight until the lease lapses: a re-run right
    // after the crash waits for it (then adds the chunk, or replays it if it did commit)
    const waitUntil = Date.now() + (IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS + 5) * 1000;
    for (let told = false; ; ) {
      try {
        result = await engine.idempotency.run(
          { tenantId: tenant.id, scope: IMPORT_IDEMPOTENCY_SCOPE, key },
          { queue_id: queue.id, items },
          async (claim) => {
            const added = await engine.items.addMany(queue, items, {
              inTransaction: claim.active ? (tx, n) => claim.record(tx, { status: 200, body: { added: n } }) : undefined,
            });
            return { status: 200, body: { added } };
          },
        );
        break;
      } catch (err) {
        const inFlight = isAppError(err) && err.status === 409 && err.headers?.['Retry-After'] !== undefined;
        if (!inFlight || Date.now() > waitUntil) throw chunkError(err, chunk);
        if (!told) opts.onWait?.(chunk.index);
        told = true;
        await sleep(1000);
      }
    }
    const report: ChunkReport = {
      chunk: chunk.index,
      lines: [chunk.rows[0]!.line, chunk.rows[chunk.rows.length - 1]!.line],
      items: chunk.rows.length,
      added: result.replayed ? 0 : (result.body as { added: number }).added,
      replayed: result.replayed,
    };
    summary.chunks++;
    summary.items += report.items;
    summary.added += report.added;
    if (report.replayed) summary.replayed_chunks++;
    opts.onChunk?.(report);
  }
  return summary;
}

// ---------------------------------------------------------------- the command

function formatOf(file: string, flag: string | undefined): ImportFormat {
  if (flag !== undefined) {
    if (flag === 'csv' || flag === 'ndjson') return flag;
    throw new UsageError(`--format must be csv or ndjson, not "${flag}"`, ITEMS_IMPORT_HELP);
  }
  if (file === '-') throw new UsageError('--format is required when reading standard input', ITEMS_IMPORT_HELP);
  const ext = path.extname(file).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  throw new UsageError(`cannot tell the format of ${file} from its extension (.csv, .ndjson, .jsonl): give --format`, ITEMS_IMPORT_HELP);
}

/** The file's size for the bar's total, and a missing file reported before the database is opened. */
function fileSize(file: string): number | undefined {
  try {
    const st = statSync(file);
    if (st.isDirectory()) throw new CliError(`cannot read ${file}: it is a directory`, EXIT.usage, 'USAGE');
    return st.isFile() ? st.size : undefined;
  } catch (err) {
    if (err instanceof CliError) throw err;
    const code = (err as { code?: string }).code;
    throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`, code === 'ENOENT' ? EXIT.notFound : EXIT.failed, code === 'ENOENT' ? 'NOT_FOUND' : 'FAILED');
  }
}

/** The terminal's bar: bytes against the file's size (rate and time left), or a plain count for a stream. */
function progressBar(terminal: NodeJS.WriteStream, total: number | undefined) {
  const started = Date.now();
  let items = 0;
  let bytes = 0;
  const bar = new SingleBar({
    stream: terminal,
    format: total === undefined
      ? 'importing {items} items | {rate} items/s | {read} read'
      : 'importing [{bar}] {percentage}% | {items} items | {rate} items/s | {eta_formatted} left',
    hideCursor: true,
    clearOnComplete: true,
    etaBuffer: 50,
  });
  const tokens = () => {
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    return { items, rate: Math.round(items / seconds), read: `${(bytes / 1024 / 1024).toFixed(1)} MiB` };
  };
  bar.start(total ?? 0, 0, tokens());
  return {
    bytes: (n: number) => {
      bytes += n;
      bar.update(bytes, tokens());
    },
    chunk: (r: ChunkReport) => {
      items += r.items;
      bar.update(bytes, tokens());
    },
    stop: () => bar.stop(),
  };
}

/** `svc items import`: parses, streams the file, prints a bar (terminal) or one JSON line per chunk. */
export async function runItemsImport(args: string[], ctx: CommandContext): Promise<void> {
  const p = parse(args, {
    tenant: { type: 'string' }, queue: { type: 'string' }, format: { type: 'string' }, 'chunk-size': { type: 'string' },
  }, ITEMS_IMPORT_HELP, 1);
  if (p.values.help) return void ctx.output(false).text(ITEMS_IMPORT_HELP);
  const file = positional(p, 0, 'file to import (or - for standard input)', ITEMS_IMPORT_HELP);
  const tenant = required(p, 'tenant', ITEMS_IMPORT_HELP);
  const queue = required(p, 'queue', ITEMS_IMPORT_HELP);
  const format = formatOf(file, optionalString(p, 'format'));
  const chunkSize = optionalInt(p, 'chunk-size') ?? BULK_MAX_ITEMS;
  if (typeof chunkSize !== 'number' || chunkSize < 1 || chunkSize > BULK_MAX_ITEMS) {
    throw new UsageError(`--chunk-size must be a whole number from 1 to ${BULK_MAX_ITEMS}`, ITEMS_IMPORT_HELP);
  }
  const json = !!p.values.json;
  let source: AsyncIterable<Buffer>;
  let total: number | undefined;
  // closed here when the import ends before reading it all (unknown queue, a bad row)
  let opened: Readable | undefined;
  if (file === '-') {
    if (!ctx.io.stdinStream) throw new CliError('standard input cannot be streamed here', EXIT.usage, 'USAGE');
    source = ctx.io.stdinStream();
  } else {
    total = fileSize(file);
    source = opened = createReadStream(file);
  }
  const bar = !json && ctx.io.progressTerminal ? progressBar(ctx.io.progressTerminal, total) : undefined;
  const engine = await ctx.engine();
  let summary: ImportSummary;
  try {
    summary = await importItems(engine, {
      tenant, queue, format, source, chunkSize,
      onBytes: bar?.bytes,
      onWait: (n) => ctx.io.stderr(`svc: chunk ${n} is in flight in another run, or in one that stopped: waiting for it (up to ${IDEMPOTENCY_IN_FLIGHT_LEASE_SECONDS} s)\n`),
      onChunk: (r) => {
        bar?.chunk(r);
        // one compact line per chunk, as it commits: a script can follow a long import
        if (json) ctx.io.stdout(`${JSON.stringify(r)}\n`);
      },
    });
  } finally {
    bar?.stop();
    opened?.destroy();
  }
  if (json) ctx.io.stdout(`${JSON.stringify(summary)}\n`);
  else {
    const skipped = summary.items - summary.added;
    ctx.io.stdout(
      `Imported ${file === '-' ? 'stdin' : file} into queue ${summary.queue} of tenant ${summary.tenant}: ${summary.added} items added` +
      `${skipped ? `, ${skipped} already added by an earlier run` : ''} (${summary.chunks} chunk${summary.chunks === 1 ? '' : 's'})\n`,
    );
  }
}
