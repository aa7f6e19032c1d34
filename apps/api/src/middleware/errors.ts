import type { Middleware } from 'koa';
import { es, AppError, DEFAULT_MESSAGES, HttpError, ValidationError, type ErrorCode } from '@svc/core';
import type { AppState } from '../http/state';

function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 401: return 'UNAUTHORIZED';
    case 403: return 'FORBIDDEN';
    case 404: return 'NOT_FOUND';
    case 409: return 'CONFLICT';
    case 413: return 'PAYLOAD_TOO_LARGE';
    case 422: return 'VALIDATION_ERROR';
    case 429: return 'RATE_LIMIT_EXCEEDED';
    default: return status >= 500 ? 'INTERNAL_ERROR' : 'HTTP_ERROR';
  }
}

/**
 * The one place where an error becomes a response (docs/architecture.md, invariant 5):
 * `{success:false, error:{code,message,details?,request_id}}`. Validation errors also carry the
 * `detail: [{loc,msg,type}]` form the contract shows. No stack trace ever leaves the process.
 */
export function errorEnvelope(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        // what the routers answered without a body: no route, or a method the route lacks (Allow is set)
        if (ctx.status === 404) throw new AppError('NOT_FOUND', 404, es.http.routeNotFound);
        if (ctx.status === 405) throw new HttpError(405, es.http.methodNotAllowed);
        if (ctx.status === 501) throw new HttpError(501, es.http.methodNotImplemented);
      }
    } catch (raw) {
      const err = raw as Error & { status?: number; statusCode?: number; expose?: boolean; headers?: Record<string, string> };
      let status: number;
      let code: ErrorCode;
      let message: string;
      let details: unknown;
      if (err instanceof AppError) {
        ({ status, code, message, details } = err);
      } else {
        status = err.status ?? err.statusCode ?? 500;
        if (status < 400 || status > 599) status = 500;
        code = codeForStatus(status);
        message = status < 500 && err.expose ? err.message : DEFAULT_MESSAGES[code];
      }
      // a typed 5xx (the console not built, a dependency down) is an expected answer: one line
      // without a stack; anything else reaching here is a defect, logged with its stack
      if (status >= 500 && err instanceof AppError) {
        ctx.state.log?.warn('answered with a server error', { code, status });
      } else if (status >= 500) {
        ctx.state.log?.error('unhandled error', { err: { message: err.message, stack: err.stack, name: err.name } });
      }
      for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
      ctx.status = status;
      ctx.body = {
        success: false,
        error: {
          code,
          message,
          ...(details !== undefined ? { details } : {}),
          request_id: ctx.state.requestId,
        },
        ...(err instanceof ValidationError
          ? { detail: err.issues.map((i) => ({ loc: i.loc, msg: i.message, type: i.type })) }
          : {}),
      };
    }
  };
}
