import { metricsAuthorized, registerPlatformGauges, renderMetrics, UnauthorizedError } from '@svc/core';
import type { ApiDeps } from '../deps';
import { createRouter } from '../http/router';

/**
 * `GET /metrics`: the Prometheus exposition of this API process, with the platform's state
 * gauges (queues, machines, outbox: read from Postgres, cached; metrics/platform.ts). Not under
 * /api/v1 (no API key, no rate limit); with METRICS_TOKEN set it asks for that Bearer token.
 */
export function metricsRoute(deps: ApiDeps) {
  registerPlatformGauges(deps.sql, { ttlMs: deps.config.metricsStateTtlMs, maxQueues: deps.config.metricsMaxQueues });
  const router = createRouter();
  router.get('/metrics', async (ctx) => {
    if (!metricsAuthorized(deps.config.metricsToken, ctx.get('Authorization') || undefined)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new UnauthorizedError('Token de métricas inválido');
    }
    const { contentType, body } = await renderMetrics();
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
