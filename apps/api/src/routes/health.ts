import type { ApiDeps } from '../deps';
import { createRouter } from '../http/router';
import { ok } from '../http/respond';

/** Liveness (`/health`) and readiness (`/ready`: Postgres and Redis answer). Not under /api/v1. */
export function healthRoutes(deps: ApiDeps) {
  const router = createRouter();
  router.get('/health', (ctx) => {
    ok(ctx, { status: 'ok' });
  });
  router.get('/ready', async (ctx) => {
    const [pg, redis] = await Promise.allSettled([deps.engine.ping(), deps.redis.ping()]);
    const ready = pg.status === 'fulfilled' && redis.status === 'fulfilled';
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      success: ready,
      data: { postgres: pg.status === 'fulfilled' ? 'ok' : 'down', redis: redis.status === 'fulfilled' ? 'ok' : 'down' },
    };
  });
  return router;
}
