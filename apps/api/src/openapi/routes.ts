import { Type } from '@sinclair/typebox';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, routeCatalog, type RouteContext } from '../http/route';
import { API_PREFIX, buildOpenApiDocument, describeRoutes, mountedRoutes, type OpenApiDocument } from './document';

type StackRouter = Parameters<typeof mountedRoutes>[0];

/**
 * Built once per serving router, on the first request: by then every resource router has been
 * mounted, so the document lists exactly what the app serves (its router's layer stack), each
 * route described by the declaration `addRoute` recorded.
 */
const documents = new WeakMap<object, OpenApiDocument>();

export function openApiDocumentFor(router: StackRouter): OpenApiDocument {
  let doc = documents.get(router);
  if (!doc) {
    doc = buildOpenApiDocument(describeRoutes(mountedRoutes(router), routeCatalog));
    documents.set(router, doc);
  }
  return doc;
}

/** The /api/v1 router mounted in a Koa app (for the endpoint-table script and the tests). */
export function apiRouterOf(app: { middleware: unknown[] }): StackRouter {
  for (const m of app.middleware) {
    const router = (m as { router?: StackRouter & { opts?: { prefix?: string } } }).router;
    if (router && router.opts?.prefix === API_PREFIX) return router;
  }
  throw new Error(`No ${API_PREFIX} router is mounted in this app`);
}

export function openApiRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addRoute(
    router,
    rc,
    {
      method: 'get',
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'OpenAPI 3.1 document of this API',
      description: 'Generated from the route declarations and the schemas that validate requests. Served as is (not wrapped).',
      tags: ['meta'],
      auth: { kind: 'none' },
      response: Type.Object(
        { openapi: Type.Literal('3.1.0'), info: Type.Object({}), paths: Type.Object({}) },
        { additionalProperties: true, description: 'An OpenAPI 3.1 document' },
      ),
    },
    (ctx) => {
      const serving = (ctx as unknown as { router?: StackRouter }).router;
      if (!serving) throw new Error('openapi.json served outside a router');
      ctx.status = 200;
      ctx.body = openApiDocumentFor(serving);
    },
  );
  return router;
}
