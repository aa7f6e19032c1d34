import { createWriteStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { NotFoundError, ValidationError, es, isAppError, textIssue, textProblem, validate } from '@svc/core';
import {
  EXPORT_FORMATS, QUEUE_ITEM_EXPORT_COLUMNS, QUEUE_ITEM_IMPORT_COLUMNS, QueueItemExportQuery, type ExportFormat,
} from '@svc/core/schemas';
import { EXCEPTION_TYPES } from '@svc/core/queue-items/exception-types';
import { optionalString, parse, required } from '../args';
import type { CommandContext } from '../context';
import { UsageError } from '../errors';

export const ITEMS_EXPORT_HELP = `Usage:
  svc items export --tenant T --queue Q [--format ndjson|csv] [--status S] [--exception-type business|application]
                   [--reference R] [--data JSON] [--all-fields] [--include-archived] [FILE|-]

  Writes every item of queue Q (by name, active or not) of tenant T (name or id) that matches the
  filters, newest first, to FILE, or to standard output without one or with "-".
  --format      ndjson (default): one item a line, {data, reference, priority, deadline, postpone},
                which \`svc items import\` reads back as it stands; csv: a header, then one row per
                item with every field of the API's record, data and result as JSON text (for
                reading and spreadsheets: a text starting with = + - @ gets a leading ')
  --all-fields  NDJSON lines carry every field of the API's record (id, status, result, …) too:
                import refuses those fields
  --status      only items in this status (new, in_progress, completed, failed, dead_letter, …)
  --exception-type business|application
                only items whose last failure was of this kind: business (final: the item stays
                failed) or application (retried, then dead_letter; a completed item keeps the kind)
  --reference   only items with exactly this reference
  --data        only items whose data contains this JSON object, e.g. '{"customer":"ACME"}'
  --include-archived
                also the queue's items that retention archived (ARCHIVE_DIR or ARCHIVE_S3_BUCKET must name the archive)
                and that match the filters, after the live ones; every line or row then carries
                \`archived\` (true or false), which import refuses: \`svc archive restore\` brings
                archived items back`;

/** The API's field names in a filter's validation error, as this command's flags. */
function asFlags(err: unknown): unknown {
  if (!isAppError(err) || err.code !== 'VALIDATION_ERROR' || !Array.isArray(err.details)) return err;
  for (const d of err.details as Array<{ field: string }>) d.field = d.field.replace(/^query → (\w+)/, '--$1');
  return err;
}

/** Standard output as a stream with backpressure: the process's own, else one over `io.stdout`. */
function stdoutOf(ctx: CommandContext): NodeJS.WritableStream {
  if (ctx.io.stdoutStream) return ctx.io.stdoutStream;
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      ctx.io.stdout(chunk.toString('utf8'));
      done();
    },
  });
}

/**
 * `svc items export`: the queue's items through the engine's export (core export/stream.ts), the
 * very bytes the API's export route sends, written with backpressure to a file or standard output.
 */
export async function runItemsExport(args: string[], ctx: CommandContext): Promise<void> {
  const p = parse(args, {
    tenant: { type: 'string' }, queue: { type: 'string' }, format: { type: 'string' },
    status: { type: 'string' }, reference: { type: 'string' }, data: { type: 'string' }, 'all-fields': { type: 'boolean' },
    'include-archived': { type: 'boolean' }, 'exception-type': { type: 'string' },
  }, ITEMS_EXPORT_HELP, 1);
  if (p.values.help) return void ctx.output(false).text(ITEMS_EXPORT_HELP);
  const tenantRef = required(p, 'tenant', ITEMS_EXPORT_HELP);
  const queueName = required(p, 'queue', ITEMS_EXPORT_HELP);
  const format = (optionalString(p, 'format') ?? 'ndjson') as ExportFormat;
  if (!EXPORT_FORMATS.includes(format)) throw new UsageError(`--format must be ${EXPORT_FORMATS.join(' or ')}`, ITEMS_EXPORT_HELP);
  const target = p.positionals[0] ?? '-';
  const filters: Record<string, string> = {};
  const exceptionType = optionalString(p, 'exception-type');
  if (exceptionType !== undefined) {
    if (!(EXCEPTION_TYPES as readonly string[]).includes(exceptionType)) throw new UsageError(`--exception-type must be ${EXCEPTION_TYPES.join(' or ')}`, ITEMS_EXPORT_HELP);
    filters.exception_type = exceptionType;
  }
  for (const name of ['status', 'reference', 'data'] as const) {
    const value = optionalString(p, name);
    if (value === undefined) continue;
    // what the API refuses of any query parameter before its schema (text Postgres cannot store)
    const problem = textProblem(value);
    if (problem) throw new ValidationError([textIssue([`--${name}`], problem)]);
    filters[name] = value;
  }
  if (p.values['include-archived']) filters.include_archived = 'true';
  const engine = await ctx.engine();
  if (p.values['include-archived'] && !engine.archive.configured()) {
    throw new UsageError('no archive is configured (ARCHIVE_DIR or ARCHIVE_S3_BUCKET): it names the archive that --include-archived reads', ITEMS_EXPORT_HELP);
  }
  const tenant = await engine.tenants.resolve(tenantRef);
  const queue = await engine.catalog.findByName(tenant.id, 'queue', queueName);
  if (!queue) throw new NotFoundError(es.queues.queueNotFound);
  let body;
  try {
    // NDJSON as import reads it, unless asked for more; CSV cannot be re-imported whatever its columns (data is one cell)
    const columns = format === 'ndjson' && !p.values['all-fields'] ? QUEUE_ITEM_IMPORT_COLUMNS : QUEUE_ITEM_EXPORT_COLUMNS;
    body = await engine.items.export(queue, validate(QueueItemExportQuery, filters, 'query'), format, columns);
  } catch (err) {
    throw asFlags(err);
  }
  if (target === '-') await pipeline(body, stdoutOf(ctx), { end: !ctx.io.stdoutStream });
  else await pipeline(body, createWriteStream(target));
}
