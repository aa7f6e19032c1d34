import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { AppState } from './state';
import { DEFAULT_EXPORT_FORMAT, EXPORT_CONTENT_TYPES, type ExportFormat } from '@svc/core/schemas';

/**
 * Requests per minute of an export route: each is a whole list read to its end, so a client
 * downloading more often than this is polling, which the lists serve better.
 */
export const EXPORT_RATE_LIMIT = 10;

/**
 * The export's format: `?format=` when given (a value outside csv/ndjson is the query's 422),
 * else what `Accept` prefers of text/csv and application/x-ndjson, else NDJSON. An Accept naming
 * neither is not refused: generic clients send application/json, or any type, with every request
 * (docs/decisions/export.md).
 */
export function exportFormatOf(ctx: Context, query: { format?: ExportFormat }): ExportFormat {
  if (query.format !== undefined) return query.format;
  const accepted = ctx.accepts(EXPORT_CONTENT_TYPES.ndjson, EXPORT_CONTENT_TYPES.csv);
  return accepted === EXPORT_CONTENT_TYPES.csv ? 'csv' : DEFAULT_EXPORT_FORMAT;
}

/**
 * Answers a download: 200 with the file's type and name, the body piped to the response with
 * backpressure (Koa's pipeline). A read that fails once bytes are on their way cannot change the
 * status any more: the pipeline then destroys the response, and the client sees a transfer cut
 * short (no final chunk) instead of a file that looks complete.
 */
export function sendDownload(ctx: Context & { state: AppState }, body: Readable, format: ExportFormat, baseName: string): void {
  // the access line is written as the answer starts: a download cut short says so on its own
  // (the app is silent, so Koa logs nothing of an error past the headers)
  body.once('error', (err) => ctx.state.log.warn('download cut short', { path: ctx.path, err: err.message }));
  ctx.status = 200;
  ctx.attachment(`${baseName}.${format}`);
  ctx.type = `${EXPORT_CONTENT_TYPES[format]}; charset=utf-8`;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = body;
}
