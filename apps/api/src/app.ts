import Koa from 'koa';
import type { ApiDeps } from './deps';
import type { AppState } from './http/state';
import { requestContext } from './middleware/request-context';
import { errorEnvelope } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { queuesBoard } from './admin/queues-board';
import { healthRoutes } from './routes/health';
import { apiRoutes } from './routes';

/** Builds the Koa app from its dependencies; tests drive `app.callback()` with supertest. */
export function createApp(deps: ApiDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: false });
  app.silent = true;
  app.use(requestContext(deps));
  app.use(errorEnvelope());
  // Bull Board (/admin/queues, admin token) before the JSON body rules, which are the API's
  app.use(queuesBoard(deps));
  app.use(jsonBody());
  const health = healthRoutes(deps);
  app.use(health.routes());
  const api = apiRoutes(deps);
  app.use(api.routes());
  // sets 405/501 with an Allow header; the error envelope turns them into HTTP_ERROR bodies
  app.use(api.allowedMethods());
  return app;
}
