import Koa from 'koa';
import type { ApiDeps } from './deps';
import type { AppState } from './http/state';
import { requestContext } from './middleware/request-context';
import { errorEnvelope } from './middleware/errors';
import { securityHeaders } from './middleware/security-headers';
import { queuesBoard } from './admin/queues-board';
import { consoleFiles } from './console/serve';
import { healthRoutes } from './routes/health';
import { metricsRoute } from './routes/metrics';
import { apiRoutes } from './routes';

/** Builds the Koa app from its dependencies; tests drive `app.callback()` with supertest. */
export function createApp(deps: ApiDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: false });
  app.silent = true;
  app.use(requestContext(deps));
  app.use(securityHeaders(deps.config.trustedProxyCount));
  app.use(errorEnvelope());
  app.use(consoleFiles(deps.consoleDir));
  app.use(queuesBoard(deps));
  const health = healthRoutes(deps);
  app.use(health.routes());
  app.use(metricsRoute(deps).routes());
  const api = apiRoutes(deps);
  app.use(api.routes());
  // sets 405/501 with an Allow header; the error envelope turns them into HTTP_ERROR bodies
  app.use(api.allowedMethods());
  return app;
}
