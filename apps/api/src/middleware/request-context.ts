import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { clientIp } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * First in the chain: gives the request its id (an incoming X-Request-Id is honoured when it is
 * a sane token), a logger that carries it on every line, the client IP, and one access-log line.
 */
export function requestContext(deps: ApiDeps): Middleware<AppState> {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : randomUUID();
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestId;
    ctx.state.log = deps.logger.child({ request_id: requestId });
    ctx.state.clientIp = clientIp(ctx.req.socket.remoteAddress ?? '', ctx.get('X-Forwarded-For') || undefined, deps.config.trustedProxyCount);
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      ctx.state.log.info('request', {
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        ip: ctx.state.clientIp,
      });
    }
  };
}
