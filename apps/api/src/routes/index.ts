import type { ApiDeps } from '../deps';
import { createRouter, type AppRouter } from '../http/router';

/**
 * The public and management API under /api/v1. Each resource module exports a router factory;
 * add one line here per resource.
 */
export function apiRoutes(deps: ApiDeps): AppRouter {
  const api = createRouter('/api/v1');
  const resources: AppRouter[] = [
  ];
  for (const r of resources) api.use(r.routes(), r.allowedMethods({ throw: true }));
  return api;
}
