import { es, UnauthorizedError } from '@svc/core';
import { metricsAuthorized, renderMetrics } from '@svc/core/observability';
import type { ApiDeps } from '../deps';
import { createRouter } from '../http/router';

/**
 * `GET /metrics`: the Prometheus exposition of this API process, with the platform's state
 * gauges (queues by workspace, machines, outbox: read from Postgres, cached; metrics/platform.ts).
 * Not under /api/v1 (no API key, no rate limit). The gauges name every workspace and queue, so the
 * public port serves them only behind METRICS_TOKEN (Bearer); without a token the route does not
 * exist there (404) and metrics are scraped from the METRICS_PORT listener main.ts starts, a port
 * the operator keeps off the load balancer (docs/decisions/observability.md).
 */
export function metricsRoute(deps: ApiDeps) {
  deps.engine.platformGauges({ ttlMs: deps.config.metricsStateTtlMs, maxQueues: deps.config.metricsMaxQueues });
  const router = createRouter();
  const token = deps.config.metricsToken;
  if (!token) return router;
  router.get('/metrics', async (ctx) => {
    if (!metricsAuthorized(token, ctx.get('Authorization') || undefined)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new UnauthorizedError(es.http.metricsTokenInvalid);
    }
    const { contentType, body } = await renderMetrics();
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
