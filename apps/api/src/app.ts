import Koa from 'koa';
import { HttpError } from '@svc/core';
import type { ApiDeps } from './deps';
import type { AppState } from './http/state';
import { requestContext } from './middleware/request-context';
import { errorEnvelope } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { healthRoutes } from './routes/health';
import { apiRoutes } from './routes';

/** Builds the Koa app from its dependencies; tests drive `app.callback()` with supertest. */
export function createApp(deps: ApiDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: false });
  app.silent = true;
  app.use(requestContext(deps));
  app.use(errorEnvelope());
  app.use(jsonBody());
  const health = healthRoutes(deps);
  app.use(health.routes());
  const api = apiRoutes(deps);
  app.use(api.routes());
  app.use(
    api.allowedMethods({
      throw: true,
      methodNotAllowed: () => new HttpError(405, 'Método no permitido'),
      notImplemented: () => new HttpError(501, 'Método no implementado'),
    }),
  );
  return app;
}
