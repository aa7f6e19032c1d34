import type { Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import { HttpError, PayloadTooLargeError, ValidationError } from '@svc/core';
import type { AppState } from '../http/state';

/** The public limit: ordinary JSON endpoints accept bodies up to 2 MiB. */
export const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const parser = bodyParser({
  enableTypes: ['json'],
  jsonLimit: '2mb',
  strict: true,
  onerror: (err: Error & { type?: string; status?: number }) => {
    if (err.type === 'entity.too.large' || err.status === 413) throw new PayloadTooLargeError();
    if (err.status === 415 || err.type === 'encoding.unsupported') throw new HttpError(415, 'Codificación de contenido no soportada');
    throw ValidationError.single(['body'], 'JSON mal formado', 'json_invalid', 'El cuerpo no es un JSON válido');
  },
});

/**
 * Runs before any handler: a body over 2 MiB is refused (413) from its Content-Length without
 * being read, a non-JSON body is refused (415), malformed JSON is a 422.
 */
export function jsonBody(): Middleware<AppState> {
  return async (ctx, next) => {
    const length = Number(ctx.get('Content-Length') || 0);
    if (length > BODY_LIMIT_BYTES) throw new PayloadTooLargeError();
    const hasBody = ctx.request.length > 0 || ctx.get('Transfer-Encoding') !== '';
    if (hasBody && !ctx.is('application/json', 'application/*+json')) {
      if (!['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(ctx.method) || length > 0) {
        throw new HttpError(415, 'El cuerpo debe ser JSON (Content-Type: application/json)');
      }
    }
    await parser(ctx, next);
  };
}
