import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { clientIp, type Logger } from '@svc/core';
import { describeActiveSpan, observeHttpRequest, tracingEnabled, UNMATCHED_ROUTE } from '@svc/core/observability';
import { BOARD_PATH } from '../admin/queues-board';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';
import { settleUnreadBody } from '../http/unread-body';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A request's state. Its logger (every line carries the request id) is made on first use: most
 * requests log only their access line, and a child logger per request was a measurable share of
 * the API's work under load (BENCHMARKS.md, B1).
 */
class RequestState implements AppState {
  apiKey?: AppState['apiKey'];
  user?: AppState['user'];
  private child?: Logger;

  constructor(
    public requestId: string,
    public clientIp: string,
    private readonly base: Logger,
  ) {}

  get log(): Logger {
    return (this.child ??= this.base.child({ request_id: this.requestId }));
  }
}

/**
 * First in the chain: gives the request its id (an incoming X-Request-Id is honoured when it is
 * a sane token), a logger that carries it on every line, the client IP, and one access-log line.
 */
export function requestContext(deps: ApiDeps): Middleware<AppState> {
  const logger = deps.logger;
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : randomUUID();
    const started = process.hrtime.bigint();
    const ip = clientIp(ctx.req.socket.remoteAddress ?? '', ctx.get('X-Forwarded-For') || undefined, deps.config.trustedProxyCount);
    ctx.state = new RequestState(requestId, ip, logger);
    // straight to Node: Koa's set() builds arrays per call (allocation profile of B1)
    ctx.res.setHeader('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const settling = settleUnreadBody(ctx.req, ctx.res);
      if (settling) await settling;
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const route = routeLabel(ctx);
      observeHttpRequest(route, ctx.method, ctx.status, durationMs / 1000);
      if (tracingEnabled()) describeActiveSpan(`${ctx.method} ${route}`, { 'http.route': route, 'svc.request_id': requestId });
      logger.info('request', {
        request_id: requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        duration_ms: durationMs,
        ip,
      });
    }
  };
}

/**
 * The route template a request matched (`/api/v1/jobs/:job_id`), never its raw path: the console's
 * and the queues board's files count as their prefix, and every path no route matched (a 404, a
 * 405) as one label, so random paths add no series.
 */
function routeLabel(ctx: { _matchedRoute?: string | RegExp; path: string }): string {
  const matched = ctx._matchedRoute;
  if (typeof matched === 'string') return matched;
  if (ctx.path === '/console' || ctx.path.startsWith('/console/')) return '/console';
  if (ctx.path === BOARD_PATH || ctx.path.startsWith(`${BOARD_PATH}/`)) return BOARD_PATH;
  return UNMATCHED_ROUTE;
}
