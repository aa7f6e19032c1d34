import { Type } from '@sinclair/typebox';
import { PageQuery, ProcessResponse, Uuid } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { paged } from '../http/respond';

/** page 1..500, limit 1..100 (default 20), optional folder_id; nothing else. */
export const PublicProcessListQuery = Type.Object(
  { ...PageQuery, folder_id: Type.Optional(Uuid({ description: 'Only processes in this folder' })) },
  { additionalProperties: false },
);

/** Named, so the OpenAPI document has one `ProcessResponse` component. */
const ProcessResponseSchema = Type.Object(ProcessResponse.properties, { title: 'ProcessResponse' });

export function processRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addRoute(
    router,
    rc,
    {
      method: 'get',
      path: '/processes/list',
      operationId: 'listProcesses',
      summary: 'List active processes',
      description:
        'Active processes of the key\'s workspace, ordered by name (then id), paged. A `folder_id` of another ' +
        'workspace, or of no folder, simply matches nothing.',
      tags: ['processes'],
      auth: { kind: 'api_key', scope: 'processes:read' },
      query: PublicProcessListQuery,
      response: ProcessResponseSchema,
      paged: true,
    },
    async (ctx, input) => {
      const q = input.query();
      const page = await rc.deps.engine.catalog.processes.list(ctx.state.apiKey!.tenantId, {
        page: q.page,
        limit: q.limit,
        folder_id: q.folder_id,
        is_active: true,
      });
      paged(ctx, page.data, page.meta);
    },
  );
  return router;
}
